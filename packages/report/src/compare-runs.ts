import { OUTCOMES, type RunDirSummary, type RunIdentity, type RunSummary, stableJson } from "@benchmax/core";

export type { RunIdentity } from "@benchmax/core";

/** A summary as written by `benchmax eval`: the core summary plus the run identity (core's `RunDirSummary`). */
export type GateSummary = RunDirSummary;

export type MismatchKind = "env" | "dataset" | "rollouts" | "config";

export interface Mismatch {
  kind: MismatchKind;
  /** One line saying what differs. */
  message: string;
  /** Passed an override for this kind. */
  allowed: boolean;
}

export interface CompareOptions {
  /** Tolerated drop in mean reward, pass rate and each component mean. Default 0. */
  maxDrop?: number;
  /**
   * Tolerated rise in the share of error outcomes (env_error + infra_error), as a fraction of rollouts.
   * Default 0.005: one transient error in 200 rollouts passes.
   */
  maxErrorRateIncrease?: number;
  /** Kinds of mismatch the user accepts (e.g. comparing two datasets on purpose). */
  allow?: Partial<Record<MismatchKind, boolean>>;
}

export const DEFAULT_MAX_ERROR_RATE_INCREASE = 0.005;

export interface CompareRow {
  metric: string;
  base: number | null;
  cand: number | null;
  delta: number | null;
  regression: boolean;
  note?: string;
}

/** One task whose mean reward or pass rate differs between the runs (`benchmax compare` after a rescore). */
export interface TaskChange {
  task: string;
  base: { meanReward: number | null; passRate: number | null } | null;
  cand: { meanReward: number | null; passRate: number | null } | null;
  /** cand − base mean reward (null when either is missing). */
  delta: number | null;
}

/**
 * What a run evaluated: the policy and, for a model, its name, endpoint and checkpoint. Two runs may differ here and
 * still be compared (baseline model against a new model); `compare` names both sides.
 */
export interface EvaluatedSubject {
  /** The policy's name as the run recorded it, e.g. `openai:Qwen/Qwen2.5-7B-Instruct` or `reference`. */
  policy: string;
  model?: string | null;
  baseUrl?: string | null;
  checkpoint?: string | null;
}

export interface CompareResult {
  rows: CompareRow[];
  /** What each run evaluated, and the fields in which they differ (`policy`, `model`, `baseUrl`, `checkpoint`). */
  evaluated: { base: EvaluatedSubject; cand: EvaluatedSubject; differs: Array<keyof EvaluatedSubject> };
  /** The tasks whose mean reward or pass rate changed, biggest drop first (from the summaries' per-task figures). */
  tasks: TaskChange[];
  /** A metric regressed (only meaningful when `comparable`). */
  regression: boolean;
  /** Every difference between the two runs' identities, allowed or not. */
  mismatches: Mismatch[];
  /** No mismatch is left unallowed: the numbers may be compared. */
  comparable: boolean;
  /** The gate fails: not comparable, or a regression. */
  failed: boolean;
  maxDrop: number;
  maxErrorRateIncrease: number;
}

const EPS = 1e-12;

export function errorRate(s: RunSummary): number {
  return s.n ? (s.outcomes.env_error + s.outcomes.infra_error) / s.n : 0;
}

/** A config value as compare prints it (`unset` when absent). */
const stable = (x: unknown): string => (x === undefined ? "unset" : stableJson(x));

/**
 * The run.json config keys that name what is evaluated (the model, where it is served, which checkpoint), not how:
 * they may differ between two comparable runs. Every other config key is the evaluation protocol and must match.
 */
export const EVALUATED_CONFIG_KEYS = ["model", "baseUrl", "checkpoint"] as const;

/** Config keys that never make two runs incomparable on their own: `limit` is judged by the rollout count. */
const NOT_PROTOCOL = new Set<string>([...EVALUATED_CONFIG_KEYS, "limit"]);

/**
 * Run dirs written before a setting existed lack its key; a run that leaves the setting unset writes `null` (or `{}`
 * for env options and sampling args). All mean "unset", so an old run and a new one that leave e.g. `--seed` unset
 * compare as the same protocol.
 */
const unset = (x: unknown): unknown =>
  x === undefined || (x !== null && typeof x === "object" && !Array.isArray(x) && Object.keys(x).length === 0)
    ? null
    : x;
const sameSetting = (a: unknown, b: unknown): boolean => stableJson(unset(a)) === stableJson(unset(b));

/** What a run evaluated, from its identity (old summaries: the policy name alone). */
export function evaluatedSubject(s: GateSummary): EvaluatedSubject {
  const id = runIdentityOf(s);
  const c = id.config ?? {};
  const out: EvaluatedSubject = { policy: id.policy ?? s.policy };
  for (const k of EVALUATED_CONFIG_KEYS) {
    const v = c[k];
    if (v !== undefined && v !== null) out[k] = String(v);
  }
  return out;
}

/** The identity of a summary; summaries from before run identities get what can be read from them. */
export function runIdentityOf(s: GateSummary): Partial<RunIdentity> {
  if (s.run) return s.run;
  const c = s.config ?? {};
  return {
    env: s.env,
    dataset: typeof c.dataset === "string" ? c.dataset : undefined,
    group: typeof c.group === "number" ? c.group : undefined,
    policy: s.policy,
  };
}

/**
 * Why two runs can't be compared as they are: different env, dataset, rollout count or evaluation protocol (group
 * size, max turns, tool format, sampling, env options, split). The model, its endpoint and checkpoint may differ
 * (`evaluatedSubject`); a setting an older run.json lacks counts as unset.
 */
export function runMismatches(
  base: GateSummary,
  cand: GateSummary,
  allow: Partial<Record<MismatchKind, boolean>> = {},
): Mismatch[] {
  const b = runIdentityOf(base);
  const c = runIdentityOf(cand);
  const out: Mismatch[] = [];
  const add = (kind: MismatchKind, message: string) => out.push({ kind, message, allowed: allow[kind] === true });
  if (b.env !== c.env) add("env", `different env: baseline ${b.env}, candidate ${c.env}`);
  // rollout counts: partial (killed, interrupted) runs and runs of a different size
  for (const [label, s, id] of [
    ["baseline", base, b],
    ["candidate", cand, c],
  ] as const) {
    if (id.expectedRollouts !== undefined && (id.completed === false || s.n < id.expectedRollouts)) {
      add("rollouts", `${label} is partial: ${s.n} of ${id.expectedRollouts} rollouts (interrupted or killed run)`);
    }
  }
  const bExp = b.expectedRollouts ?? base.n;
  const cExp = c.expectedRollouts ?? cand.n;
  if (bExp !== cExp) {
    const lim = (id: Partial<RunIdentity>) =>
      id.config?.limit !== undefined && id.config.limit !== null ? ` (--limit ${id.config.limit})` : "";
    add(
      "rollouts",
      `different rollout count: baseline ${bExp}${b.tasks !== undefined ? ` (${b.tasks} tasks × ${b.group})` : ""}${lim(b)}, candidate ${cExp}${c.tasks !== undefined ? ` (${c.tasks} tasks × ${c.group})` : ""}${lim(c)}`,
    );
  }
  if (b.datasetHash && c.datasetHash) {
    if (b.datasetHash !== c.datasetHash) {
      add(
        "dataset",
        `different dataset: baseline ${b.dataset} (${b.datasetHash.slice(0, 12)}), candidate ${c.dataset} (${c.datasetHash.slice(0, 12)})`,
      );
    }
  } else if (b.dataset !== undefined && c.dataset !== undefined && b.dataset !== c.dataset) {
    add("dataset", `different dataset: baseline ${b.dataset}, candidate ${c.dataset}`);
  }
  // how the runs were evaluated: every protocol setting by name (model, endpoint and checkpoint may differ)
  const diffs: string[] = [];
  if (b.group !== undefined && c.group !== undefined && b.group !== c.group)
    diffs.push(`group ${b.group} → ${c.group}`);
  if (b.config && c.config) {
    const keys = new Set([...Object.keys(b.config), ...Object.keys(c.config)]);
    for (const k of [...keys].sort()) {
      if (NOT_PROTOCOL.has(k) || sameSetting(b.config[k], c.config[k])) continue;
      diffs.push(`${k} ${stable(b.config[k])} → ${stable(c.config[k])}`);
    }
  }
  if (diffs.length) add("config", `different config: ${diffs.join(", ")}`);
  return out;
}

/**
 * Compare a candidate run with a baseline. The runs must be comparable (same env, dataset, rollout count and
 * config; see `runMismatches`) unless the mismatch is allowed. A regression is a drop of more than `maxDrop` in mean
 * reward, pass rate or any component mean, a component that disappeared, or a rise in the error share of more than
 * `maxErrorRateIncrease`.
 */
export function compareRuns(
  base: GateSummary,
  cand: GateSummary,
  options: CompareOptions | number = {},
): CompareResult {
  const opts: CompareOptions = typeof options === "number" ? { maxDrop: options } : options;
  const maxDrop = opts.maxDrop ?? 0;
  const maxErr = opts.maxErrorRateIncrease ?? DEFAULT_MAX_ERROR_RATE_INCREASE;
  const rows: CompareRow[] = [];
  const metric = (name: string, b: number | null, c: number | null) => {
    const delta = b !== null && c !== null ? c - b : null;
    const regression = b !== null && (c === null || (delta !== null && delta < -maxDrop - EPS));
    rows.push({
      metric: name,
      base: b,
      cand: c,
      delta,
      regression,
      ...(c === null && b !== null ? { note: "missing" } : {}),
    });
  };
  metric("reward.mean", base.reward.mean, cand.reward.mean);
  metric("passRate", base.passRate, cand.passRate);
  const comps = new Set([...Object.keys(base.components), ...Object.keys(cand.components)]);
  for (const k of [...comps].sort()) metric(`component.${k}`, base.components[k] ?? null, cand.components[k] ?? null);
  const be = errorRate(base);
  const ce = errorRate(cand);
  rows.push({
    metric: "errorRate",
    base: be,
    cand: ce,
    delta: ce - be,
    regression: ce - be > maxErr + EPS,
    note: `tolerance +${maxErr}`,
  });
  for (const o of OUTCOMES) {
    const b = base.n ? base.outcomes[o] / base.n : 0;
    const c = cand.n ? cand.outcomes[o] / cand.n : 0;
    rows.push({ metric: `outcome.${o}`, base: b, cand: c, delta: c - b, regression: false, note: "share (info)" });
  }
  const tasks = taskChanges(base, cand);
  const bs = evaluatedSubject(base);
  const cs = evaluatedSubject(cand);
  const differs = (["policy", ...EVALUATED_CONFIG_KEYS] as const).filter((k) => (bs[k] ?? null) !== (cs[k] ?? null));
  const mismatches = runMismatches(base, cand, opts.allow);
  const comparable = mismatches.every((m) => m.allowed);
  const regression = rows.some((r) => r.regression);
  return {
    rows,
    evaluated: { base: bs, cand: cs, differs },
    tasks,
    regression,
    mismatches,
    comparable,
    failed: !comparable || regression,
    maxDrop,
    maxErrorRateIncrease: maxErr,
  };
}

/** The tasks whose mean reward or pass rate differ between two summaries, biggest drop first, then by id. */
export function taskChanges(base: GateSummary, cand: GateSummary): TaskChange[] {
  const out: TaskChange[] = [];
  const b = base.tasks ?? {};
  const c = cand.tasks ?? {};
  const pick = (t: { meanReward: number | null; passRate: number | null } | undefined) =>
    t ? { meanReward: t.meanReward, passRate: t.passRate } : null;
  const same = (x: number | null | undefined, y: number | null | undefined) =>
    (x ?? null) === (y ?? null) || (x != null && y != null && Math.abs(x - y) <= EPS);
  for (const task of [...new Set([...Object.keys(b), ...Object.keys(c)])]) {
    const bt = pick(b[task]);
    const ct = pick(c[task]);
    if (bt && ct && same(bt.meanReward, ct.meanReward) && same(bt.passRate, ct.passRate)) continue;
    const delta = bt?.meanReward != null && ct?.meanReward != null ? ct.meanReward - bt.meanReward : null;
    out.push({ task, base: bt, cand: ct, delta });
  }
  return out.sort((x, y) => (x.delta ?? 0) - (y.delta ?? 0) || (x.task < y.task ? -1 : x.task > y.task ? 1 : 0));
}
