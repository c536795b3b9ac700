import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { launchScriptPath } from "./launch.js";

// The launcher really starts `benchmax serve` (this repo's CLI) and a fake trainer: `uv` on PATH is a script that
// asks the server for /metadata with the launch's token, then exits 0, exits 3 (a crash) or waits for a signal.
const root = join(launchScriptPath(), "..", "..", "..", "..");
const cliBin = join(root, "packages", "cli", "bin", "benchmax.js");
const hasCli = existsSync(join(root, "packages", "cli", "dist", "cli.js"));
if (!hasCli) console.warn("skipping the launcher lifecycle tests: packages/cli is not built (pnpm build)");

const work = mkdtempSync(join(tmpdir(), "bmx-lifecycle-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));
const binDir = join(work, "bin");
mkdirSync(binDir);
writeFileSync(
  join(binDir, "uv"),
  `#!/usr/bin/env bash
echo $$ > "$FAKE_DIR/trainer.pid"
node -e 'fetch(process.env.BENCHMAX_ENDPOINTS.split(",")[0] + "/metadata", { headers: { authorization: "Bearer " + process.env.BENCHMAX_TOKEN } })
  .then(async (r) => require("fs").writeFileSync(process.env.FAKE_DIR + "/meta.txt", r.status + " " + (await r.json()).name))'
case "$FAKE_MODE" in
  crash) exit 3 ;;
  hang) touch "$FAKE_DIR/ready"; sleep 600 & wait ;;
  hold)
    # a rollout left live on the server, as a trainer stopped mid-step leaves them
    node -e 'fetch(process.env.BENCHMAX_ENDPOINTS.split(",")[0] + "/v1/rollouts", { method: "POST", headers: { authorization: "Bearer " + process.env.BENCHMAX_TOKEN, "content-type": "application/json" }, body: "{}" })
      .then((r) => require("fs").writeFileSync(process.env.FAKE_DIR + "/held.txt", String(r.status)))'
    touch "$FAKE_DIR/ready"; sleep 600 & wait ;;
  *) exit 0 ;;
esac
`,
);
chmodSync(join(binDir, "uv"), 0o755);
// a CLI wrapper that keeps node as its child (as npx does), so only a process-group kill stops the server
const wrapper = join(binDir, "benchmax-wrapped");
writeFileSync(wrapper, `#!/usr/bin/env bash\nnode ${JSON.stringify(cliBin)} "$@"\necho wrapper-done\n`);
chmodSync(wrapper, 0o755);

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

interface Launch {
  proc: ChildProcess;
  dir: string;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; err: string }>;
}

function launch(script: string, env: Record<string, string>): Launch {
  const dir = mkdtempSync(join(work, "run-"));
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("BENCHMAX_")));
  const proc = spawn("bash", [script], {
    cwd: dir,
    env: {
      ...clean,
      PATH: `${binDir}:${process.env.PATH}`,
      FAKE_DIR: dir,
      SKIP_EXPORT: "1",
      TRAIN_ROWS: "5",
      DATA_DIR: join(dir, "data"),
      SKYRL_DIR: dir,
      BENCHMAX_BIN: `node ${cliBin}`,
      BENCHMAX_STOP_GRACE_S: "20",
      ...env,
    },
  });
  let err = "";
  proc.stderr!.on("data", (d) => (err += d));
  proc.stdout!.on("data", () => {});
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; err: string }>((resolve) =>
    proc.on("close", (code, signal) => resolve({ code, signal, err })),
  );
  return { proc, dir, done };
}

/** Process groups the launcher reported starting (one per server). */
const groupsOf = (err: string) => [...err.matchAll(/process group (\d+)\)/g)].map((m) => Number(m[1]));
/** Pids still in process group `pgid` (none once it is stopped). */
function membersOf(pgid: number): number[] {
  const r = spawnSync("ps", ["-eo", "pid=,pgid="], { encoding: "utf8" });
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter(([, g]) => g === pgid)
    .map(([p]) => p!);
}
async function until(what: string, ok: () => boolean, tries = 1200): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (ok()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`gave up waiting for ${what}`);
}
async function portRefused(port: number): Promise<boolean> {
  const { connect } = await import("node:net");
  return new Promise((resolve) => {
    const s = connect(port, "127.0.0.1");
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("error", () => resolve(true));
  });
}

async function expectStopped(err: string, ports: number[]) {
  const groups = groupsOf(err);
  expect(groups.length).toBe(ports.length);
  for (const g of groups) expect(membersOf(g)).toEqual([]);
  for (const p of ports) expect(await portRefused(p)).toBe(true);
  expect(err).toContain("stopped the env servers this launch started");
}

const single = launchScriptPath();
const mixed = join(root, "examples", "skyrl-mixed", "run.sh");

// each launch starts real `benchmax serve` processes (envs run from source): generous limits for a loaded machine
const SLOW = { timeout: 180_000 };

describe.skipIf(!hasCli)("skyrl-launch.sh stops the servers it started on every exit path", SLOW, () => {
  it("normal exit: the trainer reached this launch's server, the exit status is the trainer's", async () => {
    const port = await freePort();
    const l = launch(single, { BENCHMAX_ENV: "math", BENCHMAX_PORT: String(port), FAKE_MODE: "ok" });
    const r = await l.done;
    expect(r.code).toBe(0);
    expect(readFileSync(join(l.dir, "meta.txt"), "utf8")).toBe("200 math");
    await expectStopped(r.err, [port]);
  });

  it("trainer crash: exits with its status; a server under a wrapper (as npx runs it) is stopped with its group", async () => {
    const port = await freePort();
    const l = launch(single, {
      BENCHMAX_ENV: "math",
      BENCHMAX_PORT: String(port),
      FAKE_MODE: "crash",
      BENCHMAX_BIN: wrapper,
    });
    const r = await l.done;
    expect(r.code).toBe(3);
    expect(r.err).toContain("the trainer exited with status 3");
    await expectStopped(r.err, [port]);
  });

  for (const sig of ["SIGTERM", "SIGINT"] as const) {
    it(`${sig} while the trainer runs: stops the trainer's group and the server`, async () => {
      const port = await freePort();
      const l = launch(single, { BENCHMAX_ENV: "math", BENCHMAX_PORT: String(port), FAKE_MODE: "hang" });
      await until("the fake trainer", () => existsSync(join(l.dir, "ready")));
      const trainer = Number(readFileSync(join(l.dir, "trainer.pid"), "utf8"));
      l.proc.kill(sig);
      const r = await l.done;
      expect(r.code).toBe(sig === "SIGTERM" ? 143 : 130);
      expect(r.err).toContain(`${sig}: stopping the trainer and the env servers`);
      expect(membersOf(trainer)).toEqual([]);
      await expectStopped(r.err, [port]);
    });
  }

  it("SIGTERM with a rollout live on the server: the server closes at once (no drain for a stopped trainer)", async () => {
    const port = await freePort();
    // the server's drain grace (30 s) is past the launcher's stop grace (15 s): a server that drained would be killed
    const l = launch(single, { BENCHMAX_ENV: "math", BENCHMAX_PORT: String(port), FAKE_MODE: "hold" });
    await until("the fake trainer", () => existsSync(join(l.dir, "ready")));
    expect(readFileSync(join(l.dir, "held.txt"), "utf8")).toBe("201");
    l.proc.kill("SIGTERM");
    const r = await l.done;
    expect(r.code).toBe(143);
    expect(r.err).not.toMatch(/did not stop/);
    expect(r.err).not.toMatch(/draining/);
    await expectStopped(r.err, [port]);
  });

  it("examples/skyrl-mixed: SIGTERM stops both envs' servers", async () => {
    const port = await freePort();
    // the mixed run serves math on BENCHMAX_PORT and excel on the next port
    if (!(await portRefused(port + 1))) return void console.warn(`skipped: port ${port + 1} is taken`);
    const l = launch(mixed, { BENCHMAX_PORT: String(port), FAKE_MODE: "hang", TRAIN_ROWS: "10" });
    await until("the fake trainer", () => existsSync(join(l.dir, "ready")));
    l.proc.kill("SIGTERM");
    const r = await l.done;
    expect(r.code).toBe(143);
    await expectStopped(r.err, [port, port + 1]);
  });
});

describe.skipIf(!hasCli)("skyrl-launch.sh talks only to the server it started", SLOW, () => {
  let blocker: Server | undefined;
  afterAll(() => blocker?.close());

  it("refuses a port already in use before starting anything", async () => {
    blocker = createServer();
    await new Promise<void>((r) => blocker!.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as { port: number }).port;
    const l = launch(single, { BENCHMAX_ENV: "math", BENCHMAX_PORT: String(port), FAKE_MODE: "ok" });
    const r = await l.done;
    expect(r.code).toBe(2);
    expect(r.err).toContain(`port ${port} on 127.0.0.1 is already in use`);
    expect(existsSync(join(l.dir, "trainer.pid"))).toBe(false);
    expect(groupsOf(r.err)).toEqual([]);
  });

  it("fails at once when a server it started exits before it is healthy (no wait for the health timeout)", async () => {
    const port = await freePort();
    const l = launch(single, {
      BENCHMAX_ENV: "math",
      BENCHMAX_PORT: String(port),
      FAKE_MODE: "ok",
      BENCHMAX_BIN: "false",
    });
    const r = await l.done;
    expect(r.code).toBe(2);
    expect(r.err).toContain(`the env server for http://127.0.0.1:${port} exited before it became healthy`);
    expect(existsSync(join(l.dir, "trainer.pid"))).toBe(false);
  });

  it("refuses a server whose instance is not this launch's, and still stops what it started", async () => {
    const port = await freePort();
    // a server that ignores the launch's BENCHMAX_INSTANCE_ID answers like a stranger on the port would
    const l = launch(single, {
      BENCHMAX_ENV: "math",
      BENCHMAX_PORT: String(port),
      FAKE_MODE: "ok",
      BENCHMAX_BIN: `env -u BENCHMAX_INSTANCE_ID node ${cliBin}`,
    });
    const r = await l.done;
    expect(r.code).toBe(2);
    expect(r.err).toMatch(
      /answers as instance '[0-9a-f]{16}', not the server this launch started \(bmx[0-9a-f]+-0\.\*\)/,
    );
    expect(existsSync(join(l.dir, "trainer.pid"))).toBe(false);
    expect(await portRefused(port)).toBe(true);
  });
});
