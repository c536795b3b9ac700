/**
 * The excel env's `explainReward`: for a person reading a transcript (reports and results.jsonl, never a policy),
 * the cells that differ in each failed test case — address, expected vs got — or why a case failed without a cell
 * comparison (a replayed call that failed, a file that could not be opened, a recalculation past its budget).
 */
import type { RewardExplanation } from "@benchmax/core";
import type { CaseOutcome } from "./reward.js";

/** Lines kept per case (the compare itself keeps at most 10 mismatches). */
const PER_CASE = 10;

/** The explanation of a scored rollout's cases, or undefined when every case passed (nothing to explain). */
export function explainCases(cases: readonly CaseOutcome[]): RewardExplanation | undefined {
  const failed = cases.filter((c) => !c.pass);
  if (!failed.length) return undefined;
  const diff: string[] = [];
  for (const c of failed) {
    if (!c.mismatches.length) {
      diff.push(`case ${c.case}: ${c.message || "failed"}`);
      continue;
    }
    for (const m of c.mismatches.slice(0, PER_CASE))
      diff.push(`case ${c.case} ${m.sheet}!${m.cell}: expected ${m.expected}, got ${m.actual}`);
  }
  const passed = cases.length - failed.length;
  return { extracted: `${passed} of ${cases.length} test cases pass`, diff };
}
