import { isScored, type RolloutResult } from "../rollout-result.js";
import { textOf } from "../types.js";

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
  /**
   * A restored bucket's groups, as saved (ids, and [lo, hi, n] flattened), until something needs them as a Map
   * (`groupsOf`): restoring 1M rollouts' groups stays an array copy, and most old buckets are never touched again.
   */
  packed?: { ids: string[]; g: number[] };
}

/** The bucket's groups as a Map (unpacking a restored bucket's arrays the first time). */
function groupsOf(b: Bucket): Map<string, [number, number, number]> {
  if (b.packed) {
    const { ids, g } = b.packed;
    for (let i = 0; i < ids.length; i++) b.groups.set(ids[i]!, [g[3 * i]!, g[3 * i + 1]!, g[3 * i + 2]!]);
    b.packed = undefined;
  }
  return b.groups;
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
    for (const [g, [lo, hi, n]] of groupsOf(x)) {
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

/** One bucket in a saved state: key, counters, sums, component sums, latency bins as [bin, count, …] pairs per
 * tool, group ids, and [lo, hi, n] per group flattened. */
export type BucketState = [
  key: number,
  n: number,
  scored: number,
  rewardSum: number,
  passes: number,
  errors: number,
  truncated: number,
  chars: number,
  toolCalls: number,
  components: Record<string, number>,
  latency: Record<string, number[]>,
  groupIds: string[],
  groups: number[],
];

/** A LiveSeries as plain JSON (`toState` / `fromState`). */
export interface SeriesState {
  v: 1;
  passThreshold: number;
  keepLatest: number;
  width: number;
  axis?: "step" | "rollout";
  count: number;
  tools: string[];
  latest: LatestRollout[];
  buckets: BucketState[];
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

/** A rollout as a row of the latest-rollouts table (long texts cut, the last 40 messages). */
function latestRow(r: RolloutResult): LatestRollout {
  return {
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
      .map((m) =>
        typeof m.content === "string" ? (Object.assign({}, m, { content: cap(m.content, 4000) }) as typeof m) : m,
      ),
    ...(r.explain ? { explain: r.explain } : {}),
    ...(r.rewards ? { rewards: r.rewards } : {}),
  };
}

/**
 * Aggregates of a live run, fed one result at a time, in memory bounded by MAX_POINTS buckets (plus each bucket's
 * groups) and the last `keepLatest` rollouts: the dashboard's series are already downsampled when drawn.
 */
export class LiveSeries {
  private buckets = new Map<number, Bucket>();
  private width = 1;
  private axis: "step" | "rollout" | undefined;
  private count = 0;
  /** The last `keepLatest` rollouts: a row, or the result itself until a snapshot needs its row (`latestRows`). */
  private latest: (LatestRollout | { raw: RolloutResult })[] = [];
  private readonly tools = new Set<string>();
  version = 0;

  constructor(
    readonly passThreshold = 1,
    readonly keepLatest = 30,
  ) {}

  /** How many rollouts were added. */
  get total(): number {
    return this.count;
  }

  /**
   * Everything the series holds, as plain JSON (the watch server's checkpoint, series-checkpoint.ts): `fromState`
   * gives back a series whose snapshot, and every later `add`, equals the one that never stopped.
   */
  toState(): SeriesState {
    return {
      v: 1,
      passThreshold: this.passThreshold,
      keepLatest: this.keepLatest,
      width: this.width,
      ...(this.axis ? { axis: this.axis } : {}),
      count: this.count,
      tools: [...this.tools],
      latest: this.latestRows(),
      buckets: [...this.buckets].map(([k, b]) => {
        const latency: Record<string, number[]> = {};
        for (const [t, h] of b.latency) {
          const pairs: number[] = [];
          for (let i = 0; i < LAT_BINS; i++) if (h[i]) pairs.push(i, h[i]!);
          latency[t] = pairs;
        }
        // a packed bucket's Map is empty (groupsOf unpacks before any group is added)
        const ids: string[] = b.packed ? b.packed.ids.slice() : [];
        const g: number[] = b.packed ? b.packed.g.slice() : [];
        for (const [id, [lo, hi, n]] of b.groups) {
          ids.push(id);
          g.push(lo, hi, n);
        }
        return [
          k,
          b.n,
          b.scored,
          b.rewardSum,
          b.passes,
          b.errors,
          b.truncated,
          b.chars,
          b.toolCalls,
          b.components,
          latency,
          ids,
          g,
        ];
      }),
    };
  }

  /** The series a `toState` saved; a state of another shape or with values out of range is an Error. */
  static fromState(state: unknown): LiveSeries {
    const s = state as SeriesState;
    const bad = (what: string): never => {
      throw new Error(`series state: ${what}`);
    };
    const count = (x: unknown): x is number => typeof x === "number" && Number.isInteger(x) && x >= 0;
    const finite = (x: unknown): x is number => typeof x === "number" && Number.isFinite(x);
    if (!s || typeof s !== "object" || s.v !== 1) bad("not a version-1 state");
    if (!finite(s.passThreshold) || !count(s.keepLatest) || !count(s.count)) bad("settings");
    if (!count(s.width) || s.width < 1 || (s.width & (s.width - 1)) !== 0) bad("width");
    if (s.axis !== undefined && s.axis !== "step" && s.axis !== "rollout") bad("axis");
    if (!Array.isArray(s.tools) || s.tools.length > MAX_TOOLS || !s.tools.every((t) => typeof t === "string"))
      bad("tools");
    if (!Array.isArray(s.latest) || s.latest.length > s.keepLatest) bad("latest");
    if (!Array.isArray(s.buckets) || s.buckets.length > MAX_POINTS) bad("buckets");
    const out = new LiveSeries(s.passThreshold, s.keepLatest);
    out.width = s.width;
    if (s.axis) out.axis = s.axis;
    out.count = s.count;
    for (const t of s.tools) out.tools.add(t);
    for (const r of s.latest) {
      if (!r || typeof r !== "object" || typeof r.rolloutId !== "string" || !Array.isArray(r.messages)) bad("latest");
      out.latest.push(r);
    }
    for (const row of s.buckets) {
      if (!Array.isArray(row) || row.length !== 13) bad("bucket");
      const [k, n, scored, rewardSum, passes, errors, truncated, chars, toolCalls, components, latency, ids, g] = row;
      if (!Number.isInteger(k) || ![n, scored, passes, errors, truncated, chars].every(count)) bad("bucket counts");
      if (!finite(rewardSum) || !finite(toolCalls) || n < 1) bad("bucket sums");
      const b = newBucket();
      Object.assign(b, { n, scored, rewardSum, passes, errors, truncated, chars, toolCalls });
      if (!components || typeof components !== "object") bad("components");
      for (const [c, v] of Object.entries(components)) {
        if (!finite(v)) bad("components");
        b.components[c] = v;
      }
      if (!latency || typeof latency !== "object") bad("latency");
      for (const [t, pairs] of Object.entries(latency)) {
        if (!Array.isArray(pairs) || pairs.length % 2) bad("latency");
        const h = new Uint32Array(LAT_BINS);
        for (let i = 0; i < pairs.length; i += 2) {
          const bin = pairs[i];
          if (!count(bin) || bin >= LAT_BINS || !count(pairs[i + 1])) bad("latency");
          h[bin] = pairs[i + 1]!;
        }
        b.latency.set(t, h);
      }
      if (!Array.isArray(ids) || !Array.isArray(g) || g.length !== ids.length * 3) bad("groups");
      for (let i = 0; i < ids.length; i++) {
        const [lo, hi, gn] = [g[3 * i], g[3 * i + 1], g[3 * i + 2]];
        if (typeof ids[i] !== "string" || !finite(lo) || !finite(hi) || !count(gn)) bad("groups");
      }
      if (ids.length) b.packed = { ids, g };
      out.buckets.set(k, b);
    }
    return out;
  }

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
    const lat = r.toolLatencyMs;
    if (lat && typeof lat === "object") {
      // for…in, not Object.entries: no array of pairs per rollout (the own keys of a prototype-less record)
      for (const name in lat) {
        if (!Object.hasOwn(lat, name)) continue;
        const times = lat[name];
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
      const rewards = r.rewards;
      if (rewards)
        for (const k in rewards) if (Object.hasOwn(rewards, k)) b.components[k] = (b.components[k] ?? 0) + rewards[k]!;
      const groups = groupsOf(b);
      const g = groups.get(r.groupId);
      if (!g) groups.set(r.groupId, [x, x, 1]);
      else {
        // in place: the arrays are this bucket's own (`groupsOf`, `merge` and `fromState` make fresh ones)
        if (x < g[0]) g[0] = x;
        if (x > g[1]) g[1] = x;
        g[2]++;
      }
    }
    // the row is made when a snapshot or the state needs it: a writer that keeps the series pays only this push
    this.latest.push({ raw: r });
    if (this.latest.length > this.keepLatest) this.latest.shift();
  }

  /** The latest rollouts as rows (oldest first), made once each. */
  private latestRows(): LatestRollout[] {
    for (let i = 0; i < this.latest.length; i++) {
      const e = this.latest[i]!;
      if ("raw" in e) this.latest[i] = latestRow(e.raw);
    }
    return this.latest as LatestRollout[];
  }

  /** Double the bucket width: merge each pair of neighbouring buckets. */
  /**
   * Several runs' series (one `toState` per source of a fleet) as one: the series a single LiveSeries would hold had
   * it been fed every source's rollouts, for runs with trainer steps (a bucket is a span of steps, so the same step on
   * two servers lands in one point). Buckets are re-keyed to the widest source's width (widths are powers of two),
   * then coarsened while more than MAX_POINTS are left. A group split over sources (a migrated rollout's forks) is
   * one group. Tool latency keeps the first MAX_TOOLS tool names, the rest under "other". Runs without steps are
   * merged by each source's own rollout order (point k pools every source's k-th bucket). When the sources differ in
   * axis, only those with steps are drawn (the others still count in `total`). Empty sources are skipped. Pass counts
   * are kept as each source counted them (at its own threshold); the merged series carries the first drawn source's
   * threshold. `latest`: the merged latest rollouts (oldest first), of which the last `keepLatest` are kept.
   */
  static merge(states: SeriesState[], latest: LatestRollout[] = []): LiveSeries {
    const keepLatest = Math.max(1, ...states.map((s) => s.keepLatest));
    const sources = states.filter((s) => s.count > 0 && s.buckets.length > 0);
    const axis = sources.some((s) => s.axis === "step") ? "step" : "rollout";
    const drawn = sources.filter((s) => (s.axis ?? "rollout") === axis).map((s) => LiveSeries.fromState(s));
    const out = new LiveSeries(drawn[0]?.passThreshold ?? states[0]?.passThreshold ?? 1, keepLatest);
    out.count = states.reduce((a, s) => a + s.count, 0);
    out.latest = latest.slice(-keepLatest);
    if (drawn.length === 0) return out;
    out.axis = axis;
    for (const s of drawn) for (const t of s.tools) if (out.tools.size < MAX_TOOLS) out.tools.add(t);
    out.width = Math.max(...drawn.map((s) => s.width));
    for (const s of drawn) {
      for (const [k, b] of s.buckets) {
        const x = merge(newBucket(), b);
        for (const [t, h] of [...x.latency]) {
          if (out.tools.has(t)) continue;
          x.latency.delete(t);
          const other = x.latency.get("other");
          if (!other) x.latency.set("other", h);
          else for (let i = 0; i < LAT_BINS; i++) other[i]! += h[i]!;
        }
        // a bucket [k·w, (k+1)·w) lies inside [K·W, (K+1)·W) for K = ⌊k·w / W⌋ (W a multiple of w)
        const key = Math.floor((k * s.width) / out.width);
        const cur = out.buckets.get(key);
        out.buckets.set(key, cur ? merge(cur, x) : x);
      }
    }
    while (out.buckets.size > MAX_POINTS) out.coarsen();
    return out;
  }

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
        const g = b.packed?.g ?? [];
        for (let i = 0; i < g.length; i += 3) {
          if (g[i + 2]! < 2) continue;
          multi++;
          if (g[i + 1]! - g[i]! <= EPS) flat++;
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
      latest: [...this.latestRows()].reverse(),
    };
  }
}
