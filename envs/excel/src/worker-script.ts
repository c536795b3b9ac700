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
