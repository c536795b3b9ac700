import { randomUUID } from "node:crypto";
import { isScored, OUTCOMES, type RolloutResult, type RunSummary, summarize } from "@benchmax/core";
import { type CompareOptions, type CompareResult, compareRuns, type GateSummary } from "./compare-runs.js";
import { type LoadedRun, rolloutIdOf } from "./load-run.js";
import { toolCallNames } from "./tool-calls.js";
import type { TranscriptStore } from "./transcripts.js";

export interface HistogramBin {
  label: string;
  from: number;
  to: number;
  count: number;
}

/** Counts over whole-number bins: one bin per value up to 30 values, wider bins beyond. */
export interface CountHistogram {
  labels: string[];
  series: Record<string, number[]>;
}

/**
 * One rollout in the page's index, as a compact array (20,000 of them must fit in a few MB):
 * `[rolloutId, taskIndex, outcomeIndex, reward|null, turns, toolCalls, toolErrors, durationMs, errorIndex (-1 = none),
 * chunk (-1 = no transcript), position in chunk]`. Task ids, outcomes and error texts are the index's string tables.
 */
export type IndexRow = [
  rolloutId: string,
  task: number,
  outcome: number,
  reward: number | null,
  turns: number,
  toolCalls: number,
  toolErrors: number,
  durationMs: number,
  error: number,
  chunk: number,
  pos: number,
];

/** A rollout row decoded from the index. */
export interface RolloutRow {
  rolloutId: string;
  taskId: string;
  outcome: string;
  reward: number | null;
  turns: number;
  toolCalls: number;
  toolErrors: number;
  durationMs: number;
  error?: string;
}

export interface TaskRow {
  taskId: string;
  n: number;
  passRate: number | null;
  meanReward: number | null;
  baselinePassRate?: number | null;
}

/** Everything the HTML page shows, computed from the run (and the baseline run when given). */
export interface ReportData {
  /** Ties sidecar transcript files to the page that wrote them. */
  reportId: string;
  title: string;
  generatedAt: string;
  dir: string;
  summary: GateSummary;
  rewardHistogram: HistogramBin[];
  outcomes: Record<string, number>;
  /** Rollouts by number of turns and of tool calls. */
  turnsHistogram: CountHistogram;
  /** The most called tools (top 10), from the assistant messages. */
  tools: { name: string; calls: number }[];
  /** Every task, in natural id order. */
  tasks: TaskRow[];
  /** The tasks with the lowest pass rate, or with a baseline the largest pass-rate drop (top 20), for the chart. */
  worstTasks: TaskRow[];
  /** Tasks by pass rate, in ten bins (with the baseline's tasks beside them). */
  taskPassHistogram: { labels: string[]; tasks: number[]; baseline?: number[] };
  components: string[];
  /** pass@k, max@k, group spread (from summary.json, or computed from the results for older runs). */
  rl?: RunSummary["rl"];
  tokens?: RunSummary["tokens"];
  responseChars?: RunSummary["responseChars"];
  /** Assistant turns with token ids, and those the re-tokenization drift check flagged. */
  tokenDrift?: RunSummary["tokenDrift"];
  /** Per task metadata field with at least two values: per value n, pass rate, mean reward. */
  breakdown?: RunSummary["breakdown"];
  /** Curves across several runs (`benchmax report A B C`): one point per run, in the order given, this run last. */
  series?: RunSeries;
  index: { taskIds: string[]; outcomes: string[]; errors: string[]; rows: IndexRow[] };
  transcripts: { mode: "inline" | "sidecar" | "none"; chunks: number; dir?: string };
  /** Results lines skipped unread, over the report's per-line limit (`maxLineBytes`). */
  tooLarge?: { file: string; line: number; bytes: number }[];
  baseline?: {
    dir: string;
    summary: GateSummary;
    rewardHistogram: HistogramBin[];
    /** The verdict of the gate `benchmax compare` runs, on the same summaries with the same options. */
    check: CompareResult;
  };
}

/** Per-metric values across runs (null where a run lacks the metric). */
export interface RunSeries {
  runs: { dir: string; label: string; n: number; startedAt?: string }[];
  metrics: Record<string, (number | null)[]>;
}

/** The metrics drawn across runs: mean reward, pass rate, error rate, each component, pass@k, zero-variance share. */
export function runSeries(runs: { dir: string; summary: RunSummary }[]): RunSeries {
  const rows = runs.map(({ summary: s }) => {
    const m: Record<string, number | null> = {
      reward: s.reward?.mean ?? null,
      "pass rate": s.passRate ?? null,
      "error rate": s.n ? ((s.outcomes?.env_error ?? 0) + (s.outcomes?.infra_error ?? 0)) / s.n : null,
    };
    for (const [k, v] of Object.entries(s.components ?? {})) m[k] = v;
    for (const [k, v] of Object.entries(s.rl?.passAtK ?? {})) m[`pass@${k}`] = v;
    if (s.rl) m["zero-variance share"] = s.rl.zeroVarianceShare;
    return m;
  });
  const names: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!names.includes(k)) names.push(k);
  const labels = runs.map(
    (r) =>
      r.dir
        .replace(/[\\/]+$/, "")
        .split(/[\\/]/)
        .pop() || r.dir,
  );
  return {
    runs: runs.map((r, i) => ({
      dir: r.dir,
      label: labels.filter((l) => l === labels[i]).length > 1 ? `${labels[i]} (${i + 1})` : labels[i]!,
      n: r.summary.n,
      ...(r.summary.startedAt ? { startedAt: r.summary.startedAt } : {}),
    })),
    metrics: Object.fromEntries(names.map((k) => [k, rows.map((r) => r[k] ?? null)])),
  };
}

export interface BuildOptions {
  /** Earlier runs to draw curves across, oldest first (this run is the last point). */
  series?: LoadedRun[];
  /**
   * Collects each rollout's transcript, for a run loaded without a store (a run loaded with one already has its
   * transcripts stored). Without either, the page has no transcripts.
   */
  transcripts?: TranscriptStore;
  /** The regression gate's options, as `benchmax compare` takes them (max drop, error-rate tolerance, allowances). */
  compare?: CompareOptions;
  /** How many tasks the worst-tasks chart shows (default 20). */
  topTasks?: number;
}

/** Reward histogram over scored rollouts: `bins` equal bins over [min(0, lo), max(1, hi)]. */
export function rewardHistogram(results: RolloutResult[], bins = 10, range?: [number, number]): HistogramBin[] {
  let lo = range?.[0] ?? 0;
  let hi = range?.[1] ?? 1;
  const rewards: number[] = [];
  for (const r of results) {
    if (!isScored(r)) continue;
    const x = r.reward as number;
    rewards.push(x);
    if (!range) {
      if (x < lo) lo = x;
      if (x > hi) hi = x;
    }
  }
  const width = (hi - lo) / bins || 1;
  const out: HistogramBin[] = Array.from({ length: bins }, (_, i) => {
    const from = lo + i * width;
    const to = from + width;
    return { label: `${fmt(from)}–${fmt(to)}`, from, to, count: 0 };
  });
  for (const r of rewards) {
    const i = Math.min(bins - 1, Math.max(0, Math.floor((r - lo) / width)));
    out[i]!.count++;
  }
  return out;
}

/** Whole-number counts in at most `maxBins` bins (one per value when they fit). */
export function countHistogram(series: Record<string, number[]>, maxBins = 30): CountHistogram {
  let max = 0;
  for (const values of Object.values(series)) for (const v of values) if (v > max) max = v;
  const width = Math.max(1, Math.ceil((max + 1) / maxBins));
  const bins = Math.floor(max / width) + 1;
  const labels = Array.from({ length: bins }, (_, i) =>
    width === 1 ? String(i) : `${i * width}–${i * width + width - 1}`,
  );
  const out: Record<string, number[]> = {};
  for (const [name, values] of Object.entries(series)) {
    const counts = new Array<number>(bins).fill(0);
    for (const v of values) counts[Math.min(bins - 1, Math.max(0, Math.floor(v / width)))]!++;
    out[name] = counts;
  }
  return { labels, series: out };
}

const collator = new Intl.Collator("en", { numeric: true });
/** Natural order of ids ("t2" before "t10"). */
const byId = (a: string, b: string) => collator.compare(a, b);

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(2);
}

const finiteOr = (x: unknown, d: number): number => (typeof x === "number" && Number.isFinite(x) ? x : d);

/** The numbers behind the page. With a store, each rollout's transcript goes into it. */
export function buildReportData(run: LoadedRun, baseline?: LoadedRun, options: BuildOptions = {}): ReportData {
  const { summary, results } = run;
  const outcomes: Record<string, number> = Object.fromEntries(OUTCOMES.map((o) => [o, 0]));
  for (const r of results) outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;

  let lo = 0;
  let hi = 1;
  for (const r of [results, baseline?.results ?? []].flat()) {
    if (!isScored(r)) continue;
    const x = r.reward as number;
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  const range: [number, number] = [lo, hi];

  const tasks: TaskRow[] = Object.entries(summary.tasks ?? {})
    .map(([taskId, t]) => {
      const row: TaskRow = { taskId, n: t.n, passRate: t.passRate, meanReward: t.meanReward };
      if (baseline) row.baselinePassRate = baseline.summary.tasks?.[taskId]?.passRate ?? null;
      return row;
    })
    .sort((a, b) => byId(a.taskId, b.taskId));
  const drop = (t: TaskRow) =>
    typeof t.baselinePassRate === "number" ? (t.passRate as number) - t.baselinePassRate : 0;
  const worstTasks = tasks
    .filter((t) => t.passRate !== null)
    .sort(
      (a, b) =>
        (baseline ? drop(a) - drop(b) : 0) ||
        (a.passRate as number) - (b.passRate as number) ||
        (a.meanReward ?? 0) - (b.meanReward ?? 0) ||
        byId(a.taskId, b.taskId),
    )
    .slice(0, options.topTasks ?? 20);
  const passBins = (rates: (number | null | undefined)[]) => {
    const counts = new Array<number>(10).fill(0);
    for (const p of rates) if (typeof p === "number") counts[Math.min(9, Math.max(0, Math.floor(p * 10)))]!++;
    return counts;
  };
  const taskPassHistogram = {
    labels: Array.from({ length: 10 }, (_, i) => (i === 9 ? "90–100%" : `${i * 10}–${i * 10 + 10}%`)),
    tasks: passBins(tasks.map((t) => t.passRate)),
    ...(baseline ? { baseline: passBins(Object.values(baseline.summary.tasks ?? {}).map((t) => t.passRate)) } : {}),
  };

  const components = new Set<string>();
  const toolCounts = new Map<string, number>();
  for (const r of results) {
    for (const k of Object.keys(r.rewards ?? {})) components.add(k);
    for (const m of Array.isArray(r.messages) ? r.messages : []) {
      if (m.role !== "assistant") continue;
      for (const name of toolCallNames(m)) toolCounts.set(name, (toolCounts.get(name) ?? 0) + 1);
    }
  }
  const tools = [...toolCounts]
    .map(([name, calls]) => ({ name, calls }))
    .sort((a, b) => b.calls - a.calls || byId(a.name, b.name))
    .slice(0, 10);

  // the index: rollouts in task order, strings interned
  const sorted = [...results].sort((a, b) => byId(a.taskId, b.taskId) || (a.sample ?? 0) - (b.sample ?? 0));
  const taskIds: string[] = [];
  const taskIndex = new Map<string, number>();
  const outcomeNames = [...OUTCOMES] as string[];
  const errors: string[] = [];
  const errorIndex = new Map<string, number>();
  const intern = (s: string, list: string[], map: Map<string, number>) => {
    let i = map.get(s);
    if (i === undefined) {
      i = list.length;
      list.push(s);
      map.set(s, i);
    }
    return i;
  };
  const loaded = run.transcripts;
  const store = loaded ? undefined : options.transcripts;
  const refOf = (r: RolloutResult): [number, number] =>
    loaded ? (loaded.refs.get(rolloutIdOf(r)) ?? [-1, -1]) : store ? store.add(r) : [-1, -1];
  const rows: IndexRow[] = sorted.map((r) => {
    let o = outcomeNames.indexOf(r.outcome);
    if (o < 0) o = outcomeNames.push(r.outcome) - 1;
    const err = r.error ? intern(r.error.length > 300 ? `${r.error.slice(0, 300)}…` : r.error, errors, errorIndex) : -1;
    const [chunk, pos] = refOf(r);
    return [
      rolloutIdOf(r),
      intern(r.taskId, taskIds, taskIndex),
      o,
      isScored(r) ? (r.reward as number) : null,
      finiteOr(r.turns, 0),
      finiteOr(r.toolCalls, 0),
      finiteOr(r.toolErrors, 0),
      Math.round(finiteOr(r.durationMs, 0)),
      err,
      chunk,
      pos,
    ];
  });
  store?.finish();
  const stored = loaded?.store ?? store;
  // runs written before summary.json had RL numbers: compute them from the results (response length needs the
  // full messages, which a report loads without, so it comes from summary.json only)
  const rlSource =
    summary.rl === undefined || summary.breakdown === undefined || summary.tokens === undefined
      ? summarize(results, { env: summary.env, policy: summary.policy, passThreshold: summary.passThreshold ?? 1 })
      : summary;
  const breakdown = Object.fromEntries(
    Object.entries(rlSource.breakdown ?? {}).filter(([, values]) => Object.keys(values).length >= 2),
  );

  return {
    reportId: randomUUID(),
    title: `benchmax report — ${summary.env} / ${summary.policy}`,
    generatedAt: new Date().toISOString(),
    dir: run.dir,
    summary,
    rewardHistogram: rewardHistogram(results, 10, range),
    outcomes,
    turnsHistogram: countHistogram({
      turns: results.map((r) => finiteOr(r.turns, 0)),
      "tool calls": results.map((r) => finiteOr(r.toolCalls, 0)),
    }),
    tools,
    tasks,
    worstTasks,
    taskPassHistogram,
    components: [...components].sort(),
    ...(rlSource.rl ? { rl: rlSource.rl } : {}),
    ...(rlSource.tokens ? { tokens: rlSource.tokens } : {}),
    ...(summary.responseChars ? { responseChars: summary.responseChars } : {}),
    ...(summary.tokenDrift ? { tokenDrift: summary.tokenDrift } : {}),
    ...(Object.keys(breakdown).length ? { breakdown } : {}),
    ...(options.series?.length
      ? {
          series: runSeries([
            ...options.series.map(withRl),
            { dir: run.dir, summary: { ...summary, ...(rlSource.rl ? { rl: rlSource.rl } : {}) } },
          ]),
        }
      : {}),
    index: { taskIds, outcomes: outcomeNames, errors, rows },
    transcripts: { mode: stored ? "inline" : "none", chunks: stored ? stored.chunks.length : 0 },
    ...(baseline
      ? {
          baseline: {
            dir: baseline.dir,
            summary: baseline.summary,
            rewardHistogram: rewardHistogram(baseline.results, 10, range),
            check: compareRuns(baseline.summary, summary, options.compare ?? {}),
          },
        }
      : {}),
  };
}

/** A loaded run whose summary has its RL numbers (computed from the results when summary.json predates them). */
function withRl(r: LoadedRun): { dir: string; summary: RunSummary } {
  if (r.summary.rl !== undefined) return r;
  const s = summarize(r.results, {
    env: r.summary.env,
    policy: r.summary.policy,
    passThreshold: r.summary.passThreshold ?? 1,
  });
  return { dir: r.dir, summary: s.rl ? { ...r.summary, rl: s.rl } : r.summary };
}

/** The rollouts of a report, decoded from its compact index (in the page's order). */
export function rolloutRows(data: ReportData): RolloutRow[] {
  const { taskIds, outcomes, errors, rows } = data.index;
  return rows.map(([rolloutId, t, o, reward, turns, toolCalls, toolErrors, durationMs, e]) => ({
    rolloutId,
    taskId: taskIds[t]!,
    outcome: outcomes[o]!,
    reward,
    turns,
    toolCalls,
    toolErrors,
    durationMs,
    ...(e >= 0 ? { error: errors[e]! } : {}),
  }));
}
