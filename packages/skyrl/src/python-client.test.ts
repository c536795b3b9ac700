import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EnvServer, serveEnv } from "@benchmax/server";
import { calcEnv } from "@benchmax/server/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { shimDir } from "./shim.js";

// The Python client as a user gets it: the wheels built here with the standard library (python/build_wheel.py),
// installed offline (`pip install --no-index`) into a fresh venv, and its tests run against the installed copy.
// pip >= 22.3 installs into another interpreter (`pip --python`), so the venv is made without its own pip (fast)
const exe = spawnSync("python3", ["-c", "import sys, venv; print(sys.executable)"], {
  encoding: "utf8",
}).stdout?.trim();
const venvProbe = spawnSync("python3", ["-m", "pip", "--python", exe || "python3", "--version"], { encoding: "utf8" });
const canVenv = Boolean(exe) && venvProbe.status === 0;
if (!canVenv)
  console.warn(
    `skipping the wheel install test: python3 with venv and pip >= 22.3 is needed (${venvProbe.stderr.trim()})`,
  );

function run(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) {
  return new Promise<{ code: number; out: string }>((resolve) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env } });
    let out = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (out += d));
    p.on("close", (code) => resolve({ code: code ?? 1, out }));
  });
}

describe.skipIf(!canVenv)("benchmax-client wheel, installed offline into a venv", () => {
  const dir = mkdtempSync(join(tmpdir(), "bmx-wheel-"));
  let server: EnvServer;
  beforeAll(async () => {
    server = await serveEnv(calcEnv(), { token: "wheel-token" });
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("builds with the standard library, installs with pip --no-index, and passes the client, TRL and verifiers tests", async () => {
    const build = await run("python3", [join(shimDir(), "build_wheel.py"), "--out", join(dir, "wheels")]);
    expect(build.code, build.out).toBe(0);
    const wheels = readdirSync(join(dir, "wheels")).sort();
    expect(wheels).toEqual(["benchmax_client-0.1.0-py3-none-any.whl", "benchmax_skyrl-0.2.0-py3-none-any.whl"]);
    const venv = await run("python3", ["-m", "venv", "--without-pip", join(dir, "venv")]);
    expect(venv.code, venv.out).toBe(0);
    const py = join(dir, "venv", "bin", "python");
    const pip = (...args: string[]) => run("python3", ["-m", "pip", "--python", py, ...args]);
    const installed = await pip("install", "--no-index", "--quiet", ...wheels.map((w) => join(dir, "wheels", w)));
    expect(installed.code, installed.out).toBe(0);
    const shown = await pip("show", "benchmax-skyrl");
    expect(shown.out).toContain("Requires: benchmax-client");
    // the tests folder only on the path: benchmax_client and benchmax_skyrl come from the venv
    const tests = join(shimDir(), "tests");
    const r = await run(py, ["-m", "unittest", "-v", "test_client", "test_trl", "test_verifiers"], {
      cwd: dir,
      env: {
        PYTHONPATH: tests,
        PYTHONDONTWRITEBYTECODE: "1",
        BENCHMAX_TEST_ENDPOINT: server.url,
        BENCHMAX_TEST_TOKEN: "wheel-token",
        BENCHMAX_EXPECT_INSTALLED: "1",
      },
    });
    if (r.code !== 0 || process.env.BENCHMAX_SHOW_PY) console.error(r.out);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/Ran \d+ tests/);
    expect(r.out).not.toMatch(/skipped/);
  }, 180_000);
});
