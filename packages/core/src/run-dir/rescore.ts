import { resolve } from "node:path";
import { RunAggregate } from "../aggregate.js";
import { type Env, passThresholdOf, rewardWeightsOf } from "../env.js";
import { EnvError, errorMessage, isInfraError, UsageError } from "../errors.js";
import { ResultsWriter } from "../results-file.js";
import { combineRewards } from "../reward.js";
import type { RolloutResult } from "../rollout-result.js";
import type { RunSummary } from "../summary.js";
import { DEFAULT_TIMEOUTS, withTimeout } from "../timeout.js";
import type { RewardComponents, Task } from "../types.js";
import { type ArtifactRef, sha256Hex } from "./artifacts.js";
import { resultRolloutId } from "./rollout-id.js";
import { RunDir } from "./run-dir.js";

export interface RescoreOptions {
  /** The new run dir (refused when it is the source, or holds a run, unless `force`). */
  out: string;
  force?: boolean;
  /** Rollouts scored at once (default 4). */
  concurrency?: number;
  /** false: score every rollout, even one identical to a rollout already scored. */
  dedup?: boolean;
  /** Limit on one `computeReward` (ms). */
  rewardTimeoutMs?: number;
}

export interface RescoreResult {
  env: string;
  rescored: number;
  changed: number;
  kept: number;
  /** Rollouts whose reward was computed (the others had the task, conversation and state of one of these). */
  computed: number;
  summary: RunSummary;
}

/** Distinct rollouts whose score is remembered (past it, each further rollout is scored on its own). */
const MEMO_MAX = 200_000;

type Scored =
  | { rewards: RewardComponents; reward: number; meta?: Record<string, unknown> }
  | { outcome: "env_error" | "infra_error"; error: string };

const isError = (r: RolloutResult) => r.outcome === "env_error" || r.outcome === "infra_error";

/**
 * Why `env` can't re-score `run` (undefined when it can). An env whose reward reads the conversation alone is
 * re-scored on a fresh state; one whose reward reads the final state needs the artifacts it declares
 * (capability `artifacts`, with `restoreArtifacts`) stored with every scored rollout.
 */
export function rescoreRefusal(env: Env, runDir: string, missing?: RolloutResult): string | undefined {
  const rewardReads = env.capabilities?.reward?.reads;
  if (rewardReads === "conversation") return undefined;
  const reads =
    rewardReads === "state"
      ? "the rollout's final state (files, a database)"
      : "what it does not declare (no rewardReads)";
  if (!env.capabilities?.artifacts?.restoreArtifacts) {
    return `env ${env.name}: its reward reads ${reads}, and it declares no artifacts to restore that state from; re-run the rollouts (benchmax eval) to score them with the current reward`;
  }
  if (missing) {
    const why = missing.metadata?.artifactError
      ? `taking them failed: ${String(missing.metadata.artifactError)}`
      : "the run was made without keeping them (an older benchmax, or a driver that keeps none)";
    return `env ${env.name}: its reward reads ${reads}, and rollout ${resultRolloutId(missing)} in ${runDir} has no stored artifacts (${why}); re-run the rollouts (benchmax eval) to score them with the current reward`;
  }
  return undefined;
}

/**
 * Re-score every finished rollout of a run dir (eval or serve --record) with the env's current reward, without
 * the model and without re-running tools: a fresh state per rollout, the stored final-state artifacts put back
 * into it when the reward reads state, `computeReward` on the stored conversation under the reward time limit.
 * env_error and infra_error rollouts are kept as they were (never scored). A run the env can't be re-scored from
 * is refused with the reason, before anything is written. Results are streamed: memory holds the rollouts in
 * flight, not the run.
 */
/**
 * Re-score every finished rollout of a run dir (eval or serve --record) with `env`'s current reward, without the
 * model and without re-running tools: a fresh state per rollout, the stored final-state artifacts put back into it
 * when the reward reads state, `computeReward` on the stored conversation under the reward time limit. env_error and
 * infra_error rollouts are kept as they were (never scored). A run the env can't be re-scored from is refused with
 * the reason before anything is written. Streamed: memory holds the rollouts in flight, not the run. `tasks`: the
 * run's tasks (from its identity's dataset), by id.
 */
export async function rescoreRunDir(
  env: Env,
  runDir: string,
  tasks: Task[],
  options: RescoreOptions,
): Promise<RescoreResult> {
  const src = RunDir.open(runDir);
  const identity = src.readIdentity();
  if (!identity || !src.hasResults()) {
    throw new UsageError(`${runDir} is not a benchmax run dir (run.json and results.jsonl expected)`);
  }
  if (resolve(options.out) === resolve(runDir)) throw new UsageError("--out must be another folder than the run dir");
  const refusal = rescoreRefusal(env, runDir);
  if (refusal) throw new UsageError(refusal);
  const config = (identity.config ?? {}) as Record<string, unknown>;
  const flags = options;
  const stateful = env.capabilities?.reward?.reads !== "conversation";
  // pass 1 (streamed): the last line of each rollout id; a scored rollout without the artifacts it needs refuses
  const lastLine = new Map<string, number>();
  const missing = new Map<string, RolloutResult>();
  src.forEachResult((r, line) => {
    const id = resultRolloutId(r);
    lastLine.set(id, line);
    if (!stateful) return;
    if (!isError(r) && (!r.artifacts || Object.keys(r.artifacts).length === 0)) missing.set(id, r);
    else missing.delete(id);
  });
  const first = missing.values().next().value;
  if (first) throw new UsageError(rescoreRefusal(env, runDir, first)!);
  const byId = new Map(tasks.map((t) => [t.id, t]));

  const out = RunDir.create(flags.out, { force: flags.force });
  const newIdentity = { ...identity, rescoredFrom: runDir };
  out.writeIdentity(newIdentity);
  const appender = await ResultsWriter.open(out.resultsPath);
  const agg = new RunAggregate(passThresholdOf(env));
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const rewardMs = options.rewardTimeoutMs ?? DEFAULT_TIMEOUTS.rewardMs;
  let rescored = 0;
  let changed = 0;
  let kept = 0;
  let computed = 0;
  // results are written in the run's order: a finished rollout waits for the ones before it (a bounded window)
  const ready = new Map<number, RolloutResult>();
  let nextOut = 0;
  const emit = (seq: number, r: RolloutResult) => {
    ready.set(seq, r);
    for (let x = ready.get(nextOut); x; x = ready.get(nextOut)) {
      ready.delete(nextOut++);
      agg.add(x);
      appender.write(x);
    }
  };

  /** Score one stored rollout on a fresh state (its artifacts put back), without the model or the tools. */
  const score = async (row: RolloutResult, task: Task, artifacts: Record<string, Uint8Array>): Promise<Scored> => {
    const id = `rescore-${resultRolloutId(row)}`;
    try {
      await env.init(id, task);
      try {
        if (stateful) await env.capabilities!.artifacts!.restoreArtifacts!(id, artifacts);
        const rewards = await withTimeout(
          env.computeReward(id, row.messages, task, { timeoutMs: rewardMs }),
          rewardMs,
          () => new EnvError(`${env.name}.computeReward did not return within ${rewardMs} ms`),
        );
        const reward = combineRewards(rewards, rewardWeightsOf(env));
        let meta: Record<string, unknown> | undefined;
        try {
          meta = env.capabilities?.metadata?.rolloutMetadata?.(id);
        } catch {
          /* metadata is best effort */
        }
        return { rewards, reward, meta };
      } finally {
        await env.release(id);
      }
    } catch (e) {
      if (e instanceof UsageError) throw e;
      return { outcome: isInfraError(e) ? "infra_error" : "env_error", error: `rescore: ${errorMessage(e)}` };
    }
  };
  // a rollout with the same task, conversation and final state as one already scored gets its score (the reward
  // is deterministic: `benchmax audit` checks it); --no-dedup scores every rollout
  const memo = new Map<string, Promise<Scored>>();
  const copied = new Set<string>();

  const rescoreOne = async (seq: number, row: RolloutResult, line: number): Promise<void> => {
    const task = byId.get(row.taskId);
    if (!task) {
      throw new UsageError(
        `${src.resultsPath}:${line}: rollout ${row.rolloutId} is of task ${row.taskId}, which ${identity.dataset} no longer has`,
      );
    }
    if (!row.messages?.length) {
      throw new UsageError(`${src.resultsPath}:${line}: rollout ${row.rolloutId} was stored without its messages`);
    }
    const refs = stateful ? Object.entries(row.artifacts ?? {}).sort(([x], [y]) => (x < y ? -1 : 1)) : [];
    const key =
      flags.dedup === false
        ? undefined
        : `${row.taskId}\0${refs.map(([n, r]) => `${n}=${(r as ArtifactRef).sha256}`).join(",")}\0${sha256Hex(Buffer.from(JSON.stringify(row.messages)))}`;
    let scored = key === undefined ? undefined : memo.get(key);
    if (!scored) {
      // set before the first await: a rollout identical to one in flight waits for its score
      scored = (async () => {
        // the artifacts are read (and checked against their sha256) before any env state exists; the new run dir
        // gets them too, so it is complete on its own (it can be re-scored again)
        const artifacts: Record<string, Uint8Array> = {};
        for (const [name, ref] of refs) {
          const bytes = await src.readArtifact(ref as ArtifactRef);
          if (!copied.has((ref as ArtifactRef).sha256)) await out.put(bytes);
          copied.add((ref as ArtifactRef).sha256);
          artifacts[name] = bytes;
        }
        return score(row, task, artifacts);
      })();
      computed++;
      if (key !== undefined && memo.size < MEMO_MAX) memo.set(key, scored);
    }
    const got = await scored;
    const next: RolloutResult = { ...row };
    if ("outcome" in got) {
      next.outcome = got.outcome;
      next.error = got.error;
      delete next.reward;
      delete next.rewards;
    } else {
      next.rewards = got.rewards;
      next.reward = got.reward;
      if (got.meta) next.metadata = { ...row.metadata, ...got.meta };
    }
    rescored++;
    if (next.reward !== row.reward || JSON.stringify(next.rewards) !== JSON.stringify(row.rewards)) changed++;
    emit(seq, next);
  };

  // pass 2 (streamed): score the last line of each rollout, `concurrency` at once
  const limit = flags.concurrency ?? 4;
  const inFlight = new Set<Promise<void>>();
  const window = limit * 8;
  let failure: unknown;
  let seq = 0;
  try {
    for await (const { r: row, line } of src.resultLines()) {
      if (failure) break;
      if (lastLine.get(resultRolloutId(row)) !== line) continue; // an earlier attempt of a retried rollout
      const mine = seq++;
      if (isError(row)) {
        kept++;
        emit(mine, row);
        continue;
      }
      const p: Promise<void> = rescoreOne(mine, row, line)
        .catch((e) => {
          failure ??= e;
        })
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
      while (inFlight.size >= limit || (inFlight.size > 0 && seq - nextOut >= window)) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
  } finally {
    appender.close();
  }
  if (failure) {
    out.clear();
    throw failure;
  }
  const summary = agg.summary({
    env: env.name,
    policy: identity.policy,
    config: { ...config, group: identity.group, dataset: identity.dataset, rescoredFrom: runDir },
    startedAt,
    durationMs: performance.now() - t0,
  });
  out.writeSummary({ ...summary, run: newIdentity });
  return { env: env.name, rescored, changed, kept, computed, summary };
}
