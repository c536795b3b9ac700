import { RunDir } from "@benchmax/core";
import type { GateSummary } from "@benchmax/report";

export {
  type CompareOptions,
  type CompareResult,
  type CompareRow,
  compareRuns,
  DEFAULT_MAX_ERROR_RATE_INCREASE,
  type GateSummary,
  type Mismatch,
  type MismatchKind,
  runMismatches,
} from "@benchmax/report";

/** One task whose figures differ between two runs. */
export type TaskChange = import("@benchmax/report").CompareResult["tasks"][number];

/** A run dir's summary, read through core's RunDir (recomputed, and marked incomplete, for a killed run). */
export function loadRunSummary(dir: string): GateSummary {
  return RunDir.open(dir).readSummary();
}
