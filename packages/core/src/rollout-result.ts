import type { z } from "zod/v4";
import { OutcomeSchema, type RolloutResultSchema, type TurnTokensSchema } from "./schemas.js";

export type Outcome = z.infer<typeof OutcomeSchema>;
export const OUTCOMES: readonly Outcome[] = OutcomeSchema.options;

/** One rollout, as written to a line of results.jsonl (`RolloutResultSchema`). Error outcomes carry no reward. */
export type RolloutResult = z.infer<typeof RolloutResultSchema>;

/** One assistant turn's token ids and logprobs (`TurnTokensSchema`). */
export type TurnTokens = z.infer<typeof TurnTokensSchema>;

export function isScored(r: RolloutResult): boolean {
  return (r.outcome === "completed" || r.outcome === "truncated") && typeof r.reward === "number";
}
