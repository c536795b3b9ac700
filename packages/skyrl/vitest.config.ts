import { benchmaxVitest } from "../../shared/vitest.preset.ts";

export default benchmaxVitest({
  // `npm run test:full` only (CONTRIBUTING.md, "Fast and full tests"): Python trainer-side loops against env
  // servers started as processes, and the launcher starting real servers.
  slow: [
    "src/launch-lifecycle.test.ts", // the launcher starts `benchmax serve` and a fake trainer as processes
    "src/migration.test.ts", // Python client: server processes SIGKILLed, stopped and restarted mid-rollout
    "src/python-client.test.ts", // builds the wheel, installs it into a fresh venv, runs its tests
    "src/shim.test.ts", // the Python shim's unittest suite against a live server process
    "src/trainer-step.test.ts", // the trainer step from Python into a `serve --record` process
  ],
});
