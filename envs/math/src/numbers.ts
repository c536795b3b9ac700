/**
 * Strict reading of a final numeric answer (arithmetic tasks): a plain number, never an expression to compute.
 * Accepted: `42`, `-3.5`, `+.5`, `1e-3`, `1,234,567.5` and `1 234 567` (proper thousands grouping only: a first group
 * of 1–3 digits not starting with 0, then groups of 3 — `0,034`, `12,34`, `1,2345` and `3 4` are no number), `7/2`,
 * `\frac{7}{2}`, `-\dfrac{1}{3}`, with surrounding `$…$`, `\(…\)`, `\$`, spaces and a trailing period ignored;
 * `−` (U+2212) is a minus.
 */

const NUMBER = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
/** Proper thousands grouping: a first group of 1–3 digits not starting with 0, then groups of exactly 3. */
const THOUSANDS = /^[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d*)?$/;
/** The same grouping with spaces (`1 234 567`, also no-break and thin spaces). */
const SPACE_THOUSANDS = /^[+-]?[1-9]\d{0,2}(?:[ \u00a0\u2009\u202f]\d{3})+(?:\.\d*)?$/;
const SLASH = /^([+-]?(?:\d+\.?\d*|\.\d+))\/((?:\d+\.?\d*|\.\d+))$/;
const FRAC = /^([+-]?)\\[dt]?frac\{([+-]?(?:\d+\.?\d*|\.\d+))\}\{((?:\d+\.?\d*|\.\d+))\}$/;

/** Remove math delimiters around an answer: `$x$`, `$$x$$`, `\(x\)`, `\[x\]`. */
export function stripMathDelimiters(text: string): string {
  let s = text.trim();
  if (s.startsWith("$$") && s.endsWith("$$") && s.length >= 4) s = s.slice(2, -2).trim();
  else if (s.startsWith("$") && s.endsWith("$") && s.length >= 2 && !s.endsWith("\\$")) s = s.slice(1, -1).trim();
  else if ((s.startsWith("\\(") && s.endsWith("\\)")) || (s.startsWith("\\[") && s.endsWith("\\]"))) {
    s = s.slice(2, -2).trim();
  }
  return s;
}

/** The number an answer states, or undefined when it is not a plain number. */
export function parseNumericAnswer(text: string): number | undefined {
  let s = stripMathDelimiters(text).replaceAll("\\$", "").replaceAll("$", "").replaceAll("\u2212", "-").trim();
  // whitespace between two digits is only a thousands separator in a proper grouping ("3 4" is not 34)
  if (/\d\s+\d/.test(s)) {
    if (!SPACE_THOUSANDS.test(s)) return undefined;
    s = s.replace(/\s+/g, "");
  }
  s = s.replace(/\s+/g, "");
  if (s.endsWith(".") && s.length > 1) s = s.slice(0, -1);
  if (!s) return undefined;
  if (THOUSANDS.test(s)) s = s.replaceAll(",", "");
  let value: number | undefined;
  if (NUMBER.test(s)) {
    value = Number(s);
  } else {
    const slash = SLASH.exec(s);
    const frac = slash ? undefined : FRAC.exec(s);
    if (slash) value = Number(slash[1]) / Number(slash[2]);
    else if (frac) value = (frac[1] === "-" ? -1 : 1) * (Number(frac[2]) / Number(frac[3]));
  }
  return value !== undefined && Number.isFinite(value) ? value : undefined;
}

/** Relative tolerance of arithmetic answers: |answer − gold| ≤ 1e-6 · max(1, |gold|). */
export const ARITHMETIC_TOLERANCE = 1e-6;

export function numbersMatch(answer: number, gold: number, tol = ARITHMETIC_TOLERANCE): boolean {
  return Math.abs(answer - gold) <= tol * Math.max(1, Math.abs(gold));
}
