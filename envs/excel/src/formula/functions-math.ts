/** Math, statistics and conditional aggregates. */
import { compare, round15, toBool, toNum } from "./coerce.js";
import { criteriaMatcher } from "./criteria.js";
import type { Evaluator } from "./evaluate.js";
import { at, check, def, flat, num, numbers, optNum, scalarFn, shape } from "./fn-helpers.js";
import type { FnDef } from "./function-types.js";
import { ERR, Matrix, Ref, type Scalar, type Value, XlError } from "./values.js";

const n0 = (a: Scalar[], i: number, d: number) => (a[i] === undefined || a[i] === null ? d : toNum(a[i]!));

export function roundTo(x: number, d: number, mode: "half" | "up" | "down"): number {
  const p = 10 ** Math.trunc(d);
  const y = round15(Math.abs(x) * p);
  const r = mode === "half" ? Math.floor(y + 0.5) : mode === "up" ? Math.ceil(y) : Math.floor(y);
  const out = (Math.sign(x) * r) / p;
  return Object.is(out, -0) ? 0 : round15(out);
}

function sum(xs: number[]): number {
  let s = 0;
  for (const x of xs) s += x;
  return s;
}

function sorted(xs: number[]): number[] {
  return [...xs].sort((a, b) => a - b);
}

export function percentile(xs: number[], k: number, exc: boolean): number {
  const s = sorted(xs);
  const n = s.length;
  if (n === 0) throw ERR.num;
  if (exc) {
    if (k <= 0 || k >= 1) throw ERR.num;
    const r = k * (n + 1) - 1;
    if (r < 0 || r > n - 1) throw ERR.num;
    const lo = Math.floor(r);
    return s[lo]! + round15(r - lo) * ((s[lo + 1] ?? s[lo]!) - s[lo]!);
  }
  if (k < 0 || k > 1) throw ERR.num;
  const r = round15(k * (n - 1));
  const lo = Math.floor(r);
  return s[lo]! + round15(r - lo) * ((s[lo + 1] ?? s[lo]!) - s[lo]!);
}

export function variance(xs: number[], sample: boolean): number {
  const n = xs.length;
  if (n - (sample ? 1 : 0) <= 0) throw ERR.div0;
  const m = sum(xs) / n;
  let s = 0;
  for (const x of xs) s += (x - m) ** 2;
  return s / (n - (sample ? 1 : 0));
}

/** SUMIFS-style: pairs of (range, criteria) → the matching cell positions of the first range's shape. */
function matches(pairs: Value[], ev: Evaluator, rows: number, cols: number): boolean[][] {
  const ok: boolean[][] = Array.from({ length: rows }, () => new Array<boolean>(cols).fill(true));
  for (let p = 0; p < pairs.length; p += 2) {
    const range = pairs[p]!;
    const sh = shape(range, ev);
    if (sh.rows !== rows || sh.cols !== cols) throw ERR.value;
    const critV = pairs[p + 1]!;
    const crit = critV instanceof Ref || critV instanceof Matrix ? ev.scalar(critV) : critV;
    const m = criteriaMatcher(crit);
    for (let i = 0; i < rows; i++)
      for (let j = 0; j < cols; j++) if (ok[i]![j] && !m(at(range, ev, i, j))) ok[i]![j] = false;
  }
  return ok;
}

function criteriaAgg(
  kind: "sum" | "count" | "avg" | "max" | "min",
  valuesArg: Value | undefined,
  pairs: Value[],
  ev: Evaluator,
): number {
  const first = pairs[0]!;
  const sh = shape(first, ev);
  const ok = matches(pairs, ev, sh.rows, sh.cols);
  const vals: number[] = [];
  let count = 0;
  for (let i = 0; i < sh.rows; i++) {
    for (let j = 0; j < sh.cols; j++) {
      if (!ok[i]![j]) continue;
      count++;
      if (valuesArg === undefined) continue;
      const v = at(valuesArg, ev, i, j);
      if (typeof v === "number") vals.push(v);
      else if (v instanceof XlError) throw v;
    }
  }
  switch (kind) {
    case "count":
      return count;
    case "sum":
      return sum(vals);
    case "avg":
      if (!vals.length) throw ERR.div0;
      return sum(vals) / vals.length;
    case "max":
      return vals.length ? Math.max(...vals) : 0;
    case "min":
      return vals.length ? Math.min(...vals) : 0;
  }
}

/** A range argument for SUMIF's sum_range (an area of the criteria range's shape starting at its corner). */
function sumRange(v: Value | undefined, fallback: Value): Value {
  return v === undefined || v === null ? fallback : v;
}

function maxMin(args: Value[], ev: Evaluator, f: (a: number, b: number) => number, a = false): number {
  const xs = numbers(args, ev, { a });
  if (!xs.length) return 0;
  return xs.reduce((x, y) => f(x, y));
}

function rank(x: number, ref: Value, ev: Evaluator, order: number, avg: boolean): number {
  const xs = numbers([ref], ev);
  let before = 0;
  let same = 0;
  for (const v of xs) {
    if (v === x) same++;
    else if (order ? v < x : v > x) before++;
  }
  if (!same) throw ERR.na;
  return avg ? before + (same + 1) / 2 : before + 1;
}

function gcd2(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

function sumproduct(args: Value[], ev: Evaluator): number {
  const ms = args.map((a) => ev.toMatrix(a));
  const rows = ms[0]!.rows;
  const cols = ms[0]!.cols;
  for (const m of ms) if (m.rows !== rows || m.cols !== cols) throw ERR.value;
  let s = 0;
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < cols; j++) {
      let p = 1;
      for (const m of ms) {
        const v = m.data[i]![j]!;
        if (v instanceof XlError) throw v;
        p *= typeof v === "number" ? v : 0;
      }
      s += p;
    }
  }
  return s;
}

const SUBTOTAL: Record<number, string> = {
  1: "AVERAGE",
  2: "COUNT",
  3: "COUNTA",
  4: "MAX",
  5: "MIN",
  6: "PRODUCT",
  7: "STDEV",
  8: "STDEVP",
  9: "SUM",
  10: "VAR",
  11: "VARP",
};

/**
 * CEILING / FLOOR: `number` up or down to a multiple of `significance` (default 1). A zero significance gives 0 for
 * CEILING and #DIV/0! for FLOOR; a positive number with a negative significance is #NUM!.
 */
function toSignificance(up: boolean) {
  return scalarFn(1, 2, (a) => {
    const x = toNum(a[0]!);
    const s = n0(a, 1, 1);
    if (s === 0) {
      if (up) return 0;
      throw ERR.div0;
    }
    if (x > 0 && s < 0) throw ERR.num;
    const q = round15(x / s);
    return round15((up ? Math.ceil(q) : Math.floor(q)) * s);
  });
}

/**
 * CEILING.MATH / FLOOR.MATH: to a multiple of |significance| (default 1, zero gives 0); a non-zero `mode` turns the
 * direction around for negative numbers (away from zero for CEILING.MATH, toward zero for FLOOR.MATH).
 */
function toSignificanceMath(up: boolean) {
  return scalarFn(1, 3, (a) => {
    const x = toNum(a[0]!);
    const s = Math.abs(n0(a, 1, 1));
    if (s === 0) return 0;
    const turned = n0(a, 2, 0) !== 0 && x < 0;
    const q = round15(x / s);
    return round15((up !== turned ? Math.ceil(q) : Math.floor(q)) * s);
  });
}

export const MATH: Record<string, FnDef> = {
  SUM: def(1, 255, (a, ev) => sum(numbers(a, ev))),
  PRODUCT: def(1, 255, (a, ev) => numbers(a, ev).reduce((x, y) => x * y, 1)),
  SUMSQ: def(1, 255, (a, ev) => sum(numbers(a, ev).map((x) => x * x))),
  SUMPRODUCT: def(1, 255, (a, ev) => sumproduct(a, ev), { arrayArgs: true }),
  AVERAGE: def(1, 255, (a, ev) => {
    const xs = numbers(a, ev);
    if (!xs.length) throw ERR.div0;
    return sum(xs) / xs.length;
  }),
  AVERAGEA: def(1, 255, (a, ev) => {
    const xs = numbers(a, ev, { a: true });
    if (!xs.length) throw ERR.div0;
    return sum(xs) / xs.length;
  }),
  COUNT: def(1, 255, (a, ev) => {
    let n = 0;
    for (const v of a) {
      if (v instanceof Ref || v instanceof Matrix) {
        for (const x of ev.toMatrix(v).flat()) if (typeof x === "number") n++;
      } else if (typeof v === "number" || typeof v === "boolean") n++;
      else if (typeof v === "string" && !Number.isNaN(Number(v)) && v.trim() !== "") n++;
    }
    return n;
  }),
  COUNTA: def(1, 255, (a, ev) => {
    let n = 0;
    for (const v of a) {
      if (v instanceof Ref || v instanceof Matrix) {
        for (const x of ev.toMatrix(v).flat()) if (x !== null) n++;
      } else n++;
    }
    return n;
  }),
  COUNTBLANK: def(1, 1, (a, ev) => flat(a[0]!, ev).filter((x) => x === null || x === "").length),
  MAX: def(1, 255, (a, ev) => maxMin(a, ev, Math.max)),
  MIN: def(1, 255, (a, ev) => maxMin(a, ev, Math.min)),
  MAXA: def(1, 255, (a, ev) => maxMin(a, ev, Math.max, true)),
  MINA: def(1, 255, (a, ev) => maxMin(a, ev, Math.min, true)),
  MEDIAN: def(1, 255, (a, ev) => percentile(numbers(a, ev), 0.5, false)),
  MODE: def(1, 255, (a, ev) => mode(numbers(a, ev))),
  "MODE.SNGL": def(1, 255, (a, ev) => mode(numbers(a, ev))),
  LARGE: def(
    2,
    2,
    (a, ev) => {
      const xs = sorted(numbers([a[0]!], ev)).reverse();
      const k = Math.ceil(num(a[1]!, ev));
      if (k < 1 || k > xs.length) throw ERR.num;
      return xs[k - 1]!;
    },
    { scalars: [1] },
  ),
  SMALL: def(
    2,
    2,
    (a, ev) => {
      const xs = sorted(numbers([a[0]!], ev));
      const k = Math.ceil(num(a[1]!, ev));
      if (k < 1 || k > xs.length) throw ERR.num;
      return xs[k - 1]!;
    },
    { scalars: [1] },
  ),
  RANK: def(2, 3, (a, ev) => rank(num(a[0]!, ev), a[1]!, ev, optNum(a[2], ev, 0), false), { scalars: [0] }),
  "RANK.EQ": def(2, 3, (a, ev) => rank(num(a[0]!, ev), a[1]!, ev, optNum(a[2], ev, 0), false), { scalars: [0] }),
  "RANK.AVG": def(2, 3, (a, ev) => rank(num(a[0]!, ev), a[1]!, ev, optNum(a[2], ev, 0), true), { scalars: [0] }),
  STDEV: def(1, 255, (a, ev) => Math.sqrt(variance(numbers(a, ev), true))),
  "STDEV.S": def(1, 255, (a, ev) => Math.sqrt(variance(numbers(a, ev), true))),
  STDEVP: def(1, 255, (a, ev) => Math.sqrt(variance(numbers(a, ev), false))),
  "STDEV.P": def(1, 255, (a, ev) => Math.sqrt(variance(numbers(a, ev), false))),
  VAR: def(1, 255, (a, ev) => variance(numbers(a, ev), true)),
  "VAR.S": def(1, 255, (a, ev) => variance(numbers(a, ev), true)),
  VARP: def(1, 255, (a, ev) => variance(numbers(a, ev), false)),
  "VAR.P": def(1, 255, (a, ev) => variance(numbers(a, ev), false)),
  PERCENTILE: def(2, 2, (a, ev) => percentile(numbers([a[0]!], ev), num(a[1]!, ev), false), { scalars: [1] }),
  "PERCENTILE.INC": def(2, 2, (a, ev) => percentile(numbers([a[0]!], ev), num(a[1]!, ev), false), { scalars: [1] }),
  "PERCENTILE.EXC": def(2, 2, (a, ev) => percentile(numbers([a[0]!], ev), num(a[1]!, ev), true), { scalars: [1] }),
  QUARTILE: def(2, 2, (a, ev) => quartile(numbers([a[0]!], ev), num(a[1]!, ev), false), { scalars: [1] }),
  "QUARTILE.INC": def(2, 2, (a, ev) => quartile(numbers([a[0]!], ev), num(a[1]!, ev), false), { scalars: [1] }),
  "QUARTILE.EXC": def(2, 2, (a, ev) => quartile(numbers([a[0]!], ev), num(a[1]!, ev), true), { scalars: [1] }),
  CORREL: def(2, 2, (a, ev) => correl(pairs(a[0]!, a[1]!, ev))),
  SLOPE: def(2, 2, (a, ev) => regression(pairs(a[1]!, a[0]!, ev)).slope),
  INTERCEPT: def(2, 2, (a, ev) => regression(pairs(a[1]!, a[0]!, ev)).intercept),
  SUMIF: def(2, 3, (a, ev) => criteriaAgg("sum", sumRange(a[2], a[0]!), [a[0]!, a[1]!], ev), { scalars: [1] }),
  SUMIFS: def(3, 255, (a, ev) => criteriaAgg("sum", a[0]!, a.slice(1), ev)),
  COUNTIF: def(2, 2, (a, ev) => criteriaAgg("count", undefined, a, ev), { scalars: [1] }),
  COUNTIFS: def(2, 255, (a, ev) => criteriaAgg("count", undefined, a, ev)),
  AVERAGEIF: def(2, 3, (a, ev) => criteriaAgg("avg", sumRange(a[2], a[0]!), [a[0]!, a[1]!], ev), { scalars: [1] }),
  AVERAGEIFS: def(3, 255, (a, ev) => criteriaAgg("avg", a[0]!, a.slice(1), ev)),
  MAXIFS: def(3, 255, (a, ev) => criteriaAgg("max", a[0]!, a.slice(1), ev)),
  MINIFS: def(3, 255, (a, ev) => criteriaAgg("min", a[0]!, a.slice(1), ev)),
  SUBTOTAL: def(2, 255, (a, ev) => {
    const code = num(a[0]!, ev);
    const name = SUBTOTAL[code > 100 ? code - 100 : code];
    if (!name) throw ERR.value;
    return ALL_MATH()[name]!.fn!(a.slice(1), ev, false);
  }),
  ROUND: scalarFn(2, 2, (a) => roundTo(toNum(a[0]!), toNum(a[1]!), "half")),
  ROUNDUP: scalarFn(2, 2, (a) => roundTo(toNum(a[0]!), toNum(a[1]!), "up")),
  ROUNDDOWN: scalarFn(2, 2, (a) => roundTo(toNum(a[0]!), toNum(a[1]!), "down")),
  INT: scalarFn(1, 1, (a) => Math.floor(round15(toNum(a[0]!)))),
  TRUNC: scalarFn(1, 2, (a) => roundTo(toNum(a[0]!), n0(a, 1, 0), "down")),
  MOD: scalarFn(2, 2, (a) => {
    const x = toNum(a[0]!);
    const d = toNum(a[1]!);
    if (d === 0) throw ERR.div0;
    return round15(x - d * Math.floor(x / d));
  }),
  ABS: scalarFn(1, 1, (a) => Math.abs(toNum(a[0]!))),
  SIGN: scalarFn(1, 1, (a) => Math.sign(toNum(a[0]!))),
  SQRT: scalarFn(1, 1, (a) => {
    const x = toNum(a[0]!);
    if (x < 0) throw ERR.num;
    return Math.sqrt(x);
  }),
  POWER: scalarFn(2, 2, (a) => check(toNum(a[0]!) ** toNum(a[1]!))),
  EXP: scalarFn(1, 1, (a) => check(Math.exp(toNum(a[0]!)))),
  LN: scalarFn(1, 1, (a) => {
    const x = toNum(a[0]!);
    if (x <= 0) throw ERR.num;
    return Math.log(x);
  }),
  LOG: scalarFn(1, 2, (a) => {
    const x = toNum(a[0]!);
    const b = n0(a, 1, 10);
    if (x <= 0 || b <= 0) throw ERR.num;
    if (b === 1) throw ERR.div0;
    return Math.log(x) / Math.log(b);
  }),
  LOG10: scalarFn(1, 1, (a) => {
    const x = toNum(a[0]!);
    if (x <= 0) throw ERR.num;
    return Math.log10(x);
  }),
  PI: def(0, 0, () => Math.PI),
  CEILING: toSignificance(true),
  "CEILING.MATH": toSignificanceMath(true),
  FLOOR: toSignificance(false),
  "FLOOR.MATH": toSignificanceMath(false),
  MROUND: scalarFn(2, 2, (a) => {
    const x = toNum(a[0]!);
    const m = toNum(a[1]!);
    if (m === 0) return 0;
    if (Math.sign(x) * Math.sign(m) < 0) throw ERR.num;
    return round15(roundTo(x / m, 0, "half") * m);
  }),
  QUOTIENT: scalarFn(2, 2, (a) => {
    const d = toNum(a[1]!);
    if (d === 0) throw ERR.div0;
    return Math.trunc(toNum(a[0]!) / d);
  }),
  GCD: def(1, 255, (a, ev) => numbers(a, ev).map(Math.trunc).reduce(gcd2, 0)),
  LCM: def(1, 255, (a, ev) =>
    numbers(a, ev)
      .map(Math.trunc)
      .reduce((x, y) => (x === 0 || y === 0 ? 0 : (x * y) / gcd2(x, y)), 1),
  ),
  FACT: scalarFn(1, 1, (a) => {
    const n = Math.trunc(toNum(a[0]!));
    if (n < 0) throw ERR.num;
    let f = 1;
    for (let i = 2; i <= n; i++) f *= i;
    return check(f);
  }),
  EVEN: scalarFn(1, 1, (a) => {
    const x = toNum(a[0]!);
    const r = Math.ceil(Math.abs(x) / 2) * 2;
    return x < 0 ? -r : r;
  }),
  ODD: scalarFn(1, 1, (a) => {
    const x = toNum(a[0]!);
    let r = Math.ceil(Math.abs(x));
    if (r % 2 === 0) r++;
    return x < 0 ? -r : r;
  }),
  RAND: def(0, 0, () => Math.random()),
  RANDBETWEEN: scalarFn(2, 2, (a) => {
    const lo = Math.ceil(toNum(a[0]!));
    const hi = Math.floor(toNum(a[1]!));
    return lo + Math.floor(Math.random() * (hi - lo + 1));
  }),
  PMT: scalarFn(3, 5, (a) => pmt(toNum(a[0]!), toNum(a[1]!), toNum(a[2]!), n0(a, 3, 0), n0(a, 4, 0))),
  FV: scalarFn(3, 5, (a) => {
    const r = toNum(a[0]!);
    const n = toNum(a[1]!);
    const p = n0(a, 2, 0);
    const pv = n0(a, 3, 0);
    const t = n0(a, 4, 0);
    if (r === 0) return -(pv + p * n);
    const f = (1 + r) ** n;
    return -(pv * f + (p * (1 + r * t) * (f - 1)) / r);
  }),
  PV: scalarFn(3, 5, (a) => {
    const r = toNum(a[0]!);
    const n = toNum(a[1]!);
    const p = toNum(a[2]!);
    const fv = n0(a, 3, 0);
    const t = n0(a, 4, 0);
    if (r === 0) return -(fv + p * n);
    const f = (1 + r) ** n;
    return -(fv + (p * (1 + r * t) * (f - 1)) / r) / f;
  }),
  NPV: def(2, 255, (a, ev) => {
    const r = num(a[0]!, ev);
    return numbers(a.slice(1), ev).reduce((s, v, i) => s + v / (1 + r) ** (i + 1), 0);
  }),
};

function pmt(r: number, n: number, pv: number, fv: number, t: number): number {
  if (n === 0) throw ERR.num;
  if (r === 0) return -(pv + fv) / n;
  const f = (1 + r) ** n;
  return (-(pv * f + fv) * r) / ((1 + r * t) * (f - 1));
}

export function mode(xs: number[]): number {
  const counts = new Map<number, number>();
  let best: number | undefined;
  let bestN = 1;
  for (const x of xs) {
    const n = (counts.get(x) ?? 0) + 1;
    counts.set(x, n);
    if (n > bestN) {
      bestN = n;
      best = x;
    }
  }
  // ties: the value whose repetition appears first in the data
  if (best === undefined) throw ERR.na;
  for (const x of xs) if (counts.get(x) === bestN) return x;
  return best;
}

function quartile(xs: number[], q: number, exc: boolean): number {
  const k = Math.trunc(q);
  if (exc ? k < 1 || k > 3 : k < 0 || k > 4) throw ERR.num;
  return percentile(xs, k / 4, exc);
}

function pairs(xv: Value, yv: Value, ev: Evaluator): Array<[number, number]> {
  const xs = flat(xv, ev);
  const ys = flat(yv, ev);
  if (xs.length !== ys.length) throw ERR.na;
  const out: Array<[number, number]> = [];
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i]!;
    const y = ys[i]!;
    if (x instanceof XlError) throw x;
    if (y instanceof XlError) throw y;
    if (typeof x === "number" && typeof y === "number") out.push([x, y]);
  }
  return out;
}

function regression(p: Array<[number, number]>): { slope: number; intercept: number } {
  const n = p.length;
  if (n < 2) throw ERR.div0;
  const mx = p.reduce((s, [x]) => s + x, 0) / n;
  const my = p.reduce((s, [, y]) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  for (const [x, y] of p) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
  }
  if (sxx === 0) throw ERR.div0;
  const slope = sxy / sxx;
  return { slope, intercept: my - slope * mx };
}

function correl(p: Array<[number, number]>): number {
  const n = p.length;
  if (n < 2) throw ERR.div0;
  const mx = p.reduce((s, [x]) => s + x, 0) / n;
  const my = p.reduce((s, [, y]) => s + y, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (const [x, y] of p) {
    sxy += (x - mx) * (y - my);
    sxx += (x - mx) ** 2;
    syy += (y - my) ** 2;
  }
  if (sxx === 0 || syy === 0) throw ERR.div0;
  return sxy / Math.sqrt(sxx * syy);
}

let all: Record<string, FnDef> | undefined;
function ALL_MATH(): Record<string, FnDef> {
  all ??= MATH;
  return all;
}

export { compare, toBool };
