import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  combineRewards,
  type Env,
  errorMessage,
  InfraError,
  type RolloutResult,
  readResults,
  summarize,
  type Task,
  UsageError,
} from "@benchmax/core";
import type { Command } from "commander";
import { createEnv } from "../env-loader.js";
import { writeSummary } from "../run-dir.js";
import { normalizeTaskIds, readRunIdentity } from "../run-identity.js";

export interface RescoreFlags {
  out: string;
  env?: string;
  force?: boolean;
}

export function register(program: Command): void {
  program
    .command("rescore <run-dir>")
    .description(
      "re-score a run's stored rollouts with the current reward code, without the model; then compare RUN NEW",
    )
    .requiredOption("--out <dir>", "the new run dir")
    .option("--env <env|path>", "the env to score with (default: the run's env, by name)")
    .option("--force", "overwrite a run already in --out")
    .action(async (runDir: string, flags: RescoreFlags) => {
      const r = await rescoreRun(runDir, flags);
      process.stdout.write(
        `benchmax: rescored ${r.rescored} rollouts of ${r.env} (${r.changed} changed, ${r.kept} errors kept as they were) into ${flags.out}; see: benchmax compare ${runDir} ${flags.out}\n`,
      );
    });
}

export interface RescoreResult {
  env: string;
  rescored: number;
  changed: number;
  kept: number;
}

/**
 * Re-score every finished rollout of an eval run dir with the env's current reward: a fresh state per rollout,
 * `computeReward` on the stored conversation. Only an env whose reward reads the conversation alone
 * (`rewardReads: "conversation"`) can be re-scored this way; any other is refused with the reason (its final-state
 * artifacts are not in the run). env_error and infra_error rollouts are kept as they were (never scored).
 */
export async function rescoreRun(runDir: string, flags: RescoreFlags): Promise<RescoreResult> {
  const identity = readRunIdentity(runDir);
  const resultsPath = join(runDir, "results.jsonl");
  if (!identity || !existsSync(resultsPath)) {
    throw new UsageError(`${runDir} is not a benchmax eval run dir (run.json and results.jsonl expected)`);
  }
  if (existsSync(flags.out) && readdirSync(flags.out).length > 0 && !flags.force) {
    throw new UsageError(`${flags.out} is not empty: pass --force to overwrite it, or another --out`);
  }
  const config = (identity.config ?? {}) as Record<string, unknown>;
  const envOptions = (config.envOptions ?? {}) as Record<string, unknown>;
  const env: Env = await createEnv(flags.env ?? identity.env, envOptions);
  try {
    if (env.rewardReads !== "conversation") {
      throw new UsageError(
        `env ${env.name}: its reward reads ${env.rewardReads === "state" ? "the rollout's final state (files, a database)" : "what it does not declare (no rewardReads)"}, and ${runDir} holds no final-state artifacts to restore it from; re-run the rollouts (benchmax eval) to score them with the current reward`,
      );
    }
    const dataset = identity.dataset === "fixtures" ? undefined : identity.dataset;
    if (!env.loadTasks) throw new UsageError(`env ${env.name} has no dataset loader: its tasks can't be found again`);
    let tasks: Task[] = await env.loadTasks(dataset, { split: (config.split as string | null) ?? undefined });
    if (typeof config.limit === "number") tasks = tasks.slice(0, config.limit);
    tasks = normalizeTaskIds(tasks, dataset);
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const rows = readResults(resultsPath);
    const out: RolloutResult[] = [];
    let rescored = 0;
    let changed = 0;
    let kept = 0;
    for (const row of rows) {
      if (row.outcome === "env_error" || row.outcome === "infra_error") {
        kept++;
        out.push(row);
        continue;
      }
      const task = byId.get(row.taskId);
      if (!task) {
        throw new UsageError(
          `${resultsPath}: rollout ${row.rolloutId} is of task ${row.taskId}, which ${identity.dataset} no longer has`,
        );
      }
      if (!row.messages?.length) {
        throw new UsageError(`${resultsPath}: rollout ${row.rolloutId} was stored without its messages`);
      }
      const id = `rescore-${row.rolloutId}`;
      const next: RolloutResult = { ...row };
      try {
        await env.init(id, task);
        try {
          const rewards = await env.computeReward(id, row.messages, task);
          next.rewards = rewards;
          next.reward = combineRewards(rewards, env.rewardWeights);
        } finally {
          await env.release(id);
        }
      } catch (e) {
        next.outcome = e instanceof InfraError ? "infra_error" : "env_error";
        next.error = `rescore: ${errorMessage(e)}`;
        delete next.reward;
        delete next.rewards;
      }
      rescored++;
      if (next.reward !== row.reward || JSON.stringify(next.rewards) !== JSON.stringify(row.rewards)) changed++;
      out.push(next);
    }
    mkdirSync(flags.out, { recursive: true });
    writeFileSync(join(flags.out, "results.jsonl"), out.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const newIdentity = { ...identity, rescoredFrom: runDir };
    writeFileSync(join(flags.out, "run.json"), `${JSON.stringify(newIdentity, null, 2)}\n`);
    const summary = summarize(out, {
      env: env.name,
      policy: identity.policy,
      passThreshold: env.passThreshold,
      config: { ...config, group: identity.group, dataset: identity.dataset },
    });
    writeSummary(flags.out, { ...summary, run: newIdentity } as typeof summary);
    return { env: env.name, rescored, changed, kept };
  } finally {
    await env.close();
  }
}
