/** Excel's conversions and comparisons between value types. Conversion failures throw the Excel error value. */
import { ERR, type Scalar, XlError } from "./values.js";

/** Excel's "General" text of a number (at most 15 significant digits). */
export function numberText(n: number): string {
  if (Object.is(n, -0) || n === 0) return "0";
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return String(n);
  const abs = Math.abs(n);
  if (abs >= 1e-9 && abs < 1e15) {
    let s = n.toPrecision(15);
    if (s.includes("e")) s = Number(s).toString();
    if (s.includes(".")) s = s.replace(/0+$/, "").replace(/\.$/, "");
    // General shows at most 11 characters of decimals in a cell, but text conversion keeps 15 significant digits
    return s;
  }
  let s = n.toExponential(14);
  const [m, e] = s.split("e");
  const mant = m!.includes(".") ? m!.replace(/0+$/, "").replace(/\.$/, "") : m!;
  const exp = Number(e);
  s = `${mant}E${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  return s;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

/** Days from 1899-12-30 for a proleptic date, with Excel's 1900 leap-year bug. */
export function dateSerial(y: number, m: number, d: number): number {
  const days = (Date.UTC(y, m - 1, d) - Date.UTC(1899, 11, 30)) / 86400000;
  return days < 61 ? days - 1 : days;
}

export function serialDate(serial: number): { y: number; m: number; d: number; dow: number } {
  const s = Math.floor(serial);
  if (s === 60) return { y: 1900, m: 2, d: 29, dow: 4 };
  const days = s < 60 ? s + 1 : s;
  const dt = new Date(Date.UTC(1899, 11, 30) + days * 86400000);
  return { y: dt.getUTCFullYear(), m: dt.getUTCMonth() + 1, d: dt.getUTCDate(), dow: dt.getUTCDay() };
}

/** Text that Excel reads as a number: plain, thousands separators, percent, currency, dates and times. */
export function parseNumberText(text: string): number | undefined {
  const s = text.trim();
  if (s === "") return undefined;
  let m = /^([+-])?\$?\s*((?:\d{1,3}(?:,\d{3})+|\d*)(?:\.\d*)?(?:[eE][+-]?\d+)?)\s*(%?)$/.exec(s);
  if (m && /\d/.test(m[2]!)) {
    let n = Number(m[2]!.replace(/,/g, ""));
    if (Number.isNaN(n)) return undefined;
    if (m[1] === "-") n = -n;
    if (m[3]) n /= 100;
    return n;
  }
  if ((m = /^\((\$?\d[\d,]*(?:\.\d*)?)\)$/.exec(s))) return -Number(m[1]!.replace(/[$,]/g, ""));
  const time = (t: string | undefined): number | undefined => {
    if (!t) return 0;
    const tm = /^(\d{1,2}):(\d{1,2})(?::(\d{1,2}(?:\.\d+)?))?\s*([AaPp][Mm])?$/.exec(t.trim());
    if (!tm) return undefined;
    let h = Number(tm[1]);
    if (tm[4]) {
      if (h > 12) return undefined;
      h = (h % 12) + (/p/i.test(tm[4]) ? 12 : 0);
    }
    return (h * 3600 + Number(tm[2]) * 60 + Number(tm[3] ?? 0)) / 86400;
  };
  // ISO date, optionally with a time
  if ((m = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](.+))?$/.exec(s))) {
    const t = time(m[4]);
    if (t === undefined) return undefined;
    return valid(Number(m[1]), Number(m[2]), Number(m[3]), t);
  }
  // m/d/yyyy (US locale, as the files' Excel ran), optionally with a time
  if ((m = /^(\d{1,2})[/-](\d{1,2})[/-](\d{2,4})(?:\s+(.+))?$/.exec(s))) {
    const t = time(m[4]);
    if (t === undefined) return undefined;
    let y = Number(m[3]);
    if (m[3]!.length <= 2) y += y < 30 ? 2000 : 1900;
    return valid(y, Number(m[1]), Number(m[2]), t);
  }
  // 5-Jan-2024, 5 Jan 2024, Jan 5, 2024, January 5 2024
  if ((m = /^(\d{1,2})[- ]([A-Za-z]{3,9})[- ](\d{2,4})$/.exec(s))) {
    const mo = MONTHS.indexOf(m[2]!.slice(0, 3).toLowerCase());
    if (mo >= 0) return valid(fixYear(m[3]!), mo + 1, Number(m[1]), 0);
  }
  if ((m = /^([A-Za-z]{3,9})\.? (\d{1,2}),? (\d{4})$/.exec(s))) {
    const mo = MONTHS.indexOf(m[1]!.slice(0, 3).toLowerCase());
    if (mo >= 0) return valid(Number(m[3]), mo + 1, Number(m[2]), 0);
  }
  const t = time(s);
  if (t !== undefined && /:/.test(s)) return t;
  return undefined;
}

function fixYear(y: string): number {
  const n = Number(y);
  return y.length <= 2 ? n + (n < 30 ? 2000 : 1900) : n;
}

function valid(y: number, m: number, d: number, t: number): number | undefined {
  if (m < 1 || m > 12 || d < 1 || d > 31) return undefined;
  const dt = new Date(Date.UTC(y, m - 1, d));
  if (dt.getUTCMonth() !== m - 1) return undefined;
  return dateSerial(y, m, d) + t;
}

/** A scalar as a number (text parsed, TRUE=1, blank=0); throws #VALUE! for other text, the error for errors. */
export function toNum(v: Scalar): number {
  if (typeof v === "number") return v;
  if (v === null) return 0;
  if (typeof v === "boolean") return v ? 1 : 0;
  if (v instanceof XlError) throw v;
  const n = parseNumberText(v);
  if (n === undefined) throw ERR.value;
  return n;
}

export function toText(v: Scalar): string {
  if (typeof v === "string") return v;
  if (v === null) return "";
  if (typeof v === "boolean") return v ? "TRUE" : "FALSE";
  if (v instanceof XlError) throw v;
  return numberText(v);
}

export function toBool(v: Scalar): boolean {
  if (typeof v === "boolean") return v;
  if (v === null) return false;
  if (typeof v === "number") return v !== 0;
  if (v instanceof XlError) throw v;
  const u = v.toUpperCase();
  if (u === "TRUE") return true;
  if (u === "FALSE") return false;
  throw ERR.value;
}

const rank = (v: Scalar): number => (typeof v === "number" ? 0 : typeof v === "string" ? 1 : 2);

/** Compare two non-error scalars as Excel's comparison operators do (text case-insensitively; number < text < logical). */
export function compare(a: Scalar, b: Scalar): number {
  if (a instanceof XlError) throw a;
  if (b instanceof XlError) throw b;
  if (a === null) a = typeof b === "string" ? "" : typeof b === "boolean" ? false : 0;
  if (b === null) b = typeof a === "string" ? "" : typeof a === "boolean" ? false : 0;
  const ra = rank(a);
  const rb = rank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  if (typeof a === "string") {
    const x = a.toLowerCase();
    const y = (b as string).toLowerCase();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const x = round15(Number(a));
  const y = round15(Number(b));
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Round to 15 significant digits, as Excel does before comparing and displaying. */
export function round15(n: number): number {
  if (n === 0 || !Number.isFinite(n)) return n;
  return Number(n.toPrecision(15));
}
