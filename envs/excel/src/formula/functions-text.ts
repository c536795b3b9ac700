/** Text, date/time and information functions. */
import { dateSerial, numberText, parseNumberText, round15, serialDate, toBool, toNum, toText } from "./coerce.js";
import { wildcardRegex } from "./criteria.js";
import { def, flat, numbers, scalarFn } from "./fn-helpers.js";
import type { FnDef } from "./function-types.js";
import { formatText } from "./text-format.js";
import { ERR, Matrix, Ref, type Scalar, XlError } from "./values.js";

const opt = (a: Scalar[], i: number, d: number) => (a[i] === undefined || a[i] === null ? d : toNum(a[i]!));
const cut = (n: number) => {
  if (n < 0) throw ERR.value;
  return Math.trunc(n);
};

function findPos(needle: string, hay: string, start: number, wild: boolean): number {
  if (start < 1 || start > hay.length + 1) throw ERR.value;
  if (!wild) {
    const i = hay.indexOf(needle, start - 1);
    if (i < 0) throw ERR.value;
    return i + 1;
  }
  if (needle === "") return start;
  const re = wildcardRegex(needle);
  const src = re.source.slice(1, -1);
  const g = new RegExp(src, "i");
  const m = g.exec(hay.slice(start - 1));
  if (!m) throw ERR.value;
  return m.index + start;
}

function daysInMonth(y: number, m: number): number {
  return new Date(Date.UTC(y, m, 0)).getUTCDate();
}

function edate(serial: number, months: number, end: boolean): number {
  const { y, m, d } = serialDate(serial);
  const total = y * 12 + (m - 1) + Math.trunc(months);
  const ny = Math.floor(total / 12);
  const nm = (total % 12) + 1;
  const dd = end ? daysInMonth(ny, nm) : Math.min(d, daysInMonth(ny, nm));
  const r = dateSerial(ny, nm, dd);
  if (r < 0) throw ERR.num;
  return r;
}

function weekday(serial: number, type: number): number {
  const dow = serialDate(serial).dow; // 0 = Sunday
  switch (type) {
    case 1:
    case 17:
      return dow + 1;
    case 2:
    case 11:
      return ((dow + 6) % 7) + 1;
    case 3:
      return (dow + 6) % 7;
    case 12:
    case 13:
    case 14:
    case 15:
    case 16:
      return ((dow - (type - 10) + 7) % 7) + 1;
    default:
      throw ERR.num;
  }
}

function holidays(v: unknown, ev: Parameters<NonNullable<FnDef["fn"]>>[1]): Set<number> {
  if (v === undefined || v === null) return new Set();
  return new Set(numbers([v as Scalar], ev).map(Math.floor));
}

const isWorkday = (s: number, hol: Set<number>) => {
  const dow = serialDate(s).dow;
  return dow !== 0 && dow !== 6 && !hol.has(s);
};

function dateText(s: string): number {
  const n = parseNumberText(s);
  if (n === undefined || !/[/\-a-z]/i.test(s)) throw ERR.value;
  return n;
}

export const TEXT_FNS: Record<string, FnDef> = {
  LEFT: scalarFn(1, 2, (a) => toText(a[0]!).slice(0, cut(opt(a, 1, 1)))),
  RIGHT: scalarFn(1, 2, (a) => {
    const s = toText(a[0]!);
    const n = cut(opt(a, 1, 1));
    return n === 0 ? "" : s.slice(-n);
  }),
  MID: scalarFn(3, 3, (a) => {
    const s = toText(a[0]!);
    const st = Math.trunc(toNum(a[1]!));
    const n = cut(toNum(a[2]!));
    if (st < 1) throw ERR.value;
    return s.substr(st - 1, n);
  }),
  LEN: scalarFn(1, 1, (a) => toText(a[0]!).length),
  UPPER: scalarFn(1, 1, (a) => toText(a[0]!).toUpperCase()),
  LOWER: scalarFn(1, 1, (a) => toText(a[0]!).toLowerCase()),
  PROPER: scalarFn(1, 1, (a) =>
    toText(a[0]!)
      .toLowerCase()
      .replace(/(^|[^A-Za-z\u00c0-\u024f])([a-z\u00e0-\u024f])/g, (_m, p: string, c: string) => p + c.toUpperCase()),
  ),
  TRIM: scalarFn(1, 1, (a) => toText(a[0]!).replace(/ +/g, " ").replace(/^ | $/g, "")),
  CLEAN: scalarFn(1, 1, (a) => toText(a[0]!).replace(/[\x00-\x1f]/g, "")),
  SUBSTITUTE: scalarFn(3, 4, (a) => {
    const s = toText(a[0]!);
    const from = toText(a[1]!);
    const to = toText(a[2]!);
    if (from === "") return s;
    if (a[3] === undefined || a[3] === null) return s.split(from).join(to);
    const k = Math.trunc(toNum(a[3]));
    if (k < 1) throw ERR.value;
    let idx = -1;
    for (let i = 0; i < k; i++) {
      idx = s.indexOf(from, idx + 1);
      if (idx < 0) return s;
    }
    return s.slice(0, idx) + to + s.slice(idx + from.length);
  }),
  REPLACE: scalarFn(4, 4, (a) => {
    const s = toText(a[0]!);
    const st = Math.trunc(toNum(a[1]!));
    const n = cut(toNum(a[2]!));
    if (st < 1) throw ERR.value;
    return s.slice(0, st - 1) + toText(a[3]!) + s.slice(st - 1 + n);
  }),
  FIND: scalarFn(2, 3, (a) => findPos(toText(a[0]!), toText(a[1]!), Math.trunc(opt(a, 2, 1)), false)),
  SEARCH: scalarFn(2, 3, (a) =>
    findPos(toText(a[0]!).toLowerCase(), toText(a[1]!).toLowerCase(), Math.trunc(opt(a, 2, 1)), true),
  ),
  CONCATENATE: scalarFn(1, 255, (a) => a.map(toText).join("")),
  CONCAT: def(1, 255, (a, ev) =>
    a
      .flatMap((v) => flat(v, ev))
      .map(toText)
      .join(""),
  ),
  TEXTJOIN: def(3, 255, (a, ev) => {
    const delim = toText(ev.scalar(a[0]!));
    const skip = toBool(ev.scalar(a[1]!));
    const parts = a
      .slice(2)
      .flatMap((v) => flat(v, ev))
      .map(toText)
      .filter((s) => !skip || s !== "");
    const s = parts.join(delim);
    if (s.length > 32767) throw ERR.value;
    return s;
  }),
  REPT: scalarFn(2, 2, (a) => {
    const n = Math.trunc(toNum(a[1]!));
    if (n < 0) throw ERR.value;
    const s = toText(a[0]!).repeat(n);
    if (s.length > 32767) throw ERR.value;
    return s;
  }),
  TEXT: scalarFn(2, 2, (a) => {
    const v = a[0]!;
    if (v instanceof XlError) throw v;
    const f = toText(a[1]!);
    if (typeof v === "string") {
      const n = parseNumberText(v);
      return formatText(n === undefined ? v : n, f);
    }
    return formatText(v === null ? 0 : v, f);
  }),
  VALUE: scalarFn(1, 1, (a) => {
    const v = a[0]!;
    if (typeof v === "number") return v;
    if (v === null) return 0;
    if (typeof v === "boolean") throw ERR.value;
    return toNum(v);
  }),
  NUMBERVALUE: scalarFn(1, 3, (a) => toNum(toText(a[0]!).replace(/\s/g, ""))),
  EXACT: scalarFn(2, 2, (a) => toText(a[0]!) === toText(a[1]!)),
  CHAR: scalarFn(1, 1, (a) => {
    const n = Math.trunc(toNum(a[0]!));
    if (n < 1 || n > 255) throw ERR.value;
    return n < 128 ? String.fromCharCode(n) : new TextDecoder("windows-1252").decode(new Uint8Array([n]));
  }),
  UNICHAR: scalarFn(1, 1, (a) => String.fromCodePoint(Math.trunc(toNum(a[0]!)))),
  CODE: scalarFn(1, 1, (a) => {
    const s = toText(a[0]!);
    if (!s) throw ERR.value;
    return s.charCodeAt(0);
  }),
  UNICODE: scalarFn(1, 1, (a) => {
    const s = toText(a[0]!);
    if (!s) throw ERR.value;
    return s.codePointAt(0)!;
  }),
  T: scalarFn(1, 1, (a) => (typeof a[0] === "string" ? a[0] : "")),
  N: scalarFn(1, 1, (a) => (typeof a[0] === "number" ? a[0] : a[0] === true ? 1 : 0)),
  FIXED: scalarFn(1, 3, (a) => {
    const d = opt(a, 1, 2);
    const noCommas = a[2] !== undefined && a[2] !== null && toBool(a[2]);
    return formatText(toNum(a[0]!), `${noCommas ? "0" : "#,##0"}${d > 0 ? `.${"0".repeat(d)}` : ""}`);
  }),
  DOLLAR: scalarFn(1, 2, (a) => {
    const d = opt(a, 1, 2);
    const f = `$#,##0${d > 0 ? `.${"0".repeat(d)}` : ""}`;
    return formatText(toNum(a[0]!), `${f};(${f})`);
  }),
  HYPERLINK: scalarFn(1, 2, (a) => (a[1] === undefined ? toText(a[0]!) : a[1] === null ? 0 : a[1])),
  TEXTBEFORE: scalarFn(2, 6, (a) => textAround(a, true)),
  TEXTAFTER: scalarFn(2, 6, (a) => textAround(a, false)),
  // dates and times
  DATE: scalarFn(3, 3, (a) => {
    let y = Math.trunc(toNum(a[0]!));
    if (y < 1900) y += 1900;
    const r = dateSerial(y, Math.trunc(toNum(a[1]!)), Math.trunc(toNum(a[2]!)));
    if (r < 0 || y > 9999) throw ERR.num;
    return r;
  }),
  TIME: scalarFn(3, 3, (a) => {
    const s = Math.trunc(toNum(a[0]!)) * 3600 + Math.trunc(toNum(a[1]!)) * 60 + Math.trunc(toNum(a[2]!));
    if (s < 0) throw ERR.num;
    return (s % 86400) / 86400;
  }),
  YEAR: scalarFn(1, 1, (a) => serialDate(dateArg(a[0]!)).y),
  MONTH: scalarFn(1, 1, (a) => serialDate(dateArg(a[0]!)).m),
  DAY: scalarFn(1, 1, (a) => serialDate(dateArg(a[0]!)).d),
  HOUR: scalarFn(1, 1, (a) => Math.floor(secsOf(a[0]!) / 3600)),
  MINUTE: scalarFn(1, 1, (a) => Math.floor((secsOf(a[0]!) % 3600) / 60)),
  SECOND: scalarFn(1, 1, (a) => secsOf(a[0]!) % 60),
  TODAY: def(0, 0, () => Math.floor(nowSerial())),
  NOW: def(0, 0, () => nowSerial()),
  EDATE: scalarFn(2, 2, (a) => edate(dateArg(a[0]!), toNum(a[1]!), false)),
  EOMONTH: scalarFn(2, 2, (a) => edate(dateArg(a[0]!), toNum(a[1]!), true)),
  WEEKDAY: scalarFn(1, 2, (a) => weekday(dateArg(a[0]!), opt(a, 1, 1))),
  WEEKNUM: scalarFn(1, 2, (a) => {
    const s = Math.floor(dateArg(a[0]!));
    const type = opt(a, 1, 1);
    const { y } = serialDate(s);
    const jan1 = dateSerial(y, 1, 1);
    if (type === 21) {
      // ISO week
      const dow = ((serialDate(s).dow + 6) % 7) + 1;
      const th = s - dow + 4;
      const ty = serialDate(th).y;
      return Math.floor((th - dateSerial(ty, 1, 1)) / 7) + 1;
    }
    const start = type === 2 || type === 11 ? 1 : type >= 12 && type <= 17 ? type - 10 : 0;
    const dow0 = (serialDate(jan1).dow - start + 7) % 7;
    return Math.floor((s - jan1 + dow0) / 7) + 1;
  }),
  ISOWEEKNUM: scalarFn(1, 1, (a) => {
    const s = Math.floor(dateArg(a[0]!));
    const dow = ((serialDate(s).dow + 6) % 7) + 1;
    const th = s - dow + 4;
    return Math.floor((th - dateSerial(serialDate(th).y, 1, 1)) / 7) + 1;
  }),
  DAYS: scalarFn(2, 2, (a) => Math.floor(dateArg(a[0]!)) - Math.floor(dateArg(a[1]!))),
  DATEDIF: scalarFn(3, 3, (a) => {
    const s = Math.floor(dateArg(a[0]!));
    const e = Math.floor(dateArg(a[1]!));
    if (s > e) throw ERR.num;
    const A = serialDate(s);
    const B = serialDate(e);
    const unit = toText(a[2]!).toUpperCase();
    let months = (B.y - A.y) * 12 + (B.m - A.m);
    if (B.d < A.d) months--;
    switch (unit) {
      case "D":
        return e - s;
      case "M":
        return months;
      case "Y":
        return Math.floor(months / 12);
      case "YM":
        return months % 12;
      case "MD": {
        if (B.d >= A.d) return B.d - A.d;
        const pm = B.m === 1 ? 12 : B.m - 1;
        const py = B.m === 1 ? B.y - 1 : B.y;
        return daysInMonth(py, pm) - A.d + B.d;
      }
      case "YD": {
        let st = dateSerial(B.y, A.m, A.d);
        if (st > e) st = dateSerial(B.y - 1, A.m, A.d);
        return e - st;
      }
      default:
        throw ERR.num;
    }
  }),
  DATEVALUE: scalarFn(1, 1, (a) => Math.floor(dateText(toText(a[0]!)))),
  TIMEVALUE: scalarFn(1, 1, (a) => {
    const n = parseNumberText(toText(a[0]!));
    if (n === undefined) throw ERR.value;
    return n - Math.floor(n);
  }),
  NETWORKDAYS: {
    min: 2,
    max: 3,
    scalars: [0, 1],
    fn: (a, ev) => {
      let s = Math.floor(dateArg(ev.scalar(a[0]!)));
      let e = Math.floor(dateArg(ev.scalar(a[1]!)));
      const hol = holidays(a[2], ev);
      let sign = 1;
      if (s > e) {
        [s, e] = [e, s];
        sign = -1;
      }
      let n = 0;
      for (let d = s; d <= e; d++) if (isWorkday(d, hol)) n++;
      return sign * n;
    },
  },
  WORKDAY: {
    min: 2,
    max: 3,
    scalars: [0, 1],
    fn: (a, ev) => {
      let d = Math.floor(dateArg(ev.scalar(a[0]!)));
      let k = Math.trunc(toNum(ev.scalar(a[1]!)));
      const hol = holidays(a[2], ev);
      const step = k < 0 ? -1 : 1;
      while (k !== 0) {
        d += step;
        if (isWorkday(d, hol)) k -= step;
      }
      return d;
    },
  },
  YEARFRAC: scalarFn(2, 3, (a) => {
    let s = Math.floor(dateArg(a[0]!));
    let e = Math.floor(dateArg(a[1]!));
    if (s > e) [s, e] = [e, s];
    const basis = opt(a, 2, 0);
    const A = serialDate(s);
    const B = serialDate(e);
    if (basis === 0) {
      let d1 = A.d;
      let d2 = B.d;
      if (d1 === 31) d1 = 30;
      if (d2 === 31 && d1 >= 30) d2 = 30;
      return ((B.y - A.y) * 360 + (B.m - A.m) * 30 + (d2 - d1)) / 360;
    }
    if (basis === 2) return (e - s) / 360;
    if (basis === 3) return (e - s) / 365;
    throw ERR.num;
  }),
  // information
  ISBLANK: scalarFn(1, 1, (a) => a[0] === null),
  ISNUMBER: scalarFn(1, 1, (a) => typeof a[0] === "number"),
  ISTEXT: scalarFn(1, 1, (a) => typeof a[0] === "string"),
  ISNONTEXT: scalarFn(1, 1, (a) => typeof a[0] !== "string"),
  ISLOGICAL: scalarFn(1, 1, (a) => typeof a[0] === "boolean"),
  ISERROR: scalarFn(1, 1, (a) => a[0] instanceof XlError),
  ISERR: scalarFn(1, 1, (a) => a[0] instanceof XlError && a[0].code !== "#N/A"),
  ISNA: scalarFn(1, 1, (a) => a[0] instanceof XlError && a[0].code === "#N/A"),
  ISEVEN: scalarFn(1, 1, (a) => Math.trunc(toNum(a[0]!)) % 2 === 0),
  ISODD: scalarFn(1, 1, (a) => Math.abs(Math.trunc(toNum(a[0]!))) % 2 === 1),
  NA: def(0, 0, () => ERR.na),
  "ERROR.TYPE": scalarFn(1, 1, (a) => {
    const v = a[0];
    if (!(v instanceof XlError)) throw ERR.na;
    const i = ["#NULL!", "#DIV/0!", "#VALUE!", "#REF!", "#NAME?", "#NUM!", "#N/A"].indexOf(v.code);
    if (i < 0) throw ERR.na;
    return i + 1;
  }),
  TYPE: def(1, 1, (a, ev) => {
    const v = a[0]!;
    if (v instanceof Matrix || (v instanceof Ref && !v.single)) return 64;
    const s = ev.scalar(v);
    return typeof s === "number" || s === null ? 1 : typeof s === "string" ? 2 : typeof s === "boolean" ? 4 : 16;
  }),
};

function textAround(a: Scalar[], before: boolean): Scalar {
  const s = toText(a[0]!);
  const d = toText(a[1]!);
  let k = Math.trunc(opt(a, 2, 1));
  const ci = opt(a, 3, 0) === 1;
  if (k === 0) throw ERR.value;
  const hay = ci ? s.toLowerCase() : s;
  const nd = ci ? d.toLowerCase() : d;
  let idx = -1;
  if (k > 0) {
    let from = 0;
    while (k-- > 0) {
      idx = hay.indexOf(nd, from);
      if (idx < 0) break;
      from = idx + Math.max(nd.length, 1);
    }
  } else {
    let from = hay.length;
    while (k++ < 0) {
      idx = hay.lastIndexOf(nd, from);
      if (idx < 0) break;
      from = idx - 1;
    }
  }
  if (idx < 0) {
    if (a[5] !== undefined) return a[5];
    throw ERR.na;
  }
  return before ? s.slice(0, idx) : s.slice(idx + d.length);
}

function dateArg(v: Scalar): number {
  if (typeof v === "string") {
    const n = parseNumberText(v);
    if (n === undefined) throw ERR.value;
    return n;
  }
  const n = toNum(v);
  if (n < 0) throw ERR.num;
  return n;
}

function secsOf(v: Scalar): number {
  const n = dateArg(v);
  return Math.round(round15((n - Math.floor(n)) * 86400)) % 86400;
}

function nowSerial(): number {
  const d = new Date();
  const local = Date.UTC(d.getFullYear(), d.getMonth(), d.getDate(), d.getHours(), d.getMinutes(), d.getSeconds());
  return (local - Date.UTC(1899, 11, 30)) / 86400000;
}

export { numberText };
