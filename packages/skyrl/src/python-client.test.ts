import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EnvServer, serveEnv } from "@benchmax/server";
import { calcEnv } from "@benchmax/server/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runProcess as run } from "./run-process.test-util.js";
import { shimDir } from "./shim.js";

// The Python client as a user gets it: the `benchmax-client` wheel built from python/pyproject.toml with
// `pip wheel --no-build-isolation` (setuptools), installed offline (`pip install --no-index`) into a fresh venv, and
// its tests run against the installed copy. pip >= 22.3 installs into another interpreter (`pip --python`), so the
// venv is made without its own pip (fast). The interpreter: BENCHMAX_PYTHON, Debian's /usr/bin/python3 (where
// python3-setuptools and python3-wheel put their modules), or python3 — the first that has setuptools and wheel.
const version = JSON.parse(readFileSync(join(shimDir(), "..", "package.json"), "utf8")).version as string;

/** Why `py` cannot build and install the wheel, or "" when it can. */
function unfit(py: string): string {
  const r = spawnSync(py, ["-c", "import setuptools, wheel, venv, sys; print(sys.executable)"], { encoding: "utf8" });
  if (r.status !== 0) return `${py}: ${(r.stderr || String(r.error)).trim().split("\n").pop()}`;
  const pip = spawnSync(py, ["-m", "pip", "--python", r.stdout.trim(), "--version"], { encoding: "utf8" });
  return pip.status === 0 ? "" : `${py}: pip --python: ${pip.stderr.trim().split("\n").pop()}`;
}
const candidates = [process.env.BENCHMAX_PYTHON, "/usr/bin/python3", "python3"].filter((p): p is string => !!p);
const reasons = candidates.map(unfit);
const python = candidates[reasons.indexOf("")] ?? "";
const canVenv = python !== "";
if (!canVenv)
  console.warn(
    `skipping the wheel install test: a python3 with setuptools, wheel, venv and pip >= 22.3 is needed (${reasons.join("; ")})`,
  );

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

  it("builds with pip wheel (setuptools), installs with pip --no-index, and passes the client, TRL and verifiers tests", async () => {
    // a copy of the project (setuptools writes build/ and *.egg-info beside the sources): python/ and the
    // package.json its version is read from
    const src = join(dir, "src");
    cpSync(join(shimDir(), "..", "package.json"), join(src, "package.json"));
    cpSync(shimDir(), join(src, "python"), {
      recursive: true,
      filter: (p) => !/(^|[\\/])(__pycache__|build|dist|[^\\/]+\.egg-info)$/.test(p.slice(shimDir().length)),
    });
    const wheelDir = join(dir, "wheels");
    const build = await run(python, [
      "-m",
      "pip",
      "wheel",
      "--no-build-isolation",
      "--no-deps",
      "--no-index",
      "-w",
      wheelDir,
      join(src, "python"),
    ]);
    expect(build.code, build.out).toBe(0);
    const wheels = readdirSync(wheelDir).sort();
    expect(wheels).toEqual([`benchmax_client-${version}-py3-none-any.whl`]);
    const venv = await run(python, ["-m", "venv", "--without-pip", join(dir, "venv")]);
    expect(venv.code, venv.out).toBe(0);
    const py = join(dir, "venv", "bin", "python");
    const pip = (...args: string[]) => run(python, ["-m", "pip", "--python", py, ...args]);
    const installed = await pip("install", "--no-index", "--quiet", ...wheels.map((w) => join(wheelDir, w)));
    expect(installed.code, installed.out).toBe(0);
    const shown = await pip("show", "benchmax-client");
    expect(shown.out).toContain(`Version: ${version}`);
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
