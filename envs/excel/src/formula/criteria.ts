/** Criteria as SUMIF/COUNTIF/…IFS read them: an optional operator, wildcards (* ? ~) for text, case-insensitive. */
import { parseNumberText } from "./coerce.js";
import { type Scalar, XlError } from "./values.js";

export type Matcher = (v: Scalar) => boolean;

/** A wildcard pattern (`*`, `?`, `~` escapes) as a case-insensitive whole-text regular expression. */
export function wildcardRegex(pattern: string): RegExp {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === "~" && i + 1 < pattern.length && "*?~".includes(pattern[i + 1]!)) {
      re += `\\${pattern[++i]}`;
    } else if (ch === "*") re += "[\\s\\S]*";
    else if (ch === "?") re += "[\\s\\S]";
    else re += ch.replace(/[.+^${}()|[\]\\/-]/g, "\\$&");
  }
  return new RegExp(`^${re}$`, "i");
}

export const hasWildcard = (s: string) => /[*?]/.test(s);

export function criteriaMatcher(crit: Scalar): Matcher {
  if (crit instanceof XlError) return (v) => v instanceof XlError && v.code === crit.code;
  if (crit === null) return (v) => v === 0; // an empty criteria cell matches zeros? Excel: blank criterion → 0
  if (typeof crit === "number") return (v) => (typeof v === "number" && v === crit) || numText(v) === crit;
  if (typeof crit === "boolean") return (v) => v === crit;
  const m = /^(<=|>=|<>|<|>|=)?([\s\S]*)$/.exec(crit)!;
  const op = m[1] ?? "=";
  const rest = m[2]!;
  const n = parseNumberText(rest);
  const upper = rest.toUpperCase();
  if (rest === "") {
    if (op === "=") return (v) => v === null || v === "";
    if (op === "<>") return (v) => !(v === null || v === "");
    return () => false;
  }
  if (n !== undefined) {
    const test = cmpOp(op);
    if (op === "=" || op === "<>") {
      return (v) => {
        const x = typeof v === "number" ? v : numText(v);
        const eq = x !== undefined && x === n;
        return op === "=" ? eq : !eq;
      };
    }
    return (v) => typeof v === "number" && test(v < n ? -1 : v > n ? 1 : 0);
  }
  if (upper === "TRUE" || upper === "FALSE") {
    const b = upper === "TRUE";
    if (op === "=") return (v) => v === b;
    if (op === "<>") return (v) => v !== b;
  }
  if (rest.startsWith("#")) {
    if (op === "=") return (v) => v instanceof XlError && v.code === upper;
    if (op === "<>") return (v) => !(v instanceof XlError && v.code === upper);
  }
  if (op === "=" || op === "<>") {
    const re = hasWildcard(rest) || rest.includes("~") ? wildcardRegex(rest) : undefined;
    const low = rest.toLowerCase();
    const eq = (v: Scalar) => typeof v === "string" && (re ? re.test(v) : v.toLowerCase() === low);
    return op === "=" ? eq : (v) => !eq(v);
  }
  const test = cmpOp(op);
  const low = rest.toLowerCase();
  return (v) => {
    if (typeof v !== "string") return false;
    const x = v.toLowerCase();
    return test(x < low ? -1 : x > low ? 1 : 0);
  };
}

/** Text that COUNTIF/SUMIF treat as the number it spells (numeric criteria match it). */
function numText(v: Scalar): number | undefined {
  return typeof v === "string" ? parseNumberText(v) : undefined;
}

function cmpOp(op: string): (c: number) => boolean {
  switch (op) {
    case "<":
      return (c) => c < 0;
    case "<=":
      return (c) => c <= 0;
    case ">":
      return (c) => c > 0;
    case ">=":
      return (c) => c >= 0;
    case "<>":
      return (c) => c !== 0;
    default:
      return (c) => c === 0;
  }
}
