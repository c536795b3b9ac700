import { describe, expect, it } from "vitest";
import type { MathGold } from "./dataset.js";
import { latexToNumber, numericallyEqual } from "./latex-number.js";
import { numbersMatch, parseNumericAnswer } from "./numbers.js";
import { explainCompletion, hasAnswerFormat, modelAnswer, prm800kAnswer, scoreCompletion } from "./reward.js";

const arith = (value: number, text = String(value)): MathGold => ({ kind: "arithmetic", value, text });
const math = (answer: string): MathGold => ({ kind: "math", answer });

describe("arithmetic answers: numbers with a tolerance", () => {
  it.each([
    ["42", 42],
    [" -3.5 ", -3.5],
    ["+.5", 0.5],
    ["1e-3", 0.001],
    ["1,234,567.5", 1234567.5],
    ["7/2", 3.5],
    ["\\frac{7}{2}", 3.5],
    ["-\\dfrac{1}{4}", -0.25],
    ["$12$", 12],
    ["\\$12.50", 12.5],
    ["\\(5\\)", 5],
    ["−8", -8],
    ["34.", 34],
  ])("reads %j as %d", (text, value) => {
    expect(parseNumericAnswer(text)).toBe(value);
  });

  it.each(["", "abc", "3 + 4", "2^3", "1/0", "12,34", "five", "3.4.5", "1e999"])("refuses %j", (text) => {
    expect(parseNumericAnswer(text)).toBeUndefined();
  });

  it("compares with |a − g| ≤ 1e-6 · max(1, |g|)", () => {
    expect(numbersMatch(0.3, 0.1 + 0.2)).toBe(true);
    expect(numbersMatch(3.5000001, 3.5)).toBe(true);
    expect(numbersMatch(3.501, 3.5)).toBe(false);
    expect(numbersMatch(1e-7, 0)).toBe(true);
    expect(numbersMatch(2e-6, 0)).toBe(false);
    expect(numbersMatch(1_000_000.5, 1_000_000)).toBe(true);
    expect(numbersMatch(1_000_002, 1_000_000)).toBe(false);
    expect(numbersMatch(0.333333, 1 / 3)).toBe(true);
    expect(numbersMatch(0.33, 1 / 3)).toBe(false);
  });

  it("scores arithmetic completions", () => {
    expect(scoreCompletion("<answer>34</answer>", arith(34))).toEqual({ correct: 1, symbolic: 1, format: 1 });
    expect(scoreCompletion("<answer>34.0</answer>", arith(34))).toEqual({ correct: 1, symbolic: 1, format: 1 });
    expect(scoreCompletion("so \\boxed{3.5}", arith(3.5))).toEqual({ correct: 1, symbolic: 1, format: 1 });
    expect(scoreCompletion("<answer>0.30000000000000004</answer>", arith(0.3))).toMatchObject({ correct: 1 });
    expect(scoreCompletion("<answer>35</answer>", arith(34))).toEqual({ correct: 0, symbolic: 0, format: 1 });
    expect(scoreCompletion("The answer is 34.", arith(34))).toEqual({ correct: 0, symbolic: 0, format: 0 });
    // an expression is not a stated number, but the numeric check sees it equals the gold
    expect(scoreCompletion("<answer>2^{5}</answer>", arith(32))).toEqual({ correct: 0, symbolic: 1, format: 1 });
    // the last answer tag counts
    expect(scoreCompletion("<answer>1</answer> no, <answer>2</answer>", arith(2))).toMatchObject({ correct: 1 });
    // a box wins over the answer tag
    expect(scoreCompletion("<answer>5</answer> \\boxed{6}", arith(6))).toMatchObject({ correct: 1 });
  });
});

describe("MATH answers: the official check", () => {
  it("reads the model's answer from the last box, else the answer tag", () => {
    expect(modelAnswer("… \\boxed{1} … \\boxed{\\frac{3}{4}}", "math")).toBe("\\frac{3}{4}");
    expect(modelAnswer("<answer>\\boxed{5}</answer>", "math")).toBe("5");
    expect(modelAnswer("<answer>$\\frac{1}{2}$</answer>", "math")).toBe("\\frac{1}{2}");
    expect(modelAnswer("<answer> 7 </answer>", "math")).toBe("7");
    // the official extraction decides whenever a box command appears: \fbox and "\boxed 5" give no answer
    expect(modelAnswer("\\fbox{7} <answer>7</answer>", "math")).toBeNull();
    expect(modelAnswer("\\boxed 5", "math")).toBeNull();
    expect(modelAnswer("no answer", "math")).toBeNull();
  });

  it.each([
    // [completion, gold, correct, symbolic]
    ["\\boxed{\\frac{3}{4}}", "\\frac{3}{4}", 1, 1],
    ["\\boxed{\\dfrac34}", "\\frac{3}{4}", 1, 1],
    ["\\boxed{3/4}", "\\frac{3}{4}", 1, 1],
    ["\\boxed{0.75}", "\\frac{3}{4}", 0, 1],
    ["\\boxed{\\frac{6}{8}}", "\\frac{3}{4}", 0, 1],
    ["\\boxed{\\frac12}", "\\frac{2}{4}", 0, 1],
    ["\\boxed{0.5}", "\\frac12", 1, 1],
    ["\\boxed{0.50}", "\\frac{1}{2}", 0, 1],
    ["\\boxed{\\sqrt{8}}", "2\\sqrt{2}", 0, 1],
    ["\\boxed{2\\sqrt2}", "2\\sqrt{2}", 1, 1],
    // LaTeX reads \sqrt13 as √1·3, and so do the official normalisation and the numeric check
    ["\\boxed{\\sqrt{13}}", "\\sqrt13", 0, 0],
    ["\\boxed{\\left( 2, \\frac{\\pi}{3} \\right)}", "(2,\\frac{\\pi}{3})", 1, 1],
    ["\\boxed{(2, \\frac{2\\pi}{6})}", "\\left( 2, \\frac{\\pi}{3} \\right)", 0, 1],
    ["\\boxed{(1,5]}", "(1,5)", 0, 0],
    ["\\boxed{70}", "70^\\circ", 1, 1],
    ["\\boxed{70^{\\circ}}", "70^\\circ", 1, 1],
    ["\\boxed{40}", "40\\text{ square centimeters}", 1, 1],
    ["\\boxed{40\\text{cm}^2}", "40\\text{ square centimeters}", 0, 0],
    ["\\boxed{25}", "25\\%", 1, 1],
    ["\\boxed{0.25}", "25\\%", 0, 0],
    ["\\boxed{x = -2}", "-2", 1, 1],
    ["\\boxed{-2}", "x = -2", 1, 1],
    ["\\boxed{12.5}", "\\$12.50", 0, 1],
    ["\\boxed{1000}", "1,000", 0, 1],
    ["\\boxed{2, 3}", "2, 3", 1, 1],
    ["\\boxed{3, 2}", "2, 3", 0, 0],
    ["\\boxed{9\\pi}", "9\\pi", 1, 1],
    ["\\boxed{28.274333882308138}", "9\\pi", 0, 1],
    ["\\boxed{28.27}", "9\\pi", 0, 0],
    ["\\boxed{[2,\\infty)}", "[2, \\infty)", 1, 1],
    ["\\boxed{(x-2)(x+2)}", "\\left(x-2\\right)\\left(x+2\\right)", 1, 1],
    ["\\boxed{x^2-4}", "(x-2)(x+2)", 0, 0],
    ["\\boxed{5+5i}", "5 + 5i", 1, 1],
    ["\\fbox{7}", "7", 0, 0],
    ["no box at all: 7", "7", 0, 0],
    ["<answer>7</answer>", "7", 1, 1],
    ["\\boxed{3\\frac{1}{2}}", "\\frac{7}{2}", 0, 0],
  ] as const)("%j vs gold %j → correct %d, symbolic %d", (completion, gold, correct, symbolic) => {
    const r = scoreCompletion(completion, math(gold));
    expect(r.correct).toBe(correct);
    expect(r.symbolic).toBe(symbolic);
  });

  it("format: an answer tag or a box", () => {
    expect(hasAnswerFormat("<answer>x</answer>")).toBe(true);
    expect(hasAnswerFormat("\\boxed{x}")).toBe(true);
    expect(hasAnswerFormat("\\fbox{x}")).toBe(true);
    expect(hasAnswerFormat("<answer>x")).toBe(false);
    expect(hasAnswerFormat("x")).toBe(false);
    expect(scoreCompletion("\\boxed{4}", math("5")).format).toBe(1);
  });
});

describe("the LaTeX-to-number evaluator", () => {
  it.each([
    ["\\frac{2}{4}", 0.5],
    ["\\dfrac{\\sqrt{3}}{2}", Math.sqrt(3) / 2],
    ["2\\sqrt{2}", 2 * Math.SQRT2],
    ["\\sqrt[3]{8}", 2],
    ["9\\pi", 9 * Math.PI],
    ["2^{10}", 1024],
    ["-\\frac{2}{3}", -2 / 3],
    ["\\frac{1}{\\sqrt{2}}", Math.SQRT1_2],
    ["e^2", Math.E ** 2],
    ["3 \\cdot 4 \\div 6", 2],
    ["\\left(1 + 2\\right) \\times 3", 9],
    ["1{,}000", 1000],
  ])("%j ≈ %d", (latex, value) => {
    expect(latexToNumber(latex)).toBeCloseTo(value, 12);
  });

  it.each([
    "x + 1",
    "\\infty",
    "5 + 5i",
    "3\\frac{1}{2}",
    "2^10",
    "\\text{(C)}",
    "\\frac{x}{2}",
    "\\sqrt{-1}",
    "1/0",
    "",
  ])("does not evaluate %j", (latex) => {
    expect(latexToNumber(latex)).toBeUndefined();
  });

  it("compares tuples and intervals with their delimiters", () => {
    expect(numericallyEqual("(1, \\frac12)", "\\left(1,0.5\\right)")).toBe(true);
    expect(numericallyEqual("[1, 2]", "(1, 2)")).toBe(false);
    expect(numericallyEqual("1, 2", "1, 2, 3")).toBe(false);
  });
});

describe("PRM800K answers and thousands separators", () => {
  it("reads the answer after a final `# Answer` heading", () => {
    expect(prm800kAnswer("So the total is 28800.\n\n# Answer\n\n28800")).toBe("28800");
    expect(prm800kAnswer("# Answer\n\n\\frac{7}{8}\n")).toBe("\\frac{7}{8}");
    expect(prm800kAnswer("# Answer\n\n28800\n\nthen more text")).toBeUndefined();
    expect(prm800kAnswer("no heading 28800")).toBeUndefined();
    expect(modelAnswer("steps\n\n# Answer\n\n28800", "math")).toBe("28800");
    expect(modelAnswer("steps\n\n# Answer\n\n41", "arithmetic")).toBe("41");
    // a \boxed{} or <answer> tag still wins, as before
    expect(modelAnswer("\\boxed{3}\n\n# Answer\n\n4", "math")).toBe("3");
    expect(hasAnswerFormat("# Answer\n\n4")).toBe(true);
  });

  it("scores a PRM800K completion against its gold: correct stays Hendrycks-strict, symbolic reads separators", () => {
    const gold = { kind: "math" as const, answer: "28,\\!800" };
    // Hendrycks' _strip_string removes "\!" but keeps the comma: "28,800" is equivalent, "28800" is not
    expect(scoreCompletion("…\n\n# Answer\n\n28,800", gold)).toEqual({ correct: 1, symbolic: 1, format: 1 });
    expect(scoreCompletion("…\n\n# Answer\n\n28800", gold)).toEqual({ correct: 0, symbolic: 1, format: 1 });
    expect(scoreCompletion("…\n\n# Answer\n\n2412", gold)).toEqual({ correct: 0, symbolic: 0, format: 1 });
  });

  it("symbolic equality handles thousands separators both ways", () => {
    const cases: [string, string][] = [
      ["900,\\!000", "900000"],
      ["900000", "900,\\!000"],
      ["40{,}000", "40000"],
      ["1,000,000.5", "1000000.5"],
      ["\\$900,\\!000", "900000"],
    ];
    for (const [answer, gold] of cases) {
      expect(scoreCompletion(`<answer>${answer}</answer>`, { kind: "math", answer: gold }).symbolic, answer).toBe(1);
    }
    // a tuple is not a thousands-separated number
    expect(scoreCompletion("<answer>(1,000)</answer>", { kind: "math", answer: "1000" }).symbolic).toBe(0);
    expect(scoreCompletion("<answer>1,00</answer>", { kind: "math", answer: "100" }).symbolic).toBe(0);
  });
});

// regression (issue 26): with gold 34, `0,034` scored 1 (any 1–3 digit first group was read as thousands grouping)
describe("arithmetic separators: proper thousands grouping only", () => {
  const gold = arith(34);
  it.each(["0,034", "00,034", "3,4", "12,34", "3 4", "0 034", "\\boxed{0,034}", "３４", "34 apples"])(
    "%s is not 34",
    (a) => {
      const c = a.startsWith("\\boxed") ? a : `<answer>${a}</answer>`;
      expect(scoreCompletion(c, gold)).toMatchObject({ correct: 0, symbolic: 0 });
    },
  );
  it.each(["34", " 34 ", "$34$", "34.0", "+34"])("%s is 34", (a) => {
    expect(scoreCompletion(`<answer>${a}</answer>`, gold).correct).toBe(1);
  });
  it("reads proper grouping with commas and spaces", () => {
    expect(parseNumericAnswer("1,234")).toBe(1234);
    expect(parseNumericAnswer("1 234 567.5")).toBe(1234567.5);
    expect(parseNumericAnswer("1\u202f234")).toBe(1234);
    expect(parseNumericAnswer("12,34")).toBeUndefined();
    expect(parseNumericAnswer("1,2345")).toBeUndefined();
    expect(parseNumericAnswer("0,034")).toBeUndefined();
  });
});

describe("explainCompletion", () => {
  it("shows the boxed answer the reward read beside the gold", () => {
    const gold: MathGold = { kind: "math", answer: "\\frac{1}{2}" };
    expect(explainCompletion("so \\boxed{-12345}", gold)).toEqual({ extracted: "-12345", gold: "\\frac{1}{2}" });
    const none = explainCompletion("I think it is 3", { kind: "arithmetic", value: 3, text: "3" });
    expect(none.extracted).toBe("(no answer found)");
    expect(none.gold).toBe("3");
    expect(none.diff?.[0]).toMatch(/no \\boxed/);
  });
});
