import type { z } from "zod/v4";
import { OutcomeSchema, type RolloutResultSchema } from "./schemas.js";

export type Outcome = z.infer<typeof OutcomeSchema>;
export const OUTCOMES: readonly Outcome[] = OutcomeSchema.options;

/** One rollout, as written to a line of results.jsonl (`RolloutResultSchema`). Error outcomes carry no reward. */
export type RolloutResult = z.infer<typeof RolloutResultSchema>;

export function isScored(r: RolloutResult): boolean {
  return (r.outcome === "completed" || r.outcome === "truncated") && typeof r.reward === "number";
}
