import { isScored, type RolloutResult, textOf } from "@benchmax/core";

/** Most points a series keeps; past it neighbouring buckets merge (the bucket width doubles). */
export const MAX_POINTS = 400;
const EPS = 1e-9;
/** Most tool names drawn; calls of further tools count under "other". */
export const MAX_TOOLS = 12;

/**
 * Tool-call latency bins: bin i holds [0.01 ms · 1.25^i, 0.01 ms · 1.25^(i+1)), the last one everything above
 * ~9.5 min. A quantile read off them is within 12 % of the true value; bins merge by addition (coarsening).
 */
const LAT_BINS = 90;
const LAT_MIN_MS = 0.01;
const LAT_LOG = Math.log(1.25);
const latBin = (ms: number) =>
  ms <= LAT_MIN_MS ? 0 : Math.min(LAT_BINS - 1, Math.floor(Math.log(ms / LAT_MIN_MS) / LAT_LOG));

/** The q-quantile of a latency histogram: the geometric middle of the bin it falls in (null when empty). */
export function latencyQuantile(bins: Uint32Array, q: number): number | null {
  let n = 0;
  for (const c of bins) n += c;
  if (n === 0) return null;
  const rank = Math.max(1, Math.ceil(q * n));
  let seen = 0;
  for (let i = 0; i < bins.length; i++) {
    seen += bins[i]!;
    if (seen >= rank) return i === 0 ? LAT_MIN_MS : LAT_MIN_MS * 1.25 ** (i + 0.5);
  }
  return null;
}

interface Bucket {
  n: number;
  scored: number;
  rewardSum: number;
  passes: number;
  errors: number;
  truncated: number;
  chars: number;
  toolCalls: number;
  components: Record<string, number>;
  /** tool name → latency histogram of its calls in this bucket. */
  latency: Map<string, Uint32Array>;
  /** group id → [min, max, n] of its scored rewards inside this bucket. */
  groups: Map<string, [number, number, number]>;
}

const newBucket = (): Bucket => ({
  n: 0,
  scored: 0,
  rewardSum: 0,
  passes: 0,
  errors: 0,
  truncated: 0,
  chars: 0,
  toolCalls: 0,
  components: {},
  latency: new Map(),
  groups: new Map(),
});

function merge(a: Bucket, b: Bucket): Bucket {
  const out = newBucket();
  for (const x of [a, b]) {
    out.n += x.n;
    out.scored += x.scored;
    out.rewardSum += x.rewardSum;
    out.passes += x.passes;
    out.errors += x.errors;
    out.truncated += x.truncated;
    out.chars += x.chars;
    out.toolCalls += x.toolCalls;
    for (const [k, v] of Object.entries(x.components)) out.components[k] = (out.components[k] ?? 0) + v;
    for (const [t, h] of x.latency) {
      const cur = out.latency.get(t);
      if (!cur) out.latency.set(t, h.slice());
      else for (let i = 0; i < LAT_BINS; i++) cur[i]! += h[i]!;
    }
    for (const [g, [lo, hi, n]] of x.groups) {
      const cur = out.groups.get(g);
      out.groups.set(g, cur ? [Math.min(cur[0], lo), Math.max(cur[1], hi), cur[2] + n] : [lo, hi, n]);
    }
  }
  return out;
}

/** A row of the latest-rollouts table (the transcript is kept for the last few only). */
export interface LatestRollout {
  rolloutId: string;
  taskId: string;
  outcome: string;
  reward: number | null;
  step?: number;
  turns: number;
  toolCalls: number;
  error?: string;
  messages: RolloutResult["messages"];
  explain?: RolloutResult["explain"];
  rewards?: Record<string, number>;
}

/** What the dashboard draws: one point per bucket of trainer steps (or of rollouts, for runs without steps). */
export interface LiveSnapshot {
  /** "step" when rollouts carry a trainer step, else "rollout" (their order in the file). */
  axis: "step" | "rollout";
  /** Width of a bucket in steps or rollouts (doubles as the run grows, so the series stays ≤ MAX_POINTS). */
  width: number;
  x: number[];
  reward: (number | null)[];
  passRate: (number | null)[];
  errorRate: number[];
  truncatedRate: number[];
  zeroVarianceShare: (number | null)[];
  responseChars: (number | null)[];
  toolCalls: number[];
  /** Per tool: p50 and p95 of its calls' latency (ms) in each bucket, from the results' `toolLatencyMs`. */
  toolLatency: Record<string, { p50: (number | null)[]; p95: (number | null)[] }>;
  components: Record<string, (number | null)[]>;
  total: number;
  latest: LatestRollout[];
}

/** Characters the model wrote in a rollout. */
function charsOf(r: RolloutResult): number {
  let n = 0;
  for (const m of r.messages ?? []) {
    if (m?.role !== "assistant") continue;
    n += textOf(m.content).length;
  }
  return n;
}

const cap = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}… [cut]` : s);

/**
 * Aggregates of a live run, fed one result at a time, in memory bounded by MAX_POINTS buckets (plus each bucket's
 * groups) and the last `keepLatest` rollouts: the dashboard's series are already downsampled when drawn.
 */
export class LiveSeries {
  private buckets = new Map<number, Bucket>();
  private width = 1;
  private axis: "step" | "rollout" | undefined;
  private count = 0;
  private latest: LatestRollout[] = [];
  private readonly tools = new Set<string>();
  version = 0;

  constructor(
    private readonly passThreshold = 1,
    private readonly keepLatest = 30,
  ) {}

  add(r: RolloutResult): void {
    this.axis ??= typeof r.trainerStep === "number" ? "step" : "rollout";
    const pos = this.axis === "step" ? (r.trainerStep ?? 0) : this.count;
    this.count++;
    this.version++;
    const key = Math.floor(pos / this.width);
    let b = this.buckets.get(key);
    if (!b) {
      this.buckets.set(key, (b = newBucket()));
      if (this.buckets.size > MAX_POINTS) this.coarsen();
      b = this.buckets.get(Math.floor(pos / this.width))!;
    }
    b.n++;
    b.chars += charsOf(r);
    b.toolCalls += r.toolCalls ?? 0;
    if (r.toolLatencyMs && typeof r.toolLatencyMs === "object") {
      for (const [name, times] of Object.entries(r.toolLatencyMs)) {
        if (!Array.isArray(times)) continue;
        let tool = name;
        if (!this.tools.has(tool)) {
          if (this.tools.size < MAX_TOOLS) this.tools.add(tool);
          else tool = "other";
        }
        let h = b.latency.get(tool);
        if (!h) b.latency.set(tool, (h = new Uint32Array(LAT_BINS)));
        for (const ms of times) if (typeof ms === "number" && ms >= 0) h[latBin(ms)]!++;
      }
    }
    if (r.outcome === "env_error" || r.outcome === "infra_error") b.errors++;
    if (r.outcome === "truncated") b.truncated++;
    if (isScored(r)) {
      const x = r.reward as number;
      b.scored++;
      b.rewardSum += x;
      if (x >= this.passThreshold - EPS) b.passes++;
      for (const [k, v] of Object.entries(r.rewards ?? {})) b.components[k] = (b.components[k] ?? 0) + v;
      const g = b.groups.get(r.groupId);
      b.groups.set(r.groupId, g ? [Math.min(g[0], x), Math.max(g[1], x), g[2] + 1] : [x, x, 1]);
    }
    this.latest.push({
      rolloutId: r.rolloutId,
      taskId: r.taskId,
      outcome: r.outcome,
      reward: isScored(r) ? (r.reward as number) : null,
      ...(r.trainerStep !== undefined ? { step: r.trainerStep } : {}),
      turns: r.turns,
      toolCalls: r.toolCalls,
      ...(r.error ? { error: cap(r.error, 500) } : {}),
      messages: (r.messages ?? [])
        .slice(-40)
        .map((m) => (typeof m.content === "string" ? ({ ...m, content: cap(m.content, 4000) } as typeof m) : m)),
      ...(r.explain ? { explain: r.explain } : {}),
      ...(r.rewards ? { rewards: r.rewards } : {}),
    });
    if (this.latest.length > this.keepLatest) this.latest.shift();
  }

  /** Double the bucket width: merge each pair of neighbouring buckets. */
  private coarsen(): void {
    this.width *= 2;
    const next = new Map<number, Bucket>();
    for (const [k, b] of this.buckets) {
      const nk = Math.floor(k / 2);
      const cur = next.get(nk);
      next.set(nk, cur ? merge(cur, b) : b);
    }
    this.buckets = next;
  }

  snapshot(): LiveSnapshot {
    const keys = [...this.buckets.keys()].sort((a, b) => a - b);
    const bs = keys.map((k) => this.buckets.get(k)!);
    const names = new Set<string>();
    for (const b of bs) for (const k of Object.keys(b.components)) names.add(k);
    const ratio = (a: number, n: number) => (n ? a / n : null);
    return {
      axis: this.axis ?? "rollout",
      width: this.width,
      x: keys.map((k) => k * this.width),
      reward: bs.map((b) => ratio(b.rewardSum, b.scored)),
      passRate: bs.map((b) => ratio(b.passes, b.scored)),
      errorRate: bs.map((b) => b.errors / b.n),
      truncatedRate: bs.map((b) => b.truncated / b.n),
      zeroVarianceShare: bs.map((b) => {
        let multi = 0;
        let flat = 0;
        for (const [lo, hi, n] of b.groups.values()) {
          if (n < 2) continue;
          multi++;
          if (hi - lo <= EPS) flat++;
        }
        return multi ? flat / multi : null;
      }),
      responseChars: bs.map((b) => ratio(b.chars, b.n)),
      toolCalls: bs.map((b) => b.toolCalls / b.n),
      toolLatency: Object.fromEntries(
        [...new Set(bs.flatMap((b) => [...b.latency.keys()]))].sort().map((t) => [
          t,
          {
            p50: bs.map((b) => (b.latency.has(t) ? latencyQuantile(b.latency.get(t)!, 0.5) : null)),
            p95: bs.map((b) => (b.latency.has(t) ? latencyQuantile(b.latency.get(t)!, 0.95) : null)),
          },
        ]),
      ),
      components: Object.fromEntries(
        [...names].sort().map((k) => [k, bs.map((b) => (b.scored ? (b.components[k] ?? 0) / b.scored : null))]),
      ),
      total: this.count,
      latest: [...this.latest].reverse(),
    };
  }
}
