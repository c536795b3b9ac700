import { RunDir } from "@benchmax/core";
import type { CompareResult, GateSummary } from "@benchmax/report";

export { type CompareOptions, type CompareResult, compareRuns, type GateSummary } from "@benchmax/report";

/** One task whose figures differ between two runs. */
export type TaskChange = CompareResult["tasks"][number];

/** A run dir's summary, read through core's RunDir (recomputed, and marked incomplete, for a killed run). */
export function loadRunSummary(dir: string): GateSummary {
  return RunDir.open(dir).readSummary();
}
