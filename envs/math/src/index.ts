import {
  defineEnv,
  defineEnvModule,
  defineOptions,
  type Env,
  type EnvOptions,
  lastAssistantText,
} from "@benchmax/core";
import { z } from "zod";
import { loadMathTasks, type MathTask, parseMathRow, parseSubset, type Subset } from "./dataset.js";
import { mathReferencePolicy } from "./reference-policy.js";
import { explainCompletion, REWARD_WEIGHTS, scoreCompletion } from "./reward.js";
import { calculatorTool } from "./tools.js";

export { CALCULATOR_FUNCTIONS, CALCULATOR_LIMITS, calculate, evaluate, formatNumber } from "./calculator.js";
export {
  arithmeticRowSchema,
  detectRowKind,
  FIXTURES,
  loadMathTasks,
  type MathGold,
  type MathTask,
  mathRowSchema,
  parseMathRow,
  type RowKind,
  type Subset,
} from "./dataset.js";
export {
  isEquiv,
  lastBoxedOnlyString,
  officialBoxedAnswer,
  removeBoxed,
  stripString,
  tryStripString,
} from "./hendrycks.js";
export { latexToExpression, latexToNumber, numericAnswer, numericallyEqual } from "./latex-number.js";
export { ARITHMETIC_TOLERANCE, numbersMatch, parseNumericAnswer } from "./numbers.js";
export { expressionOf, mathReferencePolicy, referenceCalculation } from "./reference-policy.js";
export {
  hasAnswerFormat,
  type MathRewards,
  modelAnswer,
  prm800kAnswer,
  REWARD_WEIGHTS,
  scoreCompletion,
} from "./reward.js";
export { calculatorTool } from "./tools.js";

export const ARITHMETIC_SYSTEM_PROMPT =
  "You solve arithmetic problems. Use the calculator tool to evaluate expressions instead of computing by hand; " +
  "mind the order of operations. When you are done, put only the final number inside <answer></answer>, " +
  "for example <answer>42</answer>.";

export const MATH_SYSTEM_PROMPT =
  "You solve competition math problems. Use the calculator tool for numeric computations. Simplify the final " +
  "answer and write it in LaTeX inside \\boxed{}, wrapped in <answer></answer>, for example " +
  "<answer>\\boxed{\\frac{3}{4}}</answer>.";

export interface MathEnvOptions extends EnvOptions {
  /** Which fixtures `loadTasks()` returns without a source: "all" (default), "arithmetic" or "math". */
  subset?: Subset;
}

/** Per-rollout state: none. Every rollout shares this one frozen object. */
const NO_STATE: Readonly<Record<string, never>> = Object.freeze({});

/** The math env: a safe `calculator` tool, arithmetic and Hendrycks MATH tasks, rewards `correct`/`symbolic`/`format`. */
export function createMathEnv(options: MathEnvOptions = {}): Env<MathTask> {
  const subset = parseSubset(options.subset);
  return defineEnv<MathTask, Readonly<Record<string, never>>>({
    name: "math",
    description: "Calculator tool; arithmetic and MATH (Hendrycks) tasks scored like the official evaluation",
    systemPrompt: (task) => (task.groundTruth.kind === "arithmetic" ? ARITHMETIC_SYSTEM_PROMPT : MATH_SYSTEM_PROMPT),
    tools: [calculatorTool],
    initState: () => NO_STATE,
    forkState: () => NO_STATE,
    reward: ({ completion, task }) => scoreCompletion(completion, task.groundTruth),
    rewardWeights: REWARD_WEIGHTS,
    // the reward reads the final answer only: stored rollouts can be re-scored (benchmax rescore)
    rewardReads: "conversation",
    explainReward: (_id, messages, task) => explainCompletion(lastAssistantText(messages), task.groundTruth),
    loadTasks: (source, opts) => loadMathTasks(source, { subset, ...opts }),
    parseTask: (row, where) => parseMathRow(row, where),
    referencePolicy: mathReferencePolicy,
  });
}

/** The options `--env-opt` (and `createEnv`) accept: an unknown name fails with "did you mean …?". */
export const mathOptions = defineOptions(
  z.object({
    subset: z
      .enum(["all", "arithmetic", "math"])
      .optional()
      .describe("which fixtures loadTasks() returns without a source (default all)"),
  }),
);

const mathEnvModule = defineEnvModule({
  name: "math",
  description: "Calculator tool; arithmetic and MATH (Hendrycks) tasks scored like the official evaluation",
  options: mathOptions,
  createEnv: (options) => createMathEnv(options),
});

export default mathEnvModule;
