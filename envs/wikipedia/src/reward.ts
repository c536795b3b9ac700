import { extractAnswer, type RewardExplanation } from "@benchmax/core";
import { bestScores, normalizeAnswer } from "./hotpot-eval.js";

/** The reward components of one answer. */
export interface WikiRewards {
  [key: string]: number;
  /** Official HotpotQA exact match, best over the gold aliases (0 / 1). */
  exact_match: number;
  /** Official HotpotQA token F1, best over the gold aliases. */
  f1: number;
  /** 1 when the completion has an `<answer>…</answer>` tag. */
  format: number;
}

/** Default weights: the reward is exact match; f1 and format are reported only. */
export const DEFAULT_REWARD_WEIGHTS: Record<string, number> = { exact_match: 1 };

/**
 * Score a final completion: the answer is the last `<answer>…</answer>`; with no tag every component is 0
 * (the official metrics are not applied to untagged text).
 */
export function scoreAnswer(completion: string, golds: readonly string[]): WikiRewards {
  const answer = extractAnswer(completion);
  if (answer === undefined) return { exact_match: 0, f1: 0, format: 0 };
  const { exactMatch, f1 } = bestScores(answer, golds);
  return { exact_match: exactMatch, f1, format: 1 };
}

/** What a report shows beside a QA rollout: the tagged answer and the gold aliases, both as the metric normalises them. */
export function explainAnswer(completion: string, golds: readonly string[]): RewardExplanation {
  const answer = extractAnswer(completion);
  if (answer === undefined) {
    return {
      extracted: "(no <answer> tag)",
      gold: golds.join(" | "),
      diff: ["no <answer>…</answer> in the final reply"],
    };
  }
  const norm = normalizeAnswer(answer);
  return {
    extracted: answer,
    gold: golds.join(" | "),
    diff: [
      `normalised answer: "${norm}"`,
      ...golds.map((g) => `normalised gold: "${normalizeAnswer(g)}"${normalizeAnswer(g) === norm ? " (match)" : ""}`),
    ],
  };
}
