import { spawn } from "node:child_process";
import { delimiter, join } from "node:path";
import { shimDir } from "./shim.js";

/** Run a command to its end: its exit code, and its stdout and stderr together. `env` adds to this process's. */
export function runProcess(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env } });
    let out = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (out += d));
    p.on("close", (code) => resolve({ code: code ?? 1, out }));
  });
}

/** `python3 -m unittest …args` with the shim and its tests on PYTHONPATH (no .pyc written), plus `env`. */
export function runShimUnittest(args: string[], env: NodeJS.ProcessEnv = {}, cwd = shimDir()) {
  const tests = join(shimDir(), "tests");
  return runProcess("python3", ["-m", "unittest", ...args], {
    cwd,
    env: { PYTHONPATH: `${shimDir()}${delimiter}${tests}`, PYTHONDONTWRITEBYTECODE: "1", ...env },
  });
}
