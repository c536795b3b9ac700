import { lastToolResults, type Policy, scriptedPolicy, textOf } from "@benchmax/core";
import { evaluate } from "./calculator.js";
import type { MathTask } from "./dataset.js";
import { tryStripString } from "./hendrycks.js";
import { latexToExpression } from "./latex-number.js";
import { parseNumericAnswer } from "./numbers.js";

const LEAD = /^\s*(?:what\s+is|what's|calculate|compute|evaluate|find|solve)\b\s*(?:the\s+value\s+of\s*)?:?\s*/i;
const TRAIL = /[\s?=.!]+$/;

/** The expression of an arithmetic prompt: "What is 3 × (4 + 5)?" → "3 × (4 + 5)". */
export function expressionOf(prompt: string): string {
  return prompt.replace(LEAD, "").replace(TRAIL, "").trim();
}

/**
 * A calculator check of a MATH gold answer where it is a computation (`\frac{3}{4}` → `((3)/(4))`,
 * `4\sqrt{2}` → `4*sqrt((2))`); undefined for plain numbers and non-numeric answers (then the tool is skipped).
 */
export function referenceCalculation(goldLatex: string): string | undefined {
  const expr = latexToExpression(tryStripString(goldLatex) ?? goldLatex);
  if (expr === undefined || /^-?[\d.]+$/.test(expr)) return undefined;
  try {
    evaluate(expr);
    return expr;
  } catch {
    return undefined;
  }
}

function promptOf(task: MathTask): string {
  if (task.prompt !== undefined) return task.prompt;
  const users = (task.messages ?? []).filter((m) => m.role === "user");
  return users.length ? textOf(users[users.length - 1]!.content) : "";
}

/**
 * The reference policy — an oracle (`oracle: true`): it reads the gold answer, so the CLI runs it only on the fixtures
 * unless told otherwise. Arithmetic — calls the calculator on the task's expression and
 * answers `<answer>result</answer>`; MATH — checks the gold answer with the calculator where it is a computation,
 * then answers `<answer>\boxed{gold}</answer>`.
 */
export function mathReferencePolicy(): Policy {
  return scriptedPolicy<MathTask>(
    "math-reference",
    ({ task, turn, messages }) => {
      const gold = task.groundTruth;
      if (gold.kind === "arithmetic") {
        if (turn === 0)
          return { calls: [{ name: "calculator", arguments: { expression: expressionOf(promptOf(task)) } }] };
        const result = lastToolResults(messages)[0] ?? "";
        // a prompt the calculator cannot read (free text) falls back to the gold number
        const answer = parseNumericAnswer(result) !== undefined ? result : gold.text;
        return { answer: `The calculator gives ${result}.\n<answer>${answer}</answer>` };
      }
      if (turn === 0) {
        const expression = referenceCalculation(gold.answer);
        if (expression !== undefined) {
          return { text: "Let me check the value.", calls: [{ name: "calculator", arguments: { expression } }] };
        }
      }
      const check = turn > 0 ? ` (the calculator gives ${lastToolResults(messages)[0] ?? "?"})` : "";
      return { answer: `The final answer is${check}:\n<answer>\\boxed{${gold.answer}}</answer>` };
    },
    { oracle: true },
  );
}
