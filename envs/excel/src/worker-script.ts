import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";

/**
 * The built worker script both excel worker pools run (compare-pool: scoring and file checks; book-pool: structured
 * tools), with its thread count: `BENCHMAX_EXCEL_WORKERS` (0 turns the pools off), else the cores clamped to
 * `[min, max]`. Undefined when the pools are off or the script is not built (running from source): work runs inline.
 */
export function workerScript(min: number, max: number): { script: URL; threads: number } | undefined {
  const script = new URL("./compare-worker.js", import.meta.url);
  const env = process.env.BENCHMAX_EXCEL_WORKERS;
  if (env === "0" || script.protocol !== "file:" || !existsSync(fileURLToPath(script))) return undefined;
  return { script, threads: Number(env) || Math.max(min, Math.min(max, availableParallelism())) };
}

/**
 * The worker is a built file: it resolves workspace packages to their builds, never to TypeScript sources (a test
 * runner's `--conditions @benchmax/source` is dropped; every other flag is kept).
 */
/** Flags a worker accepts and needs to load code as the parent does (loaders, conditions); with their values. */
const WORKER_FLAGS = new Set([
  "--import",
  "--require",
  "-r",
  "--loader",
  "--experimental-loader",
  "--conditions",
  "-C",
]);
const WORKER_SWITCHES = /^--(enable-source-maps|no-warnings|experimental-[a-z-]+|no-experimental-[a-z-]+)$/;

/**
 * The parent's execArgv for a book worker: only the loader and condition flags (a worker refuses per-process flags
 * such as `--expose-gc` when execArgv is given), and without `@benchmax/source` (the worker script is built JS).
 */
export function builtExecArgv(a: readonly string[] = process.execArgv): string[] {
  const out: string[] = [];
  for (let i = 0; i < a.length; i++) {
    const arg = a[i]!;
    const eq = arg.indexOf("=");
    const flag = eq > 0 ? arg.slice(0, eq) : arg;
    const value = eq > 0 ? arg.slice(eq + 1) : a[i + 1];
    if (WORKER_FLAGS.has(flag)) {
      if (eq < 0) i++;
      if ((flag === "--conditions" || flag === "-C") && value === "@benchmax/source") continue;
      if (value !== undefined) out.push(`${flag}=${value}`);
    } else if (WORKER_SWITCHES.test(arg)) out.push(arg);
  }
  return out;
}
