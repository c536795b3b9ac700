import { benchmaxVitest } from "../../shared/vitest.preset.ts";

export default benchmaxVitest({
  // `npm run test:full` only (CONTRIBUTING.md, "Fast and full tests"): suites that start `benchmax serve`, `watch` or
  // recording servers as processes, signal CLI processes, drive Chromium, or run a scaffold's whole toolchain.
  // One-shot CLI commands against in-process fakes stay in the fast set.
  slow: [
    "src/commands/play.test.ts", // Chromium
    "src/commands/watch.test.ts", // Chromium
    "src/commands/watch-fleet.test.ts", // recording servers as processes, SIGKILLed and restarted
    "src/commands/serve.test.ts", // `benchmax serve` as a process
    "src/commands/rescore.test.ts", // excel evals and a `serve --record` process
    "src/scaffold/scaffold.test.ts", // tsc, vitest, biome and tsup over a scaffolded package
    "test/build-image.e2e.test.ts", // npm pack, a Debian base (debootstrap), container image builds (podman/docker)
    "test/cli.e2e.test.ts", // the CLI as processes, `serve` among them
    "test/newcomer.e2e.test.ts", // a newcomer's session: CLI processes under a pty (`script`), a served env
    "test/openenv-clients.e2e.test.ts", // `benchmax serve` as a process
    "test/run-safety.e2e.test.ts", // SIGTERM to a running eval process
    "test/serve-export.e2e.test.ts", // `benchmax serve` as a process
    "test/serve-mcp.e2e.test.ts", // `benchmax serve --mcp` as a process
  ],
});
