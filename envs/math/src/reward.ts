import { extractAnswer, lastBoxed, type RewardExplanation } from "@benchmax/core";
import type { MathGold } from "./dataset.js";
import { isEquiv, lastBoxedOnlyString, officialBoxedAnswer } from "./hendrycks.js";
import { closeEnough, latexToNumber, numericallyEqual } from "./latex-number.js";
import { numbersMatch, parseNumericAnswer, stripMathDelimiters } from "./numbers.js";

/**
 * Rewards of the math env, all 1/0:
 * - `correct` (weight 1): arithmetic — the stated number is within |a − g| ≤ 1e-6 · max(1, |g|) of the gold;
 *   MATH — the official Hendrycks check `is_equiv(model, gold)`, nothing added.
 * - `symbolic` (weight 0, reported only): `correct`, or a numeric evaluation of both sides proves them equal
 *   (`\frac{2}{4}` vs `\frac12`, `0.50` vs `\frac{1}{2}`, `2\sqrt{2}` vs `\sqrt{8}`); so `symbolic − correct` counts
 *   the answers string normalisation misses. Never folded into `correct`.
 * - `format` (weight 0): the completion has an `<answer>…</answer>` tag or a `\boxed{…}`.
 *
 * The model's answer: for MATH, when the completion contains `\boxed` (or `\fbox`) anywhere, what the official
 * extraction gives for the whole completion (`remove_boxed(last_boxed_only_string(…))`, possibly nothing — e.g. for
 * `\fbox{…}` or `\boxed 5`); otherwise the content of the last `<answer>…</answer>` tag with one pair of `$…$` /
 * `\(…\)` removed. For arithmetic, the last `\boxed{…}` (or `\fbox{…}`) content if any, else the last `<answer>` tag.
 * With neither, PRM800K's final-answer line is read: the text after the last `# Answer` heading (`…\n\n# Answer\n\n28800`).
 */
export interface MathRewards {
  correct: number;
  symbolic: number;
  format: number;
  [name: string]: number;
}

export const REWARD_WEIGHTS: Record<string, number> = { correct: 1 };

/** The answer a completion gives, as the reward reads it (null: none). */
export function modelAnswer(completion: string, kind: MathGold["kind"]): string | null {
  if (kind === "math") {
    if (completion.includes("\\boxed") || completion.includes("\\fbox")) return officialBoxedAnswer(completion);
    const tag = extractAnswer(completion) ?? prm800kAnswer(completion);
    return tag === undefined ? null : stripMathDelimiters(tag);
  }
  const boxed = lastBoxed(completion);
  if (boxed !== undefined) return boxed;
  return extractAnswer(completion) ?? prm800kAnswer(completion) ?? null;
}

const PRM800K_ANSWER = /(?:^|\n)# Answer[ \t]*\n+([^\n]*\S[^\n]*)\s*$/;

/** PRM800K's final-answer format: the line after a last `# Answer` heading that ends the completion. */
export function prm800kAnswer(completion: string): string | undefined {
  const m = PRM800K_ANSWER.exec(completion);
  return m ? m[1]!.trim() : undefined;
}

export function hasAnswerFormat(completion: string): boolean {
  return (
    extractAnswer(completion) !== undefined ||
    lastBoxedOnlyString(completion) !== null ||
    prm800kAnswer(completion) !== undefined
  );
}

/** Score one final completion against a task's gold answer. */
export function scoreCompletion(completion: string, gold: MathGold): MathRewards {
  const format = hasAnswerFormat(completion) ? 1 : 0;
  const answer = modelAnswer(completion, gold.kind);
  if (answer === null) return { correct: 0, symbolic: 0, format };
  if (gold.kind === "arithmetic") {
    const value = parseNumericAnswer(answer);
    const correct = value !== undefined && numbersMatch(value, gold.value) ? 1 : 0;
    if (correct) return { correct, symbolic: 1, format };
    const loose = latexToNumber(stripMathDelimiters(answer));
    const symbolic = loose !== undefined && closeEnough(loose, gold.value, 1e-6) ? 1 : 0;
    return { correct, symbolic, format };
  }
  const correct = isEquiv(answer, gold.answer) ? 1 : 0;
  const symbolic = correct || numericallyEqual(answer, gold.answer) ? 1 : 0;
  return { correct, symbolic, format };
}

/** What a report shows beside a math rollout: the answer the reward read, and the gold it compared with. */
export function explainCompletion(completion: string, gold: MathGold): RewardExplanation {
  const answer = modelAnswer(completion, gold.kind);
  const goldText = gold.kind === "arithmetic" ? gold.text : gold.answer;
  const out: RewardExplanation = { extracted: answer ?? "(no answer found)", gold: goldText };
  if (answer === null) out.diff = ["no \\boxed{…}, <answer> tag or '# Answer' line in the final reply"];
  return out;
}
