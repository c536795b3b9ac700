import { evaluate } from "./calculator.js";
import { tryStripString } from "./hendrycks.js";

/**
 * A small LaTeX-to-number evaluator for the `symbolic` reward: it turns a constant LaTeX answer (`\frac{2}{4}`,
 * `2\sqrt{2}`, `\dfrac{\sqrt{3}}{2}`, `9\pi`, `0.50`, `2^{10}`, `(1, \frac12)`) into a calculator expression and
 * evaluates it with the safe calculator. Anything with a variable, `\infty`, `i`, text or an unknown command does
 * not convert (undefined), so it can never prove an equality.
 */

const COMMANDS: Record<string, string> = {
  pi: "pi",
  cdot: "*",
  times: "*",
  div: "/",
  sin: "sin",
  cos: "cos",
  tan: "tan",
  ln: "ln",
  log: "log",
  exp: "exp",
};
const FUNCTION_COMMANDS = new Set(["sin", "cos", "tan", "ln", "log", "exp"]);
const SKIP_COMMANDS = new Set(["left", "right", "displaystyle"]);
const SPACE_COMMANDS = new Set([",", ";", ":", "!", " "]);

class NotConstant extends Error {}

/** Converts one LaTeX string; `out` accumulates the calculator expression. */
class Converter {
  private i = 0;
  private out = "";
  /** The last emitted token ends an operand (a number, a constant, `)`): a following operand is multiplied. */
  private afterOperand = false;

  constructor(private readonly s: string) {}

  run(): string {
    this.convertUntil(undefined);
    if (this.i < this.s.length) throw new NotConstant("trailing input");
    return this.out;
  }

  private operand(text: string, endsOperand = true): void {
    if (this.afterOperand) this.out += "*";
    this.out += text;
    this.afterOperand = endsOperand;
  }

  private operator(text: string): void {
    this.out += text;
    this.afterOperand = false;
  }

  /** Convert until the closing character `end` (not consumed) or the end of input. */
  private convertUntil(end: string | undefined): void {
    const s = this.s;
    while (this.i < s.length) {
      const ch = s[this.i]!;
      if (ch === end) return;
      if (ch === " " || ch === "\n" || ch === "\t") {
        this.i++;
      } else if ((ch >= "0" && ch <= "9") || ch === ".") {
        let j = this.i;
        while (j < s.length && ((s[j]! >= "0" && s[j]! <= "9") || s[j] === ".")) j++;
        // "3\frac{1}{2}" reads as a mixed number to people and as 3·½ to a parser: refuse to guess
        if (s.startsWith("\\frac", j) || s.startsWith("\\dfrac", j) || s.startsWith("\\tfrac", j)) {
          throw new NotConstant("mixed number");
        }
        this.operand(s.slice(this.i, j));
        this.i = j;
      } else if (ch === "+" || ch === "-" || ch === "*" || ch === "/") {
        this.operator(ch);
        this.i++;
      } else if (ch === "(" || ch === "{") {
        this.i++;
        this.operand("(", false);
        this.convertUntil(ch === "(" ? ")" : "}");
        if (this.i >= s.length) throw new NotConstant("unbalanced");
        this.i++;
        this.out += ")";
        this.afterOperand = true;
      } else if (ch === "^") {
        this.i++;
        this.operator("^");
        this.argument();
      } else if (ch === "e" && !isLetter(s[this.i + 1])) {
        this.i++;
        this.operand("e");
      } else if (ch === "\\") {
        this.command();
      } else {
        throw new NotConstant(`unsupported "${ch}"`);
      }
    }
  }

  /** One argument: a `{group}` or a single character / command (LaTeX's `^2`, `\frac12`, `\sqrt3`). */
  private argument(): void {
    const s = this.s;
    while (s[this.i] === " ") this.i++;
    if (this.i >= s.length) throw new NotConstant("missing argument");
    const ch = s[this.i]!;
    this.operand("(", false);
    if (ch === "{") {
      this.i++;
      this.convertUntil("}");
      if (this.i >= s.length) throw new NotConstant("unbalanced");
      this.i++;
    } else if (ch === "\\") {
      this.command();
    } else if ((ch >= "0" && ch <= "9") || ch === "e") {
      // LaTeX reads "2^10" as 2¹·0, people as 2¹⁰: refuse to guess
      const after = s[this.i + 1];
      if (ch !== "e" && after !== undefined && after >= "0" && after <= "9")
        throw new NotConstant("ambiguous exponent");
      this.operand(ch);
      this.i++;
    } else {
      throw new NotConstant("bad argument");
    }
    this.out += ")";
    this.afterOperand = true;
  }

  private command(): void {
    const s = this.s;
    this.i++; // the backslash
    const next = s[this.i];
    if (next !== undefined && SPACE_COMMANDS.has(next)) {
      this.i++;
      return;
    }
    let j = this.i;
    while (j < s.length && isLetter(s[j])) j++;
    const name = s.slice(this.i, j);
    if (!name && next === "$") {
      this.i++;
      return;
    }
    this.i = j;
    if (SKIP_COMMANDS.has(name)) return;
    if (name === "frac" || name === "dfrac" || name === "tfrac") {
      this.operand("(", false);
      this.argument();
      this.operator("/");
      this.argument();
      this.out += ")";
      this.afterOperand = true;
      return;
    }
    if (name === "sqrt") {
      while (s[this.i] === " ") this.i++;
      if (s[this.i] === "[") {
        // \sqrt[n]{x} = x^(1/n)
        this.i++;
        const start = this.out.length;
        const saved = this.afterOperand;
        this.afterOperand = false;
        this.convertUntil("]");
        if (this.i >= s.length) throw new NotConstant("unbalanced");
        this.i++;
        const index = this.out.slice(start);
        this.out = this.out.slice(0, start);
        this.afterOperand = saved;
        this.operand("(", false);
        this.argument();
        this.out += `^(1/(${index})))`;
        this.afterOperand = true;
        return;
      }
      this.operand("sqrt", false);
      this.argument();
      return;
    }
    const mapped = COMMANDS[name];
    if (mapped === undefined) throw new NotConstant(`unsupported \\${name}`);
    if (mapped === "*" || mapped === "/") {
      this.operator(mapped);
    } else if (FUNCTION_COMMANDS.has(name)) {
      this.operand(mapped, false);
      while (s[this.i] === " ") this.i++;
      if (s[this.i] !== "(" && s[this.i] !== "{") throw new NotConstant("function without parentheses");
    } else {
      this.operand(mapped);
    }
  }
}

function isLetter(ch: string | undefined): boolean {
  return ch !== undefined && ((ch >= "a" && ch <= "z") || (ch >= "A" && ch <= "Z"));
}

/** A calculator expression for a constant LaTeX expression, or undefined when it is not one. */
export function latexToExpression(latex: string): string | undefined {
  const text = latex.trim();
  if (!text) return undefined;
  if (/^-?[1-9]\d{0,2}(?:(?:\{,\}|,)\d{3})+(?:\.\d+)?$/.test(text)) return text.replace(/\{,\}|,/g, "");
  try {
    return new Converter(text).run();
  } catch (e) {
    if (e instanceof NotConstant) return undefined;
    throw e;
  }
}

/** The value of a constant LaTeX expression, or undefined. */
export function latexToNumber(latex: string): number | undefined {
  const expr = latexToExpression(latex);
  if (expr === undefined) return undefined;
  try {
    const v = evaluate(expr);
    return Number.isFinite(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

/** A numeric reading of an answer: one value, or a tuple / interval / list with its delimiters. */
export interface NumericAnswer {
  open: string;
  close: string;
  values: number[];
}

function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let level = 0;
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === "(" || ch === "[" || ch === "{") level++;
    else if (ch === ")" || ch === "]" || ch === "}") level--;
    else if (ch === "," && level === 0) {
      parts.push(s.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(s.slice(start));
  return parts;
}

/**
 * Read an answer as numbers after the official normalisation (so `x = `, units, `^\circ`, `\%`, `\left`… are gone
 * the same way): `\frac{1}{2}` → [0.5]; `(1, 2]` → open "(", close "]", [1, 2]; `2, 3` → [2, 3].
 */
export function numericAnswer(answer: string): NumericAnswer | undefined {
  const stripped = tryStripString(answer);
  const first = stripped === undefined ? undefined : readNumeric(stripped);
  // the official normalisation can break a form it does not know (`\sqrt[3]{8}`): then read the raw text
  return first ?? (stripped !== answer ? readNumeric(answer.trim()) : undefined);
}

function readNumeric(s: string): NumericAnswer | undefined {
  if (!s || s.length > 500) return undefined;
  const single = latexToNumber(s);
  if (single !== undefined) return { open: "", close: "", values: [single] };
  let open = "";
  let close = "";
  let body = s;
  const first = s[0]!;
  const last = s[s.length - 1]!;
  if ((first === "(" || first === "[") && (last === ")" || last === "]")) {
    open = first;
    close = last;
    body = s.slice(1, -1);
  }
  const parts = splitTopLevel(body);
  if (parts.length < 2) return undefined;
  const values: number[] = [];
  for (const p of parts) {
    const v = latexToNumber(p);
    if (v === undefined) return undefined;
    values.push(v);
  }
  return { open, close, values };
}

/** Relative tolerance of the symbolic check. */
export const SYMBOLIC_TOLERANCE = 1e-9;

export function closeEnough(a: number, b: number, tol = SYMBOLIC_TOLERANCE): boolean {
  return Math.abs(a - b) <= tol * Math.max(1, Math.abs(a), Math.abs(b));
}

/** Both answers read as numbers with the same shape and every value agrees. */
export function numericallyEqual(a: string, b: string): boolean {
  const x = numericAnswer(a);
  const y = numericAnswer(b);
  if (!x || !y) return false;
  if (x.open !== y.open || x.close !== y.close || x.values.length !== y.values.length) return false;
  return x.values.every((v, k) => closeEnough(v, y.values[k]!));
}
