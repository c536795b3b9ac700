import { type BucketState, type LatestRollout, MAX_POINTS, MAX_TOOLS, type SeriesState } from "@benchmax/core";

/** One merged bucket while it is built (the fields of a BucketState, latency bins and groups as maps). */
interface Acc {
  n: number;
  scored: number;
  rewardSum: number;
  passes: number;
  errors: number;
  truncated: number;
  chars: number;
  toolCalls: number;
  components: Record<string, number>;
  latency: Map<string, Map<number, number>>;
  groups: Map<string, [number, number, number]>;
}

const newAcc = (): Acc => ({
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

/** A bucket of one series added into `acc`; its latency under a tool not in `tools` counts as "other". */
function addBucket(acc: Acc, b: BucketState, tools: Set<string>): void {
  const [, n, scored, rewardSum, passes, errors, truncated, chars, toolCalls, components, latency, ids, g] = b;
  acc.n += n;
  acc.scored += scored;
  acc.rewardSum += rewardSum;
  acc.passes += passes;
  acc.errors += errors;
  acc.truncated += truncated;
  acc.chars += chars;
  acc.toolCalls += toolCalls;
  for (const [k, v] of Object.entries(components)) acc.components[k] = (acc.components[k] ?? 0) + v;
  for (const [t, pairs] of Object.entries(latency)) {
    const tool = tools.has(t) ? t : "other";
    let h = acc.latency.get(tool);
    if (!h) acc.latency.set(tool, (h = new Map()));
    for (let i = 0; i < pairs.length; i += 2) h.set(pairs[i]!, (h.get(pairs[i]!) ?? 0) + pairs[i + 1]!);
  }
  for (let i = 0; i < ids.length; i++) {
    const [lo, hi, gn] = [g[3 * i]!, g[3 * i + 1]!, g[3 * i + 2]!];
    const cur = acc.groups.get(ids[i]!);
    acc.groups.set(ids[i]!, cur ? [Math.min(cur[0], lo), Math.max(cur[1], hi), cur[2] + gn] : [lo, hi, gn]);
  }
}

function stateOf(key: number, a: Acc): BucketState {
  const latency: Record<string, number[]> = {};
  for (const [t, h] of a.latency) latency[t] = [...h].sort((x, y) => x[0] - y[0]).flat();
  const ids: string[] = [];
  const g: number[] = [];
  for (const [id, [lo, hi, n]] of a.groups) {
    ids.push(id);
    g.push(lo, hi, n);
  }
  return [
    key,
    a.n,
    a.scored,
    a.rewardSum,
    a.passes,
    a.errors,
    a.truncated,
    a.chars,
    a.toolCalls,
    a.components,
    latency,
    ids,
    g,
  ];
}

export interface MergeOptions {
  /** The merged latest rollouts (oldest first); default: none. At most the largest `keepLatest` are kept. */
  latest?: LatestRollout[];
}

/**
 * Several runs' live series (core's SeriesState, one per source of a fleet watch) as one: the series a single
 * LiveSeries would hold had it been fed every source's rollouts, for runs with trainer steps (a bucket is a span of
 * steps, so the same step on two servers lands in one point). Buckets are re-keyed to the widest source's width
 * (widths are powers of two), then coarsened while more than MAX_POINTS are left. A group split over sources (a
 * migrated rollout's forks) is one group. Tool latency keeps the first MAX_TOOLS tool names, the rest under "other".
 * Runs without steps are merged by each source's own rollout order (point k pools every source's k-th bucket). When
 * the sources differ in axis, only those with steps are drawn (the others still count in `count`). Empty sources are
 * skipped. Pass counts are kept as each source counted them (at its own threshold); the merged state carries the
 * first drawn source's threshold.
 */
export function mergeSeriesStates(states: SeriesState[], options: MergeOptions = {}): SeriesState {
  const keepLatest = Math.max(1, ...states.map((s) => s.keepLatest));
  const latest = (options.latest ?? []).slice(-keepLatest);
  const live = states.filter((s) => s.count > 0 && s.buckets.length > 0);
  const count = states.reduce((a, s) => a + s.count, 0);
  if (live.length === 0) {
    return {
      v: 1,
      passThreshold: states[0]?.passThreshold ?? 1,
      keepLatest,
      width: 1,
      count,
      tools: [],
      latest,
      buckets: [],
    };
  }
  const axis: "step" | "rollout" = live.some((s) => s.axis === "step") ? "step" : "rollout";
  const drawn = live.filter((s) => (s.axis ?? "rollout") === axis);
  const tools: string[] = [];
  for (const s of drawn) for (const t of s.tools) if (!tools.includes(t) && tools.length < MAX_TOOLS) tools.push(t);
  const toolSet = new Set(tools);
  let width = Math.max(...drawn.map((s) => s.width));
  let merged: Map<number, Acc>;
  for (;;) {
    merged = new Map();
    for (const s of drawn) {
      for (const b of s.buckets) {
        // a bucket [k·w, (k+1)·w) lies inside [K·W, (K+1)·W) for K = ⌊k·w / W⌋ (W a multiple of w)
        const key = Math.floor((b[0] * s.width) / width);
        let acc = merged.get(key);
        if (!acc) merged.set(key, (acc = newAcc()));
        addBucket(acc, b, toolSet);
      }
    }
    if (merged.size <= MAX_POINTS) break;
    width *= 2;
  }
  return {
    v: 1,
    passThreshold: drawn[0]!.passThreshold,
    keepLatest,
    width,
    axis,
    count,
    tools,
    latest,
    buckets: [...merged].sort((a, b) => a[0] - b[0]).map(([k, a]) => stateOf(k, a)),
  };
}
