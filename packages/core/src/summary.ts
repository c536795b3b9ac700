import type { z } from "zod/v4";
import { RunAggregate, type SummaryInfo } from "./aggregate.js";
import type { RolloutResult } from "./rollout-result.js";
import type { RunSummarySchema, StatsSchema, TaskSummarySchema } from "./schemas.js";

export type Stats = z.infer<typeof StatsSchema>;
export type TaskSummary = z.infer<typeof TaskSummarySchema>;
/** summary.json of a run (`RunSummarySchema`). */
export type RunSummary = z.infer<typeof RunSummarySchema>;

export function stats(values: number[]): Stats | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length;
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
  return {
    mean,
    std: Math.sqrt(variance),
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
    p50: q(0.5),
    p95: q(0.95),
  };
}

/** The summary of a list of results (the same aggregates `runMany` keeps while it streams). */
export function summarize(results: Iterable<RolloutResult>, info: SummaryInfo): RunSummary {
  const agg = new RunAggregate(info.passThreshold ?? 1);
  for (const r of results) agg.add(r);
  return agg.summary(info);
}
