import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { scaffoldEnv } from "../src/scaffold/scaffold.js";

/**
 * Issue 38: `benchmax build` makes the image of a scaffolded env from its packed package, with a tag per target, on
 * a machine that reaches no image registry: the base is made from Debian's archive (deploy/docker/debian-base.sh:
 * debootstrap + this machine's Node 20), the @benchmax packages come from `npm run pack`'s tarballs, third-party ones
 * from the npm registry. The image is then checked from inside: a build FROM it starts its entrypoint with a token,
 * reads /health and a rollout's tools over HTTP, and SIGTERMs it (it drains and exits 0). podman builds with chroot
 * isolation (no daemon, no cgroups needed); running a container is not needed, so sandboxes that refuse crun's
 * cgroups or rlimits still build. Where no engine, no root or no debootstrap is here, the test skips, saying which.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const BASE = "localhost/benchmax-base:bookworm-node20";
const ok = (cmd: string, args: string[]) => spawnSync(cmd, args, { encoding: "utf8" }).status === 0;

function whyNot(): string | undefined {
  if (process.platform !== "linux") return "container image builds are tested on Linux only";
  if (!ok("podman", ["--version"]) && !ok("docker", ["--version"]))
    return "no container engine (apt-get install podman; docker needs a running dockerd)";
  if (!process.version.startsWith("v20."))
    return `the Debian base copies this machine's Node, which must be 20 (${process.version})`;
  if (process.getuid?.() !== 0) return "making the Debian base needs root (debootstrap, chroot)";
  if (!ok("debootstrap", ["--version"]) && !ok("sh", ["-c", "command -v debootstrap"]))
    return "debootstrap is not installed (apt-get install debootstrap)";
  return undefined;
}
const skip = whyNot();
if (skip) console.warn(`build-image.e2e: skipped: ${skip}`);
const engine = ok("podman", ["--version"]) ? "podman" : "docker";
// podman: chroot isolation runs RUN steps without an OCI runtime (no cgroups, no rlimits); docker: the daemon's default
const engineArgs = engine === "podman" ? ["--isolation=chroot"] : [];

function run(cmd: string, args: string[], cwd: string, timeout = 600_000) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout, env: { ...process.env, CI: "1" } });
  return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
}

const cli = (args: string[], cwd: string) =>
  run(
    process.execPath,
    [
      "--conditions=@benchmax/source",
      "--import",
      join(root, "packages/cli/node_modules/tsx/dist/esm/index.mjs"),
      join(root, "packages/cli/src/cli.ts"),
      ...args,
    ],
    cwd,
  );

/** A script run inside the image: start the entrypoint, wait for its "serving" line, read the API, SIGTERM it. */
const CHECK = String.raw`
const { spawn } = require("node:child_process");
const token = "image-check-token";
const port = 18765;
const child = spawn("/usr/local/bin/benchmax-entrypoint", [], {
  env: { ...process.env, BENCHMAX_TOKEN: token, BENCHMAX_PORT: String(port), BENCHMAX_DRAIN_GRACE: "5" },
  stdio: ["ignore", "pipe", "inherit"],
});
let out = "";
const fail = (m) => { console.error("image check: " + m + "\n" + out); child.kill("SIGKILL"); process.exit(1); };
const deadline = setTimeout(() => fail("no serving line within 60 s"), 60000);
child.on("exit", (code) => { if (!out.includes("serving")) fail("the entrypoint exited with " + code); });
child.stdout.on("data", async (d) => {
  out += d;
  if (!/serving .* at http/.test(out) || child.checked) return;
  child.checked = true;
  clearTimeout(deadline);
  const base = "http://127.0.0.1:" + port;
  const auth = { authorization: "Bearer " + token };
  const health = await fetch(base + "/health");
  const denied = await fetch(base + "/v1/rollouts", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  const info = await (await fetch(base + "/v1/tools", { headers: auth })).text();
  child.on("exit", (code, signal) => {
    console.log(JSON.stringify({ health: health.status, denied: denied.status, info, exit: code, signal }));
    process.exit(0);
  });
  child.kill("SIGTERM");
});
`;

describe("benchmax build: a scaffolded env's image, built here", { timeout: 900_000 }, () => {
  const tmp = mkdtempSync(join(tmpdir(), "bmx-image-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it.skipIf(skip)(
    `builds both targets with distinct tags, and the image serves the env${skip ? ` (skipped: ${skip})` : ""}`,
    () => {
      const started = Date.now();
      // the base, from Debian's archive (kept between runs: it does not depend on this checkout)
      if (!ok(engine, ["image", "exists", BASE]) && !ok(engine, ["image", "inspect", BASE])) {
        const base = run("sh", [join(root, "deploy/docker/debian-base.sh"), engine, BASE], tmp);
        expect(base.code, base.out).toBe(0);
      }
      const baseS = (Date.now() - started) / 1000;

      // this checkout's @benchmax packages (not on the registry), as npm run pack makes them
      const tarballs = join(tmp, "tarballs");
      const pack = run(process.execPath, [join(root, "scripts/pack.mjs"), "--out", tarballs], root);
      expect(pack.code, pack.out).toBe(0);

      // a scaffolded env outside the repo, built (dist/) with the workspace's tools
      const dir = join(tmp, "ship-demo");
      scaffoldEnv({ name: "ship-demo", dir, coreVersion: "^0.1.0" });
      const nm = join(dir, "node_modules");
      mkdirSync(join(nm, "@benchmax"), { recursive: true });
      mkdirSync(join(nm, "@types"), { recursive: true });
      symlinkSync(join(root, "packages/core"), join(nm, "@benchmax/core"));
      symlinkSync(realpathSync(join(root, "packages/core/node_modules/zod")), join(nm, "zod"));
      for (const p of ["typescript", "tsup", "@types/node"])
        symlinkSync(realpathSync(join(root, "node_modules", p)), join(nm, p));
      const tsup = run(process.execPath, [join(nm, "tsup/dist/cli-default.js")], dir);
      expect(tsup.code, tsup.out).toBe(0);

      const dry = cli(["build", ".", "--dry-run", "--engine", engine, "--base", BASE, "--tarballs", tarballs], dir);
      expect(dry.code, dry.out).toBe(0);
      expect(dry.out).toMatch(/benchmax\/env-server-ship-demo:0\.1\.0-server/);
      expect(dry.out).toMatch(/npm pack --pack-destination/);

      const buildStarted = Date.now();
      const build = cli(
        [
          "build",
          ".",
          "--engine",
          engine,
          ...engineArgs.map((a) => `--engine-arg=${a}`),
          "--base",
          BASE,
          "--tarballs",
          tarballs,
        ],
        dir,
      );
      expect(build.code, build.out).toBe(0);
      const buildS = (Date.now() - buildStarted) / 1000;
      const server = "benchmax/env-server-ship-demo:0.1.0-server";
      const sky = "benchmax/env-server-ship-demo:0.1.0-skypilot";
      expect(build.out).toContain(`${server}, ${sky}`);
      // two images, not one tag overwritten: the stages differ in their user
      const user = (tag: string) =>
        run(engine, ["image", "inspect", "--format", "{{.Config.User}}", tag], dir).out.trim();
      expect(user(server)).toBe("node");
      expect(user(sky)).toBe("root");

      // from inside the image: the entrypoint serves the env with the token, refuses without it, drains on SIGTERM
      const check = join(tmp, "check");
      mkdirSync(check);
      writeFileSync(join(check, "check.cjs"), CHECK);
      writeFileSync(
        join(check, "Containerfile"),
        `FROM ${server}\nCOPY check.cjs /tmp/check.cjs\nRUN node /tmp/check.cjs > /tmp/check.json && cat /tmp/check.json\n`,
      );
      const probe = run(
        engine,
        ["build", ...engineArgs, "--no-cache", "-t", "bmx-image-check", "-f", join(check, "Containerfile"), check],
        check,
      );
      expect(probe.code, probe.out).toBe(0);
      const line = probe.out.split("\n").find((l) => l.startsWith('{"health"'));
      expect(line, probe.out).toBeDefined();
      const got = JSON.parse(line!) as { health: number; denied: number; info: string; exit: number };
      expect(got.health).toBe(200);
      expect(got.denied).toBe(401);
      expect(got.info).toContain("lookup");
      expect(got.exit).toBe(0);
      run(engine, ["rmi", "-f", "bmx-image-check", server, sky], check);
      console.log(`build-image.e2e: base ${baseS.toFixed(0)} s (0 when cached), image build ${buildS.toFixed(1)} s`);
      expect(readFileSync(join(dir, "DEPLOY.md"), "utf8")).toMatch(/benchmax build \./);
    },
  );
});
