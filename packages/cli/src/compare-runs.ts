import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { readResults, summarize, UsageError } from "@benchmax/core";
import type { GateSummary } from "@benchmax/report";
import { readRunIdentity } from "./run-identity.js";

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

/**
 * A run dir's summary: summary.json, or computed from results.jsonl when the summary is missing (a killed run);
 * the run identity comes from run.json when the summary lacks it, marked incomplete when rollouts are missing.
 */
export function loadRunSummary(dir: string): GateSummary {
  if (!existsSync(dir)) throw new UsageError(`${dir}: no such run dir`);
  const summaryPath = join(dir, "summary.json");
  const identity = readRunIdentity(dir);
  let summary: GateSummary;
  if (existsSync(summaryPath)) {
    try {
      summary = JSON.parse(readFileSync(summaryPath, "utf8")) as GateSummary;
    } catch (e) {
      throw new UsageError(`${summaryPath}: malformed summary (${(e as Error).message})`);
    }
  } else {
    const resultsPath = join(dir, "results.jsonl");
    if (!existsSync(resultsPath)) throw new UsageError(`${dir} is not a run dir (no summary.json or results.jsonl)`);
    const results = readResults(resultsPath);
    if (results.length === 0) throw new UsageError(`${resultsPath} holds no results`);
    const last = new Map(results.map((r) => [r.rolloutId, r]));
    summary = summarize([...last.values()], { env: identity?.env ?? "?", policy: identity?.policy ?? "?" });
    // no summary.json: the run never finished
    if (identity) summary.run = { ...identity, completed: false };
  }
  if (!summary.run && identity) summary.run = identity;
  return summary;
}
