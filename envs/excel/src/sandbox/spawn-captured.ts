import { constants } from "node:os";
import { spawnJailProcess } from "./spawner.js";

/** What a sandboxed program did: its exit status, whether it was killed for time, and its (capped) output. */
export interface CapturedRun {
  /** Exit status (128 + n when it died of signal n), or null when it was killed for running past its time. */
  status: number | null;
  timedOut: boolean;
  stdout: string;
  stderr: string;
}

/**
 * Spawn `argv` with only `env`, capture up to `cap` characters of stdout and stderr, and SIGKILL it after
 * `timeoutMs`. Rejects only when the program cannot be started. It is forked by the jail helper (spawner.ts), not by
 * this process: a fork of a large env process stalls its event loop.
 */
export function spawnCaptured(
  argv: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  cap = 1_000_000,
): Promise<CapturedRun> {
  return new Promise<CapturedRun>((resolvePromise, reject) => {
    const child = spawnJailProcess(argv, env, { stdio: ["ignore", "pipe", "pipe"], holdUntilExit: true });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => {
      if (stdout.length < cap) stdout += d.toString("utf8");
    });
    child.stderr.on("data", (d: Buffer) => {
      if (stderr.length < cap) stderr += d.toString("utf8");
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    child.on("error", (e: Error) => {
      clearTimeout(timer);
      reject(e);
    });
    child.on("close", (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      const status = code ?? (signal ? 128 + (constants.signals[signal] ?? 9) : null);
      resolvePromise({ status: timedOut ? null : status, timedOut, stdout, stderr });
    });
  });
}
