import {
  type Env,
  normalizeTaskIds,
  type RescoreResult,
  RunDir,
  rescoreRefusal,
  rescoreRunDir,
  type Task,
  UsageError,
} from "@benchmax/core";
import type { Command } from "commander";
import { createEnv } from "../env-loader.js";
import { parseIntFlag } from "../policy-options.js";

export interface RescoreFlags {
  out: string;
  env?: string;
  force?: boolean;
  /** Rollouts scored at once (default 4). */
  concurrency?: number;
  /** false: score every rollout, even one identical to a rollout already scored (`--no-dedup`). */
  dedup?: boolean;
}

export function register(program: Command): void {
  program
    .command("rescore <run-dir>")
    .description(
      "re-score a run's stored rollouts with the current reward code, without the model or the tools (an env whose reward reads the final state restores it from the run's artifacts); then compare RUN NEW",
    )
    .requiredOption("--out <dir>", "the new run dir")
    .option(
      "--env <env|path>",
      "the env to score with (default: the env run.json names, loaded only as an installed package name, never a path)",
    )
    .option("--concurrency <n>", "rollouts scored at once", (v) => parseIntFlag(v, "--concurrency", 1), 4)
    .option("--no-dedup", "score every rollout, even one with the same task, conversation and final state as another")
    .option("--force", "overwrite a run already in --out")
    .action(async (runDir: string, flags: RescoreFlags) => {
      const r = await rescoreRun(runDir, flags);
      process.stdout.write(
        `benchmax: rescored ${r.rescored} rollouts of ${r.env} (${r.changed} changed, ${r.kept} errors kept as they were) into ${flags.out}; see: benchmax compare ${runDir} ${flags.out}\n`,
      );
    });
}

/** A catalog name (`math`, `my-env`), loaded as the installed package `@benchmax/env-<name>`. */
const CATALOG_NAME = /^[a-z0-9][a-z0-9._-]*$/i;
/** An installed env package named in full. */
const ENV_PACKAGE = /^@benchmax\/env-[a-z0-9][a-z0-9._-]*$/i;

/**
 * The env a run dir's run.json names, as a spec the loader may import: only a catalog name or an installed
 * `@benchmax/env-*` package. Anything else (a path, another scope's package, a URL) is refused before anything is
 * imported: a run dir is data someone may hand you, and importing a module it names would run its code.
 */
export function envNamedByRun(name: unknown, runDir: string): string {
  if (typeof name === "string" && !name.includes("..") && (CATALOG_NAME.test(name) || ENV_PACKAGE.test(name)))
    return name;
  throw new UsageError(
    `${runDir}/run.json names the env ${JSON.stringify(name)}, which is not an env package name: rescore loads the env a run dir names only by package name (an installed @benchmax/env-* package or its short name), never a path or module read from the run dir. If you trust that env, pass it yourself: --env <name|path>`,
  );
}

/**
 * `benchmax rescore`: the run's env (by name, or `--env`) with the options it ran with, its tasks found again from
 * its identity, and core's `rescoreRunDir`.
 */
export async function rescoreRun(runDir: string, flags: RescoreFlags): Promise<RescoreResult> {
  const identity = RunDir.open(runDir).readIdentity();
  if (!identity) throw new UsageError(`${runDir} is not a benchmax run dir (run.json and results.jsonl expected)`);
  const config = (identity.config ?? {}) as Record<string, unknown>;
  const envOptions = (config.envOptions ?? {}) as Record<string, unknown>;
  // a run dir is data: the env it names is loaded only as a package name; a path comes only from the command line
  const env: Env = await createEnv(flags.env ?? envNamedByRun(identity.env, runDir), envOptions);
  try {
    const refusal = rescoreRefusal(env, runDir);
    if (refusal) throw new UsageError(refusal);
    const dataset = identity.dataset === "fixtures" ? undefined : identity.dataset;
    const own = env.capabilities?.tasks;
    if (!own?.loadTasks) throw new UsageError(`env ${env.name} has no dataset loader: its tasks can't be found again`);
    let tasks: Task[] = await own.loadTasks(dataset, { split: (config.split as string | null) ?? undefined });
    if (typeof config.limit === "number") tasks = tasks.slice(0, config.limit);
    tasks = normalizeTaskIds(tasks, dataset);
    return await rescoreRunDir(env, runDir, tasks, flags);
  } finally {
    await env.close();
  }
}
