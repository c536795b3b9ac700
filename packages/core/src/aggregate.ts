import { isScored, OUTCOMES, type Outcome, type RolloutResult } from "./rollout-result.js";
import type { RunSummary, Stats } from "./summary.js";

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
 * not of rollouts. `summary()` gives the run's summary.json.
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
    let t = this.tasks.get(r.taskId);
    if (!t) this.tasks.set(r.taskId, (t = { n: 0, scored: 0, rewardSum: 0, passes: 0 }));
    t.n++;
    if (!isScored(r)) return;
    const reward = r.reward!;
    this.rewards.add(reward);
    t.scored++;
    t.rewardSum += reward;
    if (reward >= this.threshold - EPS) {
      t.passes++;
      this.passes++;
    }
    for (const k in r.rewards) {
      let c = this.components.get(k);
      if (!c) this.components.set(k, (c = { sum: 0, n: 0 }));
      c.sum += r.rewards[k]!;
      c.n++;
    }
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
      durationMs: info.durationMs ?? 0,
      startedAt: info.startedAt ?? now,
      finishedAt: now,
      versions: info.versions ?? {},
      ...(info.config ? { config: info.config } : {}),
    };
  }
}
