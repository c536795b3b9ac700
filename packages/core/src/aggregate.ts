import { GroupSpread } from "./group-spread.js";
import { RewardMultiset } from "./reward-multiset.js";
import { kValues, passAtK } from "./rl-stats.js";
import { isScored, OUTCOMES, type Outcome, type RolloutResult } from "./rollout-result.js";
import type { RunSummary, Stats } from "./summary.js";
import { textOf } from "./types.js";

/** Values kept exactly for quantiles; past this a log-scale histogram (≤ 0.5 % relative error) takes over. */
const EXACT_CAP = 10_000;
/** Histogram buckets grow by this factor. */
const GROWTH = 1.01;
const LOG_GROWTH = Math.log(GROWTH);
/** Values at or below this fall in bucket 0. */
const FLOOR = 1e-3;

/**
 * Mean, std, min, max and p50/p95 of a stream of numbers in bounded memory: exact while there are at most
 * 10,000 values, then from a log-scale histogram (relative error under 0.5 %) — min, max, mean and std stay exact.
 */
export class StreamingStats {
  n = 0;
  private sum = 0;
  private mean = 0;
  private m2 = 0;
  private min = Number.POSITIVE_INFINITY;
  private max = Number.NEGATIVE_INFINITY;
  private exact: number[] | undefined = [];
  private buckets: Map<number, number> | undefined;

  add(v: number): void {
    this.n++;
    this.sum += v;
    const d = v - this.mean;
    this.mean += d / this.n;
    this.m2 += d * (v - this.mean);
    if (v < this.min) this.min = v;
    if (v > this.max) this.max = v;
    if (this.exact) {
      this.exact.push(v);
      if (this.exact.length > EXACT_CAP) {
        this.buckets = new Map();
        for (const x of this.exact) this.bucketAdd(x);
        this.exact = undefined;
      }
    } else this.bucketAdd(v);
  }

  private bucketAdd(v: number): void {
    const b = v <= FLOOR ? 0 : Math.max(1, Math.ceil(Math.log(v / FLOOR) / LOG_GROWTH));
    this.buckets!.set(b, (this.buckets!.get(b) ?? 0) + 1);
  }

  private quantile(p: number): number {
    const rank = Math.min(this.n - 1, Math.floor(p * this.n));
    if (this.exact) {
      // sorted once per summary, not per value
      return this.sortedExact()[rank]!;
    }
    const keys = [...this.buckets!.keys()].sort((a, b) => a - b);
    let seen = 0;
    for (const k of keys) {
      seen += this.buckets!.get(k)!;
      if (seen > rank) {
        // the bucket's geometric middle, kept inside the observed range
        const v = k === 0 ? FLOOR : FLOOR * GROWTH ** (k - 0.5);
        return Math.min(this.max, Math.max(this.min, v));
      }
    }
    return this.max;
  }

  private sorted: number[] | undefined;
  private sortedAt = -1;
  private sortedExact(): number[] {
    if (this.sortedAt !== this.n) {
      this.sorted = [...this.exact!].sort((a, b) => a - b);
      this.sortedAt = this.n;
    }
    return this.sorted!;
  }

  stats(): Stats | null {
    if (this.n === 0) return null;
    return {
      mean: this.sum / this.n,
      std: Math.sqrt(Math.max(0, this.m2 / this.n)),
      min: this.min,
      max: this.max,
      p50: this.quantile(0.5),
      p95: this.quantile(0.95),
    };
  }

  /** The mean as the plain sum / n (summed in arrival order). */
  get meanValue(): number | null {
    return this.n ? this.sum / this.n : null;
  }
  get stdValue(): number | null {
    return this.n ? Math.sqrt(Math.max(0, this.m2 / this.n)) : null;
  }
}

interface TaskAgg {
  n: number;
  scored: number;
  rewardSum: number;
  passes: number;
  /** Scored rewards, for max@k (a task's own aggregate only; bounded, see RewardMultiset). */
  rewards?: RewardMultiset;
  /** For a metadata slice: the first task seen in it, and whether another task was seen too. */
  task?: string;
  shared?: boolean;
}

/** Most distinct values a metadata field may have to get a breakdown (more: an id-like field, dropped). */
const MAX_SLICE_VALUES = 50;

function newSlice(): TaskAgg {
  return { n: 0, scored: 0, rewardSum: 0, passes: 0 };
}

const sliceOut = (t: TaskAgg) => ({
  n: t.n,
  scored: t.scored,
  meanReward: t.scored ? t.rewardSum / t.scored : null,
  passRate: t.scored ? t.passes / t.scored : null,
});

/** Characters the model wrote in a rollout (every assistant message's text and tool-call arguments). */
export function responseChars(r: RolloutResult): number {
  let n = 0;
  for (const m of r.messages ?? []) {
    if (m?.role !== "assistant") continue;
    n += textOf(m.content).length;
    for (const c of m.tool_calls ?? []) n += (c.function?.name?.length ?? 0) + (c.function?.arguments?.length ?? 0);
  }
  return n;
}

export interface SummaryInfo {
  env: string;
  policy: string;
  passThreshold?: number;
  startedAt?: string;
  durationMs?: number;
  versions?: Record<string, string>;
  config?: Record<string, unknown>;
}

const EPS = 1e-9;

/**
 * The aggregates of a run, fed one result at a time: outcome counters, reward and component means, pass rates
 * overall and per task, turn and tool-call means, rollout-time stats. Memory grows with the number of tasks,
 * not of rollouts: each task keeps a bounded multiset of its rewards (max@k) and at most 16,384 groups stay open
 * (group spread). `summary()` gives the run's summary.json.
 */
export class RunAggregate {
  n = 0;
  readonly outcomes = Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as Record<Outcome, number>;
  /** The first error message seen (for "every rollout failed: …"). */
  firstError: string | undefined;
  private readonly rewards = new StreamingStats();
  private readonly durations = new StreamingStats();
  private readonly components = new Map<string, { sum: number; n: number }>();
  private readonly tasks = new Map<string, TaskAgg>();
  private turns = 0;
  private toolCalls = 0;
  /** Reward spread per group id (per-group std and the zero-variance share). */
  private readonly groups = new GroupSpread();
  private readonly tokens = {
    prompt: new StreamingStats(),
    completion: new StreamingStats(),
    total: new StreamingStats(),
  };
  private readonly chars = new StreamingStats();
  /** Assistant turns with token ids, and those the drift check flagged. */
  private readonly drift = { turns: 0, flagged: 0 };
  /** field → value → slice; a field past MAX_SLICE_VALUES values maps to null. */
  private readonly slices = new Map<string, Map<string, TaskAgg> | null>();
  /** Rewards at or above the threshold, counted per threshold asked for at add time. */
  private readonly threshold: number;
  private passes = 0;

  constructor(passThreshold = 1) {
    this.threshold = passThreshold;
  }

  add(r: RolloutResult): void {
    this.n++;
    this.outcomes[r.outcome] = (this.outcomes[r.outcome] ?? 0) + 1;
    if (r.error && this.firstError === undefined) this.firstError = r.error;
    this.turns += r.turns;
    this.toolCalls += r.toolCalls;
    this.durations.add(r.durationMs);
    if (r.usage) {
      this.tokens.prompt.add(r.usage.prompt_tokens);
      this.tokens.completion.add(r.usage.completion_tokens);
      this.tokens.total.add(r.usage.total_tokens);
    }
    if (r.messages?.length) this.chars.add(responseChars(r));
    if (r.tokens) {
      this.drift.turns += r.tokens.length;
      this.drift.flagged += r.tokenDrift?.length ?? 0;
    }
    let t = this.tasks.get(r.taskId);
    if (!t) this.tasks.set(r.taskId, (t = Object.assign({}, newSlice(), { rewards: new RewardMultiset() })));
    const slices = this.slicesOf(r);
    t.n++;
    for (const sl of slices) sl.n++;
    if (!isScored(r)) return;
    const reward = r.reward!;
    this.rewards.add(reward);
    const pass = reward >= this.threshold - EPS;
    for (const a of [t, ...slices]) {
      a.scored++;
      a.rewardSum += reward;
      if (pass) a.passes++;
    }
    t.rewards!.add(reward);
    if (pass) this.passes++;
    this.groups.add(r.groupId ?? r.taskId, reward);
    for (const k in r.rewards) {
      let c = this.components.get(k);
      if (!c) this.components.set(k, (c = { sum: 0, n: 0 }));
      c.sum += r.rewards[k]!;
      c.n++;
    }
  }

  private slicesOf(r: RolloutResult): TaskAgg[] {
    const out: TaskAgg[] = [];
    const meta = r.taskMeta;
    if (!meta) return out;
    for (const field in meta) {
      let values = this.slices.get(field);
      if (values === null) continue;
      if (!values) this.slices.set(field, (values = new Map()));
      const key = String(meta[field]);
      let sl = values.get(key);
      if (!sl) {
        if (values.size >= MAX_SLICE_VALUES) {
          this.slices.set(field, null);
          continue;
        }
        values.set(key, (sl = newSlice()));
      }
      if (sl.task === undefined) sl.task = r.taskId;
      else if (sl.task !== r.taskId) sl.shared = true;
      out.push(sl);
    }
    return out;
  }

  /** pass@k, max@k and group spread; undefined when no task has two scored samples. */
  rlSummary(): RunSummary["rl"] {
    let maxN = 0;
    for (const t of this.tasks.values()) if (t.scored > maxN) maxN = t.scored;
    if (maxN < 2) return undefined;
    const passAt: Record<string, number> = {};
    const maxAt: Record<string, number> = {};
    for (const k of kValues(maxN)) {
      let p = 0;
      let m = 0;
      let count = 0;
      for (const t of this.tasks.values()) {
        if (t.scored < k) continue;
        p += passAtK(t.scored, t.passes, k);
        m += t.rewards!.maxAtK(k);
        count++;
      }
      if (count) {
        passAt[k] = p / count;
        maxAt[k] = m / count;
      }
    }
    return { passAtK: passAt, maxAtK: maxAt, ...this.groups.summary() };
  }

  /** Rollouts with a reward (completed or truncated). */
  get scored(): number {
    return this.rewards.n;
  }

  /** The run's summary (summary.json). */
  summary(info: SummaryInfo): RunSummary {
    if (info.passThreshold !== undefined && info.passThreshold !== this.threshold) {
      throw new Error(
        `RunAggregate counted passes at threshold ${this.threshold}, summary asked for ${info.passThreshold}`,
      );
    }
    const now = new Date().toISOString();
    const n = this.n;
    return {
      env: info.env,
      policy: info.policy,
      n,
      outcomes: { ...this.outcomes },
      reward: { mean: this.rewards.meanValue, std: this.rewards.stdValue },
      components: Object.fromEntries([...this.components].map(([k, c]) => [k, c.sum / c.n])),
      passRate: this.rewards.n ? this.passes / this.rewards.n : null,
      passThreshold: this.threshold,
      tasks: Object.fromEntries(
        [...this.tasks].map(([id, t]) => [
          id,
          {
            n: t.n,
            scored: t.scored,
            meanReward: t.scored ? t.rewardSum / t.scored : null,
            passRate: t.scored ? t.passes / t.scored : null,
          },
        ]),
      ),
      turns: { mean: n ? this.turns / n : 0 },
      toolCalls: { mean: n ? this.toolCalls / n : 0 },
      rolloutMs: this.durations.stats(),
      ...this.extras(),
      durationMs: info.durationMs ?? 0,
      startedAt: info.startedAt ?? now,
      finishedAt: now,
      versions: info.versions ?? {},
      ...(info.config ? { config: info.config } : {}),
    };
  }

  /** The optional summary fields: rl, tokens, tokenDrift, responseChars, breakdown (each only with data). */
  private extras(): Pick<RunSummary, "rl" | "tokens" | "tokenDrift" | "responseChars" | "breakdown"> {
    const out: Pick<RunSummary, "rl" | "tokens" | "tokenDrift" | "responseChars" | "breakdown"> = {};
    const rl = this.rlSummary();
    if (rl) out.rl = rl;
    if (this.tokens.total.n) {
      out.tokens = {
        prompt: this.tokens.prompt.stats(),
        completion: this.tokens.completion.stats(),
        total: this.tokens.total.stats(),
      };
    }
    if (this.drift.turns) out.tokenDrift = { ...this.drift };
    if (this.chars.n) out.responseChars = this.chars.stats();
    const breakdown: NonNullable<RunSummary["breakdown"]> = {};
    for (const [field, values] of this.slices) {
      // a field whose every value belongs to one task (an instruction, a file path) says no more than per-task rates
      if (!values || (values.size > 1 && ![...values.values()].some((sl) => sl.shared))) continue;
      breakdown[field] = Object.fromEntries(
        [...values]
          .sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true }))
          .map(([v, sl]) => [v, sliceOut(sl)]),
      );
    }
    if (Object.keys(breakdown).length) out.breakdown = breakdown;
    return out;
  }
}
