import { RunAggregate, type SummaryInfo } from "./aggregate.js";
import { type Env, passThresholdOf } from "./env.js";
import { EpisodeGroup, scoreGroup } from "./episode-group.js";
import { UsageError } from "./errors.js";
import type { Policy } from "./policy.js";
import { ResultsWriter, readResults } from "./results-file.js";
import { playEpisode, type RolloutOptions, runRollout } from "./rollout.js";
import type { RolloutResult } from "./rollout-result.js";
import { rolloutIdOf } from "./run-dir/rollout-id.js";
import type { RunSummary } from "./summary.js";
import type { Task } from "./types.js";

export type RunEvent =
  | { type: "start"; total: number; skipped: number }
  | { type: "rollout"; result: RolloutResult; done: number; total: number }
  | { type: "retry"; rolloutId: string; attempt: number; error: string }
  | { type: "end"; done: number; total: number; durationMs: number };

export interface RunManyOptions
  extends Omit<RolloutOptions, "rolloutId" | "groupId" | "sample" | "attempt" | "initialized" | "release"> {
  /** Rollouts per task (GRPO group size G). Default 1. */
  group?: number;
  /** Rollouts in flight at once. Default 8. */
  concurrency?: number;
  /** Re-runs of an infra_error rollout. Default 2. */
  retries?: number;
  /** Backoff before a retry, ms × attempt. Default 200. */
  retryDelayMs?: number;
  /** Append each result to this JSONL file as it finishes (flushed per rollout). */
  resultsPath?: string;
  /**
   * Keep every result in memory for `results`. Default: only without `resultsPath` — with one, the run keeps just
   * the aggregates (memory bounded whatever the rollout count) and `results` reads the file back when asked.
   */
  keepResults?: boolean;
  /** Skip rollouts already in `resultsPath` (infra errors there are run again). */
  resume?: boolean;
  onEvent?: (e: RunEvent) => void;
}

export interface RunManyResult {
  /**
   * Every rollout of the run, resumed ones included, in the order written. Held in memory only with
   * `keepResults` (the default without `resultsPath`); otherwise read back from `resultsPath` on first access —
   * prefer `aggregate`/`summary()` for large runs.
   */
  readonly results: RolloutResult[];
  /** Outcome counters, reward means, pass rates overall and per task, timings: kept as the run streams. */
  aggregate: RunAggregate;
  /** summary.json of the run (pass threshold: the env's). */
  summary(info: Omit<SummaryInfo, "startedAt" | "durationMs" | "passThreshold">): RunSummary;
  durationMs: number;
  startedAt: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Run tasks × group size with bounded concurrency. Groups are set up once with `fork` when the env has it;
 * group rewards are computed when the env has `computeGroupReward`; infra errors are retried; results are
 * appended per rollout (per group with group rewards) so a killed run resumes without loss or duplicates.
 */
export async function runMany<T extends Task>(
  env: Env<T>,
  tasks: T[],
  policy: Policy,
  options: RunManyOptions = {},
): Promise<RunManyResult> {
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const G = options.group ?? 1;
  if (!Number.isInteger(G) || G < 1) throw new UsageError(`group size must be a positive integer, got ${G}`);
  const concurrency = options.concurrency ?? 8;
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new UsageError(`concurrency must be a positive integer, got ${concurrency}`);
  }
  const retries = options.retries ?? 2;
  const seen = new Set<string>();
  for (const t of tasks) {
    if (seen.has(t.id)) throw new UsageError(`duplicate task id "${t.id}": task ids must be unique within a run`);
    seen.add(t.id);
  }

  const keep = options.keepResults ?? !options.resultsPath;
  const aggregate = new RunAggregate(passThresholdOf(env));
  const results: RolloutResult[] = [];
  let previous: RolloutResult[] = [];
  if (options.resume && options.resultsPath) {
    previous = readResults(options.resultsPath).filter((r) => r.outcome !== "infra_error");
    // keep only the last line per rollout id
    const byId = new Map(previous.map((r) => [r.rolloutId, r]));
    previous = [...byId.values()];
  }
  const done = new Set(previous.map((r) => r.rolloutId));
  const writer = options.resultsPath
    ? await ResultsWriter.open(options.resultsPath, {
        ...(options.resume ? { keep: previous } : {}),
        series: { passThreshold: passThresholdOf(env) },
      })
    : undefined;
  for (const r of previous) {
    aggregate.add(r);
    if (keep) results.push(r);
  }
  const skipped = previous.length;
  previous = [];

  const total = tasks.length * G;
  let finished = skipped;
  options.onEvent?.({ type: "start", total, skipped });
  const rolloutOpts: RolloutOptions = {
    maxTurns: options.maxTurns,
    maxTokens: options.maxTokens,
    deadlineMs: options.deadlineMs,
    toolFormat: options.toolFormat,
    toolTimeoutMs: options.toolTimeoutMs,
    initTimeoutMs: options.initTimeoutMs,
    rewardTimeoutMs: options.rewardTimeoutMs,
    releaseTimeoutMs: options.releaseTimeoutMs,
    lastTurnTools: options.lastTurnTools,
    keepMessages: options.keepMessages,
    artifacts: options.artifacts,
    signal: options.signal,
  };
  const useGroupReward = G > 1 && !!env.capabilities?.groupReward;

  const emit = (r: RolloutResult) => {
    aggregate.add(r);
    if (keep) results.push(r);
    writer?.write(r);
    finished++;
    options.onEvent?.({ type: "rollout", result: r, done: finished, total });
  };

  /** A rollout that ended in infra_error is run again (fresh init), up to `retries` times. */
  async function retry(task: T, sample: number, res: RolloutResult): Promise<RolloutResult> {
    let attempt = 0;
    while (res.outcome === "infra_error" && attempt < retries && !options.signal?.aborted) {
      attempt++;
      options.onEvent?.({ type: "retry", rolloutId: res.rolloutId, attempt, error: res.error ?? "" });
      await sleep((options.retryDelayMs ?? 200) * attempt);
      res = await runRollout(
        env,
        task,
        policy,
        Object.assign({}, rolloutOpts, {
          rolloutId: res.rolloutId,
          groupId: task.id,
          sample,
          attempt,
        }),
      );
    }
    return res;
  }

  /** The samples of a task still to run (resume skips finished ones). */
  const pendingSamples = (task: T) =>
    Array.from({ length: G }, (_, k) => k).filter((k) => !done.has(rolloutIdOf(task.id, k)));

  // group state, created by the first member of a group that starts and dropped when the group is done
  interface GroupState {
    /** The group's episodes (set up once, with fork where the env has it), one per pending sample. */
    group: EpisodeGroup<T>;
    /** Member index of each pending sample. */
    index: Map<number, number>;
    finished: number;
    /** Kept only when group rewards need the whole group. */
    members: RolloutResult[];
  }
  const groups = new Map<string, GroupState>();

  function groupOf(task: T): GroupState {
    let g = groups.get(task.id);
    if (!g) {
      const samples = pendingSamples(task);
      const group = new EpisodeGroup(
        env,
        task,
        Object.assign({}, rolloutOpts, {
          rolloutIds: samples.map((k) => rolloutIdOf(task.id, k)),
          samples,
          groupId: task.id,
        }),
      );
      g = { group, index: new Map(samples.map((k, i) => [k, i])), finished: 0, members: [] };
      groups.set(task.id, g);
    }
    return g;
  }

  /** A member finished: emit it (with group rewards, once the whole group is in); drop the group when done. */
  async function finishMember(task: T, g: GroupState, r: RolloutResult): Promise<void> {
    g.finished++;
    if (useGroupReward) g.members.push(r);
    else emit(r);
    if (g.finished < g.group.size) return;
    groups.delete(task.id);
    if (useGroupReward) {
      // members may be retried rollouts (fresh episodes): the group is scored from the results
      await scoreGroup(env, task, g.members, { rewardTimeoutMs: options.rewardTimeoutMs });
      for (const m of g.members) emit(m);
    }
  }

  // a fixed pool of workers pulling rollouts in order: no per-rollout scheduling objects
  let next = 0;
  async function worker(): Promise<void> {
    for (;;) {
      // after an abort no new rollout starts
      if (options.signal?.aborted) return;
      const j = next++;
      if (j >= total) return;
      const task = tasks[Math.floor(j / G)]!;
      const sample = j % G;
      if (done.has(rolloutIdOf(task.id, sample))) continue;
      // single rollouts (G = 1) need no group state at all
      const g = G === 1 ? undefined : groupOf(task);
      let r = g
        ? await playEpisode(await g.group.member(g.index.get(sample)!), policy, options.signal)
        : await runRollout(
            env,
            task,
            policy,
            Object.assign({}, rolloutOpts, {
              rolloutId: rolloutIdOf(task.id, sample),
              groupId: task.id,
              sample,
              attempt: 0,
            }),
          );
      if (r.outcome === "infra_error") r = await retry(task, sample, r);
      // a rollout cut short by the abort is not a result: it is not written, and a resume runs it again
      if (r.outcome === "infra_error" && options.signal?.aborted) continue;
      if (g) await finishMember(task, g, r);
      else emit(r);
    }
  }

  try {
    await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  } finally {
    // an aborted run leaves groups part way: free the members it forked but never ran
    for (const g of groups.values()) await g.group.close();
    writer?.close();
  }
  const durationMs = performance.now() - t0;
  options.onEvent?.({ type: "end", done: finished, total, durationMs });
  const resultsPath = options.resultsPath;
  let readBack: RolloutResult[] | undefined;
  return {
    get results() {
      if (keep || !resultsPath) return results;
      readBack ??= readResults(resultsPath);
      return readBack;
    },
    aggregate,
    summary: (info) => aggregate.summary({ ...info, startedAt, durationMs }),
    durationMs,
    startedAt,
  };
}
