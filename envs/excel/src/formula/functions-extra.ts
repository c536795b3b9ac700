/** AGGREGATE, FREQUENCY, MMULT, the .INTL workday functions, DAYS360, trigonometry, base conversion, and the
 * Excel 365 array shapers (SORTBY, TEXTSPLIT, TAKE, DROP, VSTACK, HSTACK, CHOOSECOLS, CHOOSEROWS, TOCOL). */
import { compare, serialDate, toBool, toNum, toText } from "./coerce.js";
import type { Evaluator } from "./evaluate.js";
import { def, num, numbers, optNum, scalarFn } from "./fn-helpers.js";
import type { FnDef } from "./function-types.js";
import { mode, percentile, variance } from "./functions-math.js";
import { ERR, Matrix, Ref, type Scalar, type Value, XlError } from "./values.js";

function aggValues(v: Value, ev: Evaluator, ignoreErrors: boolean): number[] {
  const out: number[] = [];
  const xs = v instanceof Ref || v instanceof Matrix ? ev.toMatrix(v).flat() : [v];
  for (const x of xs) {
    if (typeof x === "number") out.push(x);
    else if (x instanceof XlError) {
      if (!ignoreErrors) throw x;
    }
  }
  return out;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

function aggregate(a: Value[], ev: Evaluator): Scalar {
  const code = Math.trunc(num(a[0]!, ev));
  const opt = Math.trunc(optNum(a[1], ev, 0));
  const ign = [2, 3, 6, 7].includes(opt);
  if (code >= 14 && code <= 19) {
    const xs = aggValues(a[2]!, ev, ign);
    const k = num(a[3] ?? null, ev);
    const s = [...xs].sort((x, y) => x - y);
    switch (code) {
      case 14: {
        const i = Math.ceil(k);
        if (i < 1 || i > s.length) throw ERR.num;
        return s[s.length - i]!;
      }
      case 15: {
        const i = Math.ceil(k);
        if (i < 1 || i > s.length) throw ERR.num;
        return s[i - 1]!;
      }
      case 16:
        return percentile(xs, k, false);
      case 17:
        return percentile(xs, Math.trunc(k) / 4, false);
      case 18:
        return percentile(xs, k, true);
      default:
        return percentile(xs, Math.trunc(k) / 4, true);
    }
  }
  const xs = a.slice(2).flatMap((v) => aggValues(v, ev, ign));
  switch (code) {
    case 1:
      if (!xs.length) throw ERR.div0;
      return sum(xs) / xs.length;
    case 2:
      return xs.length;
    case 3:
      return a
        .slice(2)
        .flatMap((v) => (v instanceof Ref || v instanceof Matrix ? ev.toMatrix(v).flat() : [v]))
        .filter((x) => x !== null && !(ign && x instanceof XlError)).length;
    case 4:
      return xs.length ? Math.max(...xs) : 0;
    case 5:
      return xs.length ? Math.min(...xs) : 0;
    case 6:
      return xs.reduce((p, x) => p * x, 1);
    case 7:
      return Math.sqrt(variance(xs, true));
    case 8:
      return Math.sqrt(variance(xs, false));
    case 9:
      return sum(xs);
    case 10:
      return variance(xs, true);
    case 11:
      return variance(xs, false);
    case 12:
      return percentile(xs, 0.5, false);
    case 13:
      return mode(xs);
    default:
      throw ERR.value;
  }
}

/** Weekend days (0 = Sunday … 6 = Saturday) of a WORKDAY.INTL / NETWORKDAYS.INTL weekend argument. */
function weekend(v: Scalar | undefined): Set<number> {
  if (v === undefined || v === null) return new Set([0, 6]);
  if (typeof v === "string") {
    if (!/^[01]{7}$/.test(v) || v === "1111111") throw ERR.value;
    // Monday first
    return new Set([...v].flatMap((ch, i) => (ch === "1" ? [(i + 1) % 7] : [])));
  }
  const n = Math.trunc(toNum(v));
  if (n >= 1 && n <= 7) return new Set([(n + 5) % 7, (n + 6) % 7]); // 1: Sat+Sun, 2: Sun+Mon, …
  if (n >= 11 && n <= 17) return new Set([n - 11]); // 11: Sunday only, 12: Monday only, …
  throw ERR.num;
}

function holidays(v: Value | undefined, ev: Evaluator): Set<number> {
  if (v === undefined || v === null) return new Set();
  return new Set(numbers([v], ev).map(Math.floor));
}

function dateNum(v: Scalar): number {
  const n = Math.floor(toNum(v));
  if (n < 0) throw ERR.num;
  return n;
}

const transpose = (d: Scalar[][]): Scalar[][] => (d[0] ?? []).map((_, j) => d.map((r) => r[j]!));

function pick<T>(list: T[], idx: number[]): T[] {
  return idx.map((i) => {
    const k = i < 0 ? list.length + i : i - 1;
    if (i === 0 || k < 0 || k >= list.length) throw ERR.value;
    return list[k]!;
  });
}

function stack(ms: Matrix[], vertical: boolean): Matrix {
  if (!vertical)
    return new Matrix(
      transpose(
        stack(
          ms.map((m) => new Matrix(transpose(m.data))),
          true,
        ).data,
      ),
    );
  const cols = Math.max(...ms.map((m) => m.cols));
  const rows: Scalar[][] = [];
  for (const m of ms)
    for (const r of m.data) rows.push(Array.from({ length: cols }, (_, j) => (j < r.length ? r[j]! : ERR.na)));
  return new Matrix(rows);
}

export const EXTRA_FNS: Record<string, FnDef> = {
  AGGREGATE: def(3, 253, (a, ev) => aggregate(a, ev), { arrayArgs: true }),
  FREQUENCY: def(
    2,
    2,
    (a, ev) => {
      const data = numbers([a[0]!], ev);
      const bins = numbers([a[1]!], ev);
      const order = bins.map((b, i) => [b, i] as const).sort((x, y) => x[0] - y[0]);
      const counts = new Array<number>(bins.length + 1).fill(0);
      for (const x of data) {
        const k = order.findIndex(([b]) => x <= b);
        counts[k < 0 ? bins.length : order[k]![1]]!++;
      }
      return new Matrix(counts.map((c) => [c]));
    },
    { arrayArgs: true },
  ),
  MMULT: def(
    2,
    2,
    (a, ev) => {
      const x = ev.toMatrix(a[0]!);
      const y = ev.toMatrix(a[1]!);
      if (x.cols !== y.rows) throw ERR.value;
      const out: Scalar[][] = [];
      for (let i = 0; i < x.rows; i++) {
        const row: Scalar[] = [];
        for (let j = 0; j < y.cols; j++) {
          let s = 0;
          for (let k = 0; k < x.cols; k++) {
            const p = x.data[i]![k]!;
            const q = y.data[k]![j]!;
            if (typeof p !== "number" || typeof q !== "number") throw ERR.value;
            s += p * q;
          }
          row.push(s);
        }
        out.push(row);
      }
      return new Matrix(out);
    },
    { arrayArgs: true },
  ),
  "NETWORKDAYS.INTL": {
    min: 2,
    max: 4,
    scalars: [0, 1],
    fn: (a, ev) => {
      let s = dateNum(ev.scalar(a[0]!));
      let e = dateNum(ev.scalar(a[1]!));
      const wk = weekend(a[2] === undefined ? undefined : ev.scalar(a[2]));
      const hol = holidays(a[3], ev);
      let sign = 1;
      if (s > e) {
        [s, e] = [e, s];
        sign = -1;
      }
      let n = 0;
      for (let d = s; d <= e; d++) if (!wk.has(serialDate(d).dow) && !hol.has(d)) n++;
      return sign * n;
    },
  },
  "WORKDAY.INTL": {
    min: 2,
    max: 4,
    scalars: [0, 1],
    fn: (a, ev) => {
      let d = dateNum(ev.scalar(a[0]!));
      let k = Math.trunc(toNum(ev.scalar(a[1]!)));
      const wk = weekend(a[2] === undefined ? undefined : ev.scalar(a[2]));
      const hol = holidays(a[3], ev);
      const step = k < 0 ? -1 : 1;
      while (k !== 0) {
        d += step;
        if (!wk.has(serialDate(d).dow) && !hol.has(d)) k -= step;
      }
      return d;
    },
  },
  DAYS360: scalarFn(2, 3, (a) => {
    const A = serialDate(dateNum(a[0]!));
    const B = serialDate(dateNum(a[1]!));
    const eu = a[2] !== undefined && a[2] !== null && toBool(a[2]);
    let d1 = A.d;
    let d2 = B.d;
    if (eu) {
      if (d1 === 31) d1 = 30;
      if (d2 === 31) d2 = 30;
    } else {
      const lastFeb = (x: { y: number; m: number; d: number }) =>
        x.m === 2 && x.d === new Date(Date.UTC(x.y, 2, 0)).getUTCDate();
      if (lastFeb(A) && lastFeb(B)) d2 = 30;
      if (lastFeb(A)) d1 = 30;
      if (d2 === 31 && d1 >= 30) d2 = 30;
      if (d1 === 31) d1 = 30;
    }
    return (B.y - A.y) * 360 + (B.m - A.m) * 30 + (d2 - d1);
  }),
  COMBIN: scalarFn(2, 2, (a) => {
    const n = Math.trunc(toNum(a[0]!));
    const k = Math.trunc(toNum(a[1]!));
    if (n < 0 || k < 0 || k > n) throw ERR.num;
    let r = 1;
    for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
    return Math.round(r);
  }),
  SIN: scalarFn(1, 1, (a) => Math.sin(toNum(a[0]!))),
  COS: scalarFn(1, 1, (a) => Math.cos(toNum(a[0]!))),
  TAN: scalarFn(1, 1, (a) => Math.tan(toNum(a[0]!))),
  ASIN: scalarFn(1, 1, (a) => {
    const x = toNum(a[0]!);
    if (x < -1 || x > 1) throw ERR.num;
    return Math.asin(x);
  }),
  ACOS: scalarFn(1, 1, (a) => {
    const x = toNum(a[0]!);
    if (x < -1 || x > 1) throw ERR.num;
    return Math.acos(x);
  }),
  ATAN: scalarFn(1, 1, (a) => Math.atan(toNum(a[0]!))),
  ATAN2: scalarFn(2, 2, (a) => {
    const x = toNum(a[0]!);
    const y = toNum(a[1]!);
    if (x === 0 && y === 0) throw ERR.div0;
    return Math.atan2(y, x);
  }),
  RADIANS: scalarFn(1, 1, (a) => (toNum(a[0]!) * Math.PI) / 180),
  DEGREES: scalarFn(1, 1, (a) => (toNum(a[0]!) * 180) / Math.PI),
  BIN2DEC: scalarFn(1, 1, (a) => fromBase(a[0]!, 2, 10)),
  HEX2DEC: scalarFn(1, 1, (a) => fromBase(a[0]!, 16, 10)),
  OCT2DEC: scalarFn(1, 1, (a) => fromBase(a[0]!, 8, 10)),
  DEC2BIN: scalarFn(1, 2, (a) => toBase(a, 2, 10)),
  DEC2HEX: scalarFn(1, 2, (a) => toBase(a, 16, 10)),
  DEC2OCT: scalarFn(1, 2, (a) => toBase(a, 8, 10)),
  GEOMEAN: def(1, 255, (a, ev) => {
    const xs = numbers(a, ev);
    if (!xs.length || xs.some((x) => x <= 0)) throw ERR.num;
    return Math.exp(xs.reduce((s, x) => s + Math.log(x), 0) / xs.length);
  }),
  "COVARIANCE.P": def(2, 2, (a, ev) => covariance(a, ev, false)),
  "COVARIANCE.S": def(2, 2, (a, ev) => covariance(a, ev, true)),
  SORTBY: def(
    2,
    254,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const keys: Array<{ col: Scalar[]; order: number }> = [];
      for (let i = 1; i < a.length; i += 2) {
        const by = ev.toMatrix(a[i]!).flat();
        if (by.length !== m.rows) throw ERR.value;
        keys.push({ col: by, order: i + 1 < a.length ? num(a[i + 1]!, ev) : 1 });
      }
      const idx = m.data.map((_, i) => i);
      idx.sort((x, y) => {
        for (const k of keys) {
          const c = compare(k.col[x]!, k.col[y]!) * (k.order < 0 ? -1 : 1);
          if (c) return c;
        }
        return x - y;
      });
      return new Matrix(idx.map((i) => m.data[i]!));
    },
    { arrayArgs: true },
  ),
  TEXTSPLIT: def(2, 5, (a, ev) => {
    const text = toText(ev.scalar(a[0]!));
    const delims = (v: Value | undefined) =>
      v === undefined || v === null
        ? []
        : ev
            .toMatrix(v)
            .flat()
            .map(toText)
            .filter((d) => d !== "");
    const colD = delims(a[1]);
    const rowD = delims(a[2]);
    const ignoreEmpty = a[3] !== undefined && a[3] !== null && toBool(ev.scalar(a[3]));
    const split = (s: string, ds: string[]) => {
      if (!ds.length) return [s];
      const re = new RegExp(ds.map((d) => d.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"));
      const parts = s.split(re);
      return ignoreEmpty ? parts.filter((p) => p !== "") : parts;
    };
    const rows = split(text, rowD).map((r) => split(r, colD));
    const w = Math.max(...rows.map((r) => r.length));
    return new Matrix(rows.map((r) => Array.from({ length: w }, (_, j) => (j < r.length ? r[j]! : ERR.na))));
  }),
  TAKE: def(
    2,
    3,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const r = a[1] === null || a[1] === undefined ? m.rows : Math.trunc(num(a[1], ev));
      const c = a[2] === null || a[2] === undefined ? m.cols : Math.trunc(num(a[2], ev));
      if (r === 0 || c === 0) throw ERR.calc;
      const rows = r > 0 ? m.data.slice(0, r) : m.data.slice(r);
      return new Matrix(rows.map((row) => (c > 0 ? row.slice(0, c) : row.slice(c))));
    },
    { arrayArgs: true },
  ),
  DROP: def(
    2,
    3,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const r = a[1] === null || a[1] === undefined ? 0 : Math.trunc(num(a[1], ev));
      const c = a[2] === null || a[2] === undefined ? 0 : Math.trunc(num(a[2], ev));
      const rows = r >= 0 ? m.data.slice(r) : m.data.slice(0, r);
      const out = rows.map((row) => (c >= 0 ? row.slice(c) : row.slice(0, c)));
      if (!out.length || !out[0]!.length) throw ERR.calc;
      return new Matrix(out);
    },
    { arrayArgs: true },
  ),
  VSTACK: def(
    1,
    254,
    (a, ev) =>
      stack(
        a.map((v) => ev.toMatrix(v)),
        true,
      ),
    { arrayArgs: true },
  ),
  HSTACK: def(
    1,
    254,
    (a, ev) =>
      stack(
        a.map((v) => ev.toMatrix(v)),
        false,
      ),
    { arrayArgs: true },
  ),
  CHOOSECOLS: def(
    2,
    254,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const idx = a.slice(1).flatMap((v) => numbers([v], ev).map(Math.trunc));
      return new Matrix(m.data.map((r) => pick(r, idx)));
    },
    { arrayArgs: true },
  ),
  CHOOSEROWS: def(
    2,
    254,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const idx = a.slice(1).flatMap((v) => numbers([v], ev).map(Math.trunc));
      return new Matrix(pick(m.data, idx));
    },
    { arrayArgs: true },
  ),
  TOCOL: def(
    1,
    3,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const ignore = Math.trunc(optNum(a[1], ev, 0));
      const byCol = a[2] !== undefined && a[2] !== null && toBool(ev.scalar(a[2]));
      const flat = (byCol ? transpose(m.data) : m.data).flat();
      const keep = flat.filter(
        (v) =>
          !((ignore === 1 || ignore === 3) && v === null) && !((ignore === 2 || ignore === 3) && v instanceof XlError),
      );
      return new Matrix(keep.map((v) => [v]));
    },
    { arrayArgs: true },
  ),
};

function covariance(a: Value[], ev: Evaluator, sample: boolean): number {
  const xs = ev.toMatrix(a[0]!).flat();
  const ys = ev.toMatrix(a[1]!).flat();
  if (xs.length !== ys.length) throw ERR.na;
  const p: Array<[number, number]> = [];
  xs.forEach((x, i) => {
    const y = ys[i]!;
    if (x instanceof XlError) throw x;
    if (y instanceof XlError) throw y;
    if (typeof x === "number" && typeof y === "number") p.push([x, y]);
  });
  const n = p.length;
  if (n - (sample ? 1 : 0) <= 0) throw ERR.div0;
  const mx = p.reduce((s, [x]) => s + x, 0) / n;
  const my = p.reduce((s, [, y]) => s + y, 0) / n;
  return p.reduce((s, [x, y]) => s + (x - mx) * (y - my), 0) / (n - (sample ? 1 : 0));
}

function fromBase(v: Scalar, base: number, _to: number): number {
  const s = toText(v).trim();
  const digits = base === 2 ? /^[01]{1,10}$/ : base === 8 ? /^[0-7]{1,10}$/ : /^[0-9A-Fa-f]{1,10}$/;
  if (!digits.test(s)) throw ERR.num;
  const n = Number.parseInt(s, base);
  const bits = base === 2 ? 10 : base === 8 ? 30 : 40;
  // ten-digit values are two's complement
  return s.length === 10 && n >= 2 ** (bits - 1) ? n - 2 ** bits : n;
}

function toBase(a: Scalar[], base: number, _from: number): string {
  let n = Math.trunc(toNum(a[0]!));
  const bits = base === 2 ? 10 : base === 8 ? 30 : 40;
  if (n < -(2 ** (bits - 1)) || n >= 2 ** (bits - 1)) throw ERR.num;
  if (n < 0) n += 2 ** bits;
  let s = n.toString(base).toUpperCase();
  if (a[1] !== undefined && a[1] !== null) {
    const w = Math.trunc(toNum(a[1]));
    if (w < s.length || w > 10) throw ERR.num;
    s = s.padStart(w, "0");
  }
  return s;
}
