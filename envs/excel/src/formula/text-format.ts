/** Excel number format codes, as TEXT(value, format) applies them (en-US). */
import { numberText, round15, serialDate } from "./coerce.js";
import { ERR } from "./values.js";

type Tok = { lit: string } | { code: string };

/** January … December (the English names, as Excel's format codes and Salesforce's dates use). */
const MONTHS = Array.from({ length: 12 }, (_, m) =>
  new Date(Date.UTC(2000, m, 1)).toLocaleString("en-US", { month: "long", timeZone: "UTC" }),
);
const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

function splitSections(fmt: string): string[] {
  const out: string[] = [];
  let cur = "";
  let q = false;
  for (let i = 0; i < fmt.length; i++) {
    const ch = fmt[i]!;
    if (ch === '"') q = !q;
    if (ch === "\\" && !q) {
      cur += ch + (fmt[i + 1] ?? "");
      i++;
      continue;
    }
    if (ch === ";" && !q) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

function tokenize(sec: string): Tok[] {
  const toks: Tok[] = [];
  let i = 0;
  const lit = (s: string) => {
    const last = toks[toks.length - 1];
    if (last && "lit" in last) last.lit += s;
    else toks.push({ lit: s });
  };
  while (i < sec.length) {
    const ch = sec[i]!;
    const rest = sec.slice(i);
    if (ch === '"') {
      const end = sec.indexOf('"', i + 1);
      lit(sec.slice(i + 1, end < 0 ? sec.length : end));
      i = end < 0 ? sec.length : end + 1;
      continue;
    }
    if (ch === "\\") {
      lit(sec[i + 1] ?? "");
      i += 2;
      continue;
    }
    if (ch === "_") {
      lit(" ");
      i += 2;
      continue;
    }
    if (ch === "*") {
      i += 2;
      continue;
    }
    if (ch === "[") {
      const end = sec.indexOf("]", i);
      const inner = sec.slice(i + 1, end < 0 ? sec.length : end);
      if (/^(h+|m+|s+)$/i.test(inner)) toks.push({ code: `[${inner.toLowerCase()}]` });
      i = end < 0 ? sec.length : end + 1; // colours, conditions, locales: ignored
      continue;
    }
    let m = /^(AM\/PM|A\/P)/i.exec(rest);
    if (m) {
      toks.push({ code: m[1]!.toUpperCase() });
      i += m[1]!.length;
      continue;
    }
    m = /^(y+|m+|d+|h+|s+|e+)/i.exec(rest);
    if (m && !/^e[+-]/i.test(rest)) {
      toks.push({ code: m[1]!.toLowerCase() });
      i += m[1]!.length;
      continue;
    }
    m = /^(E[+-])/i.exec(rest);
    if (m) {
      toks.push({ code: m[1]!.toUpperCase() });
      i += 2;
      continue;
    }
    if ("0#?.,%@/".includes(ch)) {
      toks.push({ code: ch });
      i++;
      continue;
    }
    lit(ch);
    i++;
  }
  return toks;
}

const isDateTok = (t: Tok) => "code" in t && /^(y+|m+|d+|h+|s+|AM\/PM|A\/P|\[h+\]|\[m+\]|\[s+\])$/.test(t.code);

/** TEXT(value, format). */
export function formatText(value: number | string | boolean, fmt: string): string {
  if (typeof value === "boolean") return value ? "TRUE" : "FALSE";
  const sections = splitSections(fmt);
  if (typeof value === "string") {
    const sec = sections[3] ?? (sections.length === 1 && sections[0]!.includes("@") ? sections[0] : undefined);
    if (sec === undefined) return value;
    return tokenize(sec)
      .map((t) => ("lit" in t ? t.lit : t.code === "@" ? value : ""))
      .join("");
  }
  let sec = sections[0]!;
  let v = value;
  let neg = false;
  if (v < 0 && sections.length >= 2 && sections[1] !== "") {
    sec = sections[1]!;
    v = -v;
  } else if (v < 0) {
    neg = true;
    v = -v;
  }
  if (v === 0 && sections.length >= 3) sec = sections[2]!;
  if (/^general$/i.test(sec.trim()) || sec === "") return (neg ? "-" : "") + (sec === "" ? "" : numberText(v));
  const toks = tokenize(sec);
  if (toks.some(isDateTok)) {
    if (neg) throw ERR.value;
    return formatDate(v, toks);
  }
  const s = formatNumber(v, toks);
  return (neg && /[1-9]/.test(s) ? "-" : neg && sections.length < 2 ? "-" : "") + s;
}

function pad(n: number, w: number): string {
  return String(n).padStart(w, "0");
}

function formatDate(serial: number, toks: Tok[]): string {
  const hasSubSec = false;
  const hasAmPm = toks.some((t) => "code" in t && (t.code === "AM/PM" || t.code === "A/P"));
  let secs = Math.round(round15((serial - Math.floor(serial)) * 86400));
  let day = Math.floor(serial);
  if (secs >= 86400) {
    secs -= 86400;
    day++;
  }
  const { y, m, d, dow } = serialDate(day);
  const H = Math.floor(secs / 3600);
  const M = Math.floor((secs % 3600) / 60);
  const S = secs % 60;
  const totalSecs = Math.round(serial * 86400);
  void hasSubSec;
  const codes = toks.map((t) => ("code" in t ? t.code : ""));
  const out: string[] = [];
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if ("lit" in t) {
      out.push(t.lit);
      continue;
    }
    const c = t.code;
    if (c[0] === "m" && c.length <= 2) {
      // minutes when after an hour or before a second
      let prev = "";
      for (let j = i - 1; j >= 0; j--)
        if (codes[j]) {
          prev = codes[j]!;
          break;
        }
      let next = "";
      for (let j = i + 1; j < toks.length; j++)
        if (codes[j]) {
          next = codes[j]!;
          break;
        }
      if (/^h|^\[h/.test(prev) || /^s|^\[s/.test(next)) {
        out.push(c.length === 2 ? pad(M, 2) : String(M));
        continue;
      }
    }
    switch (c) {
      case "yy":
      case "y":
        out.push(pad(y % 100, 2));
        break;
      case "yyy":
      case "yyyy":
        out.push(String(y));
        break;
      case "m":
        out.push(String(m));
        break;
      case "mm":
        out.push(pad(m, 2));
        break;
      case "mmm":
        out.push(MONTHS[m - 1]!.slice(0, 3));
        break;
      case "mmmmm":
        out.push(MONTHS[m - 1]![0]!);
        break;
      case "d":
        out.push(String(d));
        break;
      case "dd":
        out.push(pad(d, 2));
        break;
      case "ddd":
        out.push(DAYS[dow]!.slice(0, 3));
        break;
      case "h":
      case "hh": {
        const h = hasAmPm ? H % 12 || 12 : H;
        out.push(c === "hh" ? pad(h, 2) : String(h));
        break;
      }
      case "s":
        out.push(String(S));
        break;
      case "ss":
        out.push(pad(S, 2));
        break;
      case "AM/PM":
        out.push(H < 12 ? "AM" : "PM");
        break;
      case "A/P":
        out.push(H < 12 ? "A" : "P");
        break;
      case "[h]":
      case "[hh]":
        out.push(pad(Math.floor(totalSecs / 3600), c.length - 2));
        break;
      case "[m]":
      case "[mm]":
        out.push(pad(Math.floor(totalSecs / 60), c.length - 2));
        break;
      case "[s]":
      case "[ss]":
        out.push(pad(totalSecs, c.length - 2));
        break;
      default:
        if (/^m{4,}$/.test(c)) out.push(MONTHS[m - 1]!);
        else if (/^d{4,}$/.test(c)) out.push(DAYS[dow]!);
        else if (/^y+$/.test(c)) out.push(String(y));
        else out.push(c);
    }
  }
  return out.join("");
}

function formatNumber(v: number, toks: Tok[]): string {
  const isPh = (t: Tok) => "code" in t && (t.code === "0" || t.code === "#" || t.code === "?");
  const pct = toks.filter((t) => "code" in t && t.code === "%").length;
  v *= 100 ** pct;
  const firstPh = toks.findIndex(isPh);
  if (firstPh < 0) {
    return toks
      .map((t) =>
        "lit" in t ? t.lit : t.code === "%" ? "%" : t.code === "." ? "." : t.code === "@" ? numberText(v) : "",
      )
      .join("");
  }
  let lastPh = toks.length - 1;
  while (lastPh >= 0 && !isPh(toks[lastPh]!)) lastPh--;
  const dot = toks.findIndex((t, i) => i >= firstPh && "code" in t && t.code === ".");
  const expIdx = toks.findIndex((t) => "code" in t && (t.code === "E+" || t.code === "E-"));
  // thousands: a comma between placeholders; scaling: commas right after the last integer placeholder
  const intEnd = dot >= 0 ? dot : expIdx >= 0 ? expIdx : lastPh + 1;
  let grouping = false;
  let scale = 0;
  for (let i = firstPh; i < toks.length; i++) {
    const t = toks[i]!;
    if ("code" in t && t.code === ",") {
      if (i < intEnd && toks.slice(i + 1, intEnd).some(isPh)) grouping = true;
      else if (!toks.slice(i + 1).some(isPh)) scale++; // commas after the last digit placeholder divide by 1000
    }
  }
  v /= 1000 ** scale;
  const intPh = toks.slice(0, intEnd).filter(isPh) as Array<{ code: string }>;
  const fracEnd = expIdx >= 0 ? expIdx : toks.length;
  const fracPh = dot >= 0 ? (toks.slice(dot + 1, fracEnd).filter(isPh) as Array<{ code: string }>) : [];
  let exponent = 0;
  if (expIdx >= 0 && v !== 0) {
    const intDigits = Math.max(1, intPh.length);
    exponent = Math.floor(Math.log10(v)) - (intDigits - 1);
    v /= 10 ** exponent;
  }
  const rounded = roundHalf(v, fracPh.length);
  let [ip, fp = ""] = rounded.split(".");
  if (ip === "0" && !intPh.some((t) => t.code === "0")) ip = "";
  fp = fp.padEnd(fracPh.length, "0");
  // trailing optional decimals
  let fracOut = "";
  {
    let keep = fracPh.length;
    while (keep > 0 && fp[keep - 1] === "0" && fracPh[keep - 1]!.code !== "0") keep--;
    for (let i = 0; i < fracPh.length; i++) {
      if (i < keep) fracOut += fp[i];
      else fracOut += fracPh[i]!.code === "?" ? " " : "";
    }
  }
  // integer digits, right to left into the placeholders
  const minInt = intPh.filter((t) => t.code === "0").length;
  let digits = ip.padStart(minInt, "0");
  if (grouping) digits = digits.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  const out: string[] = [];
  let placedInt = false;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if ("lit" in t) {
      if (i > firstPh && i < intEnd && !placedInt) continue;
      out.push(t.lit);
      continue;
    }
    if (i < intEnd && (isPh(t) || t.code === ",")) {
      if (!placedInt && isPh(t)) {
        out.push(digits);
        placedInt = true;
      }
      continue;
    }
    if (t.code === ".") {
      if (i === dot) out.push(".");
      continue;
    }
    if (i > dot && dot >= 0 && i < fracEnd && isPh(t)) {
      if (i === toks.findIndex((x, k) => k > dot && isPh(x))) out.push(fracOut);
      continue;
    }
    if (t.code === "%") out.push("%");
    else if (t.code === "E+" || t.code === "E-") {
      const expPh = toks.slice(i + 1).filter(isPh).length;
      out.push(`E${exponent < 0 ? "-" : t.code === "E+" ? "+" : ""}${String(Math.abs(exponent)).padStart(expPh, "0")}`);
      break;
    } else if (t.code === "/") out.push("/");
  }
  return out.join("");
}

/** Half away from zero at `d` decimals, as a plain decimal string. */
function roundHalf(v: number, d: number): string {
  const p = 10 ** d;
  const y = round15(v * p);
  const r = Math.floor(y + 0.5);
  const s = (r / p).toFixed(d);
  return s;
}
