/** Logical, lookup and reference functions, and the dynamic-array functions (FILTER, UNIQUE, SORT, SEQUENCE). */
import { compare, toBool, toNum, toText } from "./coerce.js";
import { hasWildcard, wildcardRegex } from "./criteria.js";
import type { Evaluator } from "./evaluate.js";
import { def, flat, num, optNum, scalarFn } from "./fn-helpers.js";
import type { FnDef } from "./function-types.js";
import { MAX_COL, MAX_ROW, type Node, parseFormula } from "./parse.js";
import { ERR, Matrix, Ref, type Scalar, UnsupportedFormula, type Value, XlError } from "./values.js";

const isMissing = (n: Node | undefined) => n === undefined || n.t === "missing";

function sameType(a: Scalar, b: Scalar): boolean {
  return typeof a === typeof b && !(a instanceof XlError) && a !== null && b !== null;
}

/** Index of the first value equal to `x` (text case-insensitive; wildcards when `wild`); -1 when none. */
export function findExact(x: Scalar, list: Scalar[], wild: boolean, reverse = false): number {
  if (x instanceof XlError) throw x;
  if (x === null) x = 0;
  const re = wild && typeof x === "string" && (hasWildcard(x) || x.includes("~")) ? wildcardRegex(x) : undefined;
  const n = list.length;
  for (let k = 0; k < n; k++) {
    const i = reverse ? n - 1 - k : k;
    const v = list[i]!;
    if (re) {
      if (typeof v === "string" && re.test(v)) return i;
    } else if (sameType(v, x) && compare(v, x) === 0) return i;
  }
  return -1;
}

/** Approximate match on sorted data: the last value ≤ x (dir 1) or ≥ x (dir -1) of x's type, as Excel's search. */
export function findApprox(x: Scalar, list: Scalar[], dir: 1 | -1): number {
  if (x instanceof XlError) throw x;
  if (x === null) x = 0;
  // binary search as Excel does (it matters for unsorted data such as LOOKUP(2,1/(…),…))
  let lo = 0;
  let hi = list.length - 1;
  let best = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    // skip values of another type (and errors, blanks) by walking down from mid to the nearest usable one
    let m = mid;
    while (m >= lo && !sameType(list[m]!, x)) m--;
    if (m < lo) {
      lo = mid + 1;
      continue;
    }
    const c = compare(list[m]!, x) * dir;
    if (c <= 0) {
      best = m;
      if (c === 0 && dir === 1) {
        // Excel returns the last of equal values in ascending approximate mode
        lo = mid + 1;
      } else lo = mid + 1;
    } else hi = m - 1;
  }
  return best;
}

function vector(v: Value, ev: Evaluator): Scalar[] {
  const m = ev.toMatrix(v);
  if (m.rows > 1 && m.cols > 1) throw ERR.na;
  return m.flat();
}

function lookupIn(x: Scalar, list: Scalar[], mode: number): number {
  if (mode === 0) return findExact(x, list, true);
  return findApprox(x, list, mode > 0 ? 1 : -1);
}

/** A sub-area of a reference or array (0-based offsets). */
function slice(v: Value, ev: Evaluator, r: number, c: number, rows: number, cols: number): Value {
  if (v instanceof Ref) return new Ref(v.sheet, v.r1 + r, v.c1 + c, v.r1 + r + rows - 1, v.c1 + c + cols - 1);
  const m = ev.toMatrix(v);
  const data: Scalar[][] = [];
  for (let i = r; i < r + rows; i++) data.push(m.data[i]!.slice(c, c + cols));
  return rows === 1 && cols === 1 ? data[0]![0]! : new Matrix(data);
}

function dims(v: Value, ev: Evaluator, clip: boolean): { rows: number; cols: number } {
  if (v instanceof Ref) {
    const r = clip ? ev.clip(v) : v;
    return { rows: r.rows, cols: r.cols };
  }
  if (v instanceof Matrix) return { rows: v.rows, cols: v.cols };
  return { rows: 1, cols: 1 };
}

function column(v: Value, ev: Evaluator, c: number): Scalar[] {
  const m = ev.toMatrix(v);
  return m.data.map((r) => r[c] ?? null);
}

function index(a: Value[], ev: Evaluator): Value {
  const arr = a[0]!;
  if (!(arr instanceof Ref) && !(arr instanceof Matrix)) {
    const r = optNum(a[1], ev, 1);
    const c = optNum(a[2], ev, 1);
    if (r > 1 || c > 1) throw ERR.ref;
    return arr;
  }
  const d = dims(arr, ev, false);
  let r = Math.trunc(optNum(a[1], ev, 0));
  let c = Math.trunc(optNum(a[2], ev, 0));
  if (a.length === 2 && d.rows === 1 && d.cols > 1) {
    c = r;
    r = 0;
  }
  if (r < 0 || c < 0 || r > d.rows || c > d.cols) throw ERR.ref;
  if (r === 0 && c === 0) return arr;
  if (r === 0) return slice(arr, ev, 0, c - 1, arr instanceof Ref ? d.rows : dims(arr, ev, true).rows, 1);
  if (c === 0) {
    if (d.cols === 1) return slice(arr, ev, r - 1, 0, 1, 1);
    return slice(arr, ev, r - 1, 0, 1, arr instanceof Ref ? d.cols : dims(arr, ev, true).cols);
  }
  return slice(arr, ev, r - 1, c - 1, 1, 1);
}

function xlookup(a: Value[], ev: Evaluator, notFound: Node | undefined, evalNotFound: () => Value): Value {
  const x = ev.scalar(a[0]!);
  const look = a[1]!;
  const ret = a[2]!;
  const mode = Math.trunc(optNum(a[4], ev, 0));
  const search = Math.trunc(optNum(a[5], ev, 1));
  const ld = dims(look, ev, true);
  const list = vector(look, ev);
  let i = -1;
  if (mode === 0 || mode === 2) {
    i = findExact(x, list, mode === 2, search === -1 || search === -2);
  } else if (mode === 1 || mode === -1) {
    i = findExact(x, list, false, search === -1);
    if (i < 0) {
      let best = -1;
      for (let k = 0; k < list.length; k++) {
        const v = list[k]!;
        if (!sameType(v, x)) continue;
        const c = compare(v, x);
        if (mode === -1 ? c < 0 : c > 0) {
          if (best < 0 || (mode === -1 ? compare(v, list[best]!) > 0 : compare(v, list[best]!) < 0)) best = k;
        }
      }
      i = best;
    }
  } else throw ERR.value;
  if (i < 0) {
    if (!isMissing(notFound)) return evalNotFound();
    throw ERR.na;
  }
  const rd = dims(ret, ev, true);
  if (ld.cols === 1) return slice(ret, ev, i, 0, 1, rd.cols);
  return slice(ret, ev, 0, i, rd.rows, 1);
}

function logical(a: Value[], ev: Evaluator): boolean[] {
  const out: boolean[] = [];
  for (const v of a) {
    if (v instanceof Ref || v instanceof Matrix) {
      for (const x of ev.toMatrix(v).flat()) {
        if (x instanceof XlError) throw x;
        if (typeof x === "boolean") out.push(x);
        else if (typeof x === "number") out.push(x !== 0);
      }
    } else if (v !== null) out.push(toBool(v));
  }
  if (!out.length) throw ERR.value;
  return out;
}

function indirect(text: string, ev: Evaluator): Value {
  let node: Node;
  try {
    node = parseFormula(text.trim());
  } catch {
    throw ERR.ref;
  }
  if (node.t === "bin" && node.op === ":" && node.a.t === "ref" && node.b.t === "ref") return ev.eval(node, false);
  if (node.t === "ref") {
    const v = ev.eval(node, false);
    if (!(v instanceof Ref)) throw ERR.ref;
    return v;
  }
  if (node.t === "name") {
    if (/^R\d*C\d*$/i.test(node.name)) throw new UnsupportedFormula("INDIRECT with an R1C1 reference");
    const v = ev.eval(node, false);
    if (v instanceof Ref) return v;
  }
  throw ERR.ref;
}

function rowsOf(m: Matrix): Scalar[][] {
  return m.data;
}

function uniqueRows(rows: Scalar[][], once: boolean): Scalar[][] {
  const key = (r: Scalar[]) =>
    JSON.stringify(
      r.map((v) => (typeof v === "string" ? `s:${v.toLowerCase()}` : v instanceof XlError ? `e:${v.code}` : v)),
    );
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(key(r), (counts.get(key(r)) ?? 0) + 1);
  const seen = new Set<string>();
  const out: Scalar[][] = [];
  for (const r of rows) {
    const k = key(r);
    if (seen.has(k)) continue;
    seen.add(k);
    if (once && counts.get(k)! > 1) continue;
    out.push(r);
  }
  return out;
}

const transpose = (d: Scalar[][]): Scalar[][] => (d[0] ?? []).map((_, j) => d.map((r) => r[j]!));

export const LOOKUP_FNS: Record<string, FnDef> = {
  IF: {
    min: 1,
    max: 3,
    lazy: (args, ev, array) => {
      const c = ev.deref(ev.eval(args[0]!, array), array);
      const branch = (i: number, asArray: boolean): Value => {
        const n = args[i];
        if (n === undefined) return i === 1;
        if (n.t === "missing") return 0;
        const v = ev.eval(n, asArray);
        return asArray ? ev.deref(v, true) : v;
      };
      if (c instanceof Matrix) {
        const t = branch(1, true);
        const f = args.length < 3 ? false : branch(2, true);
        const tm = ev.toMatrix(t);
        const fm = ev.toMatrix(f);
        const rows = Math.max(c.rows, tm.rows === 1 ? 1 : tm.rows, fm.rows === 1 ? 1 : fm.rows);
        const cols = Math.max(c.cols, tm.cols === 1 ? 1 : tm.cols, fm.cols === 1 ? 1 : fm.cols);
        const out: Scalar[][] = [];
        for (let r = 0; r < rows; r++) {
          const line: Scalar[] = [];
          for (let k = 0; k < cols; k++) {
            const cv = c.get(r, k);
            if (cv instanceof XlError) line.push(cv);
            else {
              try {
                line.push(toBool(cv) ? tm.get(r, k) : fm.get(r, k));
              } catch (e) {
                if (e instanceof XlError) line.push(e);
                else throw e;
              }
            }
          }
          out.push(line);
        }
        return new Matrix(out);
      }
      if (c instanceof XlError) return c;
      if (toBool(c)) return branch(1, array);
      if (args.length < 3) return false;
      return branch(2, array);
    },
  },
  IFERROR: { min: 2, max: 2, lazy: (args, ev, array) => ifError(args, ev, array, () => true) },
  IFNA: { min: 2, max: 2, lazy: (args, ev, array) => ifError(args, ev, array, (e) => e.code === "#N/A") },
  IFS: {
    min: 2,
    max: 254,
    lazy: (args, ev, array) => {
      for (let i = 0; i + 1 < args.length; i += 2) {
        const c = ev.scalar(ev.eval(args[i]!, array), array);
        if (c instanceof XlError) return c;
        if (toBool(c)) return ev.eval(args[i + 1]!, array);
      }
      return ERR.na;
    },
  },
  SWITCH: {
    min: 3,
    max: 254,
    lazy: (args, ev, array) => {
      const x = ev.scalar(ev.eval(args[0]!, array), array);
      if (x instanceof XlError) return x;
      let i = 1;
      for (; i + 1 < args.length; i += 2) {
        const v = ev.scalar(ev.eval(args[i]!, array), array);
        if (v instanceof XlError) return v;
        if (sameType(x, v) && compare(x, v) === 0) return ev.eval(args[i + 1]!, array);
      }
      if (i < args.length) return ev.eval(args[i]!, array);
      return ERR.na;
    },
  },
  CHOOSE: {
    min: 2,
    max: 255,
    lazy: (args, ev, array) => {
      const k = ev.deref(ev.eval(args[0]!, array), array);
      if (k instanceof Matrix) {
        const opts = args.slice(1).map((n) => ev.toMatrix(ev.deref(ev.eval(n, true), true)));
        const rows = Math.max(k.rows, ...opts.map((o) => o.rows));
        const cols = Math.max(k.cols, ...opts.map((o) => o.cols));
        const out: Scalar[][] = [];
        for (let r = 0; r < rows; r++) {
          const line: Scalar[] = [];
          for (let c = 0; c < cols; c++) {
            const kv = k.get(r, c);
            const i = kv instanceof XlError ? -1 : Math.trunc(toNum(kv));
            line.push(i >= 1 && i <= opts.length ? opts[i - 1]!.get(r, c) : ERR.value);
          }
          out.push(line);
        }
        return new Matrix(out);
      }
      const i = Math.trunc(toNum(k));
      if (i < 1 || i >= args.length) return ERR.value;
      return ev.eval(args[i]!, array);
    },
  },
  LET: {
    min: 3,
    max: 253,
    lazy: (args, ev, array) => {
      if (args.length % 2 === 0) return ERR.value;
      const scope = new Map<string, Value>();
      return ev.withScope(scope, () => {
        for (let i = 0; i + 1 < args.length; i += 2) {
          const n = args[i]!;
          if (n.t !== "name") throw ERR.value;
          scope.set(n.name, ev.eval(args[i + 1]!, array));
        }
        return ev.eval(args[args.length - 1]!, array);
      });
    },
  },
  AND: def(1, 255, (a, ev) => logical(a, ev).every(Boolean)),
  OR: def(1, 255, (a, ev) => logical(a, ev).some(Boolean)),
  XOR: def(1, 255, (a, ev) => logical(a, ev).filter(Boolean).length % 2 === 1),
  NOT: scalarFn(1, 1, (a) => !toBool(a[0]!)),
  TRUE: def(0, 0, () => true),
  FALSE: def(0, 0, () => false),
  VLOOKUP: def(
    3,
    4,
    (a, ev) => {
      const x = ev.scalar(a[0]!);
      const col = Math.trunc(num(a[2]!, ev));
      const approx = a[3] === undefined || a[3] === null ? true : toBool(ev.scalar(a[3]));
      const d = dims(a[1]!, ev, true);
      if (col < 1) throw ERR.value;
      if (col > d.cols) throw ERR.ref;
      const i = lookupIn(x, column(a[1]!, ev, 0), approx ? 1 : 0);
      if (i < 0) throw ERR.na;
      return slice(a[1]!, ev, i, col - 1, 1, 1);
    },
    { scalars: [0] },
  ),
  HLOOKUP: def(
    3,
    4,
    (a, ev) => {
      const x = ev.scalar(a[0]!);
      const row = Math.trunc(num(a[2]!, ev));
      const approx = a[3] === undefined || a[3] === null ? true : toBool(ev.scalar(a[3]));
      const m = ev.toMatrix(a[1]!);
      if (row < 1) throw ERR.value;
      if (row > m.rows) throw ERR.ref;
      const i = lookupIn(x, m.data[0]!, approx ? 1 : 0);
      if (i < 0) throw ERR.na;
      return m.data[row - 1]![i]!;
    },
    { scalars: [0] },
  ),
  MATCH: def(
    2,
    3,
    (a, ev) => {
      const x = ev.scalar(a[0]!);
      const mode = Math.trunc(optNum(a[2], ev, 1));
      const i = lookupIn(x, vector(a[1]!, ev), mode === 0 ? 0 : mode > 0 ? 1 : -1);
      if (i < 0) throw ERR.na;
      return i + 1;
    },
    { scalars: [0], arrayAt: [1] },
  ),
  XMATCH: def(
    2,
    4,
    (a, ev) => {
      const x = ev.scalar(a[0]!);
      const mode = Math.trunc(optNum(a[2], ev, 0));
      const search = Math.trunc(optNum(a[3], ev, 1));
      const list = vector(a[1]!, ev);
      const i =
        mode === 0 || mode === 2 ? findExact(x, list, mode === 2, search < 0) : (xlookupApprox(x, list, mode) ?? -1);
      if (i < 0) throw ERR.na;
      return i + 1;
    },
    { scalars: [0], arrayAt: [1] },
  ),
  XLOOKUP: {
    min: 3,
    max: 6,
    lazy: (args, ev, array) => {
      const vals = args.map((n, i) => (i === 3 ? null : ev.eval(n, array)));
      const x = ev.deref(vals[0]!, array);
      const run = (xv: Scalar) =>
        xlookup([xv, ...vals.slice(1)] as Value[], ev, args[3], () => ev.eval(args[3]!, array));
      if (x instanceof Matrix) return x.map((xv) => ev.safeScalar(() => run(xv)));
      return run(x);
    },
  },
  LOOKUP: def(
    2,
    3,
    (a, ev) => {
      const x = ev.scalar(a[0]!);
      let look = a[1]!;
      let res = a[2];
      const d = dims(look, ev, true);
      if (res === undefined && d.rows > 1 && d.cols > 1) {
        const m = ev.toMatrix(look);
        if (d.cols > d.rows) {
          look = new Matrix([m.data[0]!]);
          res = new Matrix([m.data[m.rows - 1]!]);
        } else {
          look = new Matrix(m.data.map((r) => [r[0]!]));
          res = new Matrix(m.data.map((r) => [r[r.length - 1]!]));
        }
      }
      const list = ev.toMatrix(look).flat();
      const i = findApprox(x, list, 1);
      if (i < 0) throw ERR.na;
      const out = flat(res ?? look, ev);
      if (i >= out.length) throw ERR.na;
      return out[i]!;
    },
    { arrayArgs: true },
  ),
  INDEX: def(1, 4, (a, ev) => index(a, ev), { scalars: [1, 2], arrayAt: [0] }),
  OFFSET: def(
    3,
    5,
    (a, ev) => {
      const ref = a[0]!;
      if (!(ref instanceof Ref)) throw ERR.value;
      const r = Math.trunc(num(a[1]!, ev));
      const c = Math.trunc(num(a[2]!, ev));
      const h = a[3] === undefined || a[3] === null ? ref.rows : Math.trunc(num(a[3], ev));
      const w = a[4] === undefined || a[4] === null ? ref.cols : Math.trunc(num(a[4], ev));
      if (h < 1 || w < 1) throw ERR.ref;
      const r1 = ref.r1 + r;
      const c1 = ref.c1 + c;
      if (r1 < 1 || c1 < 1 || r1 + h - 1 > MAX_ROW || c1 + w - 1 > MAX_COL) throw ERR.ref;
      return new Ref(ref.sheet, r1, c1, r1 + h - 1, c1 + w - 1);
    },
    { scalars: [1, 2, 3, 4] },
  ),
  INDIRECT: def(
    1,
    2,
    (a, ev) => {
      if (a[1] !== undefined && a[1] !== null && !toBool(ev.scalar(a[1]))) {
        throw new UnsupportedFormula("INDIRECT with an R1C1 reference");
      }
      return indirect(toText(ev.scalar(a[0]!)), ev);
    },
    { scalars: [0] },
  ),
  ROW: def(0, 1, (a, ev, array) => {
    const v = a[0];
    if (v === undefined || v === null) return ev.pos.row;
    if (!(v instanceof Ref)) throw ERR.value;
    if (v.rows > 1 && array) {
      const r = ev.clip(v);
      return new Matrix(Array.from({ length: r.rows }, (_, i) => [r.r1 + i]));
    }
    return v.r1;
  }),
  COLUMN: def(0, 1, (a, ev, array) => {
    const v = a[0];
    if (v === undefined || v === null) return ev.pos.col;
    if (!(v instanceof Ref)) throw ERR.value;
    if (v.cols > 1 && array) {
      const r = ev.clip(v);
      return new Matrix([Array.from({ length: r.cols }, (_, i) => r.c1 + i)]);
    }
    return v.c1;
  }),
  ROWS: def(1, 1, (a, ev) => dims(a[0]!, ev, false).rows),
  COLUMNS: def(1, 1, (a, ev) => dims(a[0]!, ev, false).cols),
  ADDRESS: scalarFn(2, 5, (a) => {
    const r = Math.trunc(toNum(a[0]!));
    const c = Math.trunc(toNum(a[1]!));
    if (r < 1 || c < 1 || r > MAX_ROW || c > MAX_COL) throw ERR.value;
    const abs = a[2] === undefined || a[2] === null ? 1 : Math.trunc(toNum(a[2]));
    const a1 = a[3] === undefined || a[3] === null ? true : toBool(a[3]);
    let letters = "";
    for (let n = c; n > 0; n = Math.floor((n - 1) / 26)) letters = String.fromCharCode(65 + ((n - 1) % 26)) + letters;
    let s: string;
    if (a1) {
      const cr = abs === 1 || abs === 3 ? "$" : "";
      const rr = abs === 1 || abs === 2 ? "$" : "";
      s = `${abs === 1 || abs === 3 ? "$" : ""}${letters}${abs === 1 || abs === 2 ? "$" : ""}${r}`;
      void cr;
      void rr;
    } else s = `R${abs === 1 || abs === 2 ? r : `[${r}]`}C${abs === 1 || abs === 3 ? c : `[${c}]`}`;
    if (a[4] !== undefined && a[4] !== null) {
      const sh = toText(a[4]);
      s = `${/^[A-Za-z_][\w.]*$/.test(sh) ? sh : `'${sh.replace(/'/g, "''")}'`}!${s}`;
    }
    return s;
  }),
  TRANSPOSE: def(1, 1, (a, ev) => new Matrix(transpose(ev.toMatrix(a[0]!).data)), { arrayArgs: true }),
  FILTER: def(
    2,
    3,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const inc = ev.toMatrix(a[1]!);
      const keep = (v: Scalar) => {
        if (v instanceof XlError) throw v;
        return toBool(v);
      };
      let data: Scalar[][];
      if (inc.cols === 1 && inc.rows === m.rows) data = m.data.filter((_, i) => keep(inc.data[i]![0]!));
      else if (inc.rows === 1 && inc.cols === m.cols) {
        data = m.data.map((r) => r.filter((_, j) => keep(inc.data[0]![j]!)));
        if (!data[0]?.length) data = [];
      } else throw ERR.value;
      if (!data.length) {
        if (a[2] !== undefined) return ev.deref(a[2], true);
        return ERR.calc;
      }
      return new Matrix(data);
    },
    { arrayArgs: true },
  ),
  UNIQUE: def(
    1,
    3,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const byCol = a[1] !== undefined && a[1] !== null && toBool(ev.scalar(a[1]));
      const once = a[2] !== undefined && a[2] !== null && toBool(ev.scalar(a[2]));
      const rows = byCol ? transpose(m.data) : rowsOf(m);
      const u = uniqueRows(rows, once);
      if (!u.length) return ERR.calc;
      return new Matrix(byCol ? transpose(u) : u);
    },
    { arrayArgs: true },
  ),
  SORT: def(
    1,
    4,
    (a, ev) => {
      const m = ev.toMatrix(a[0]!);
      const idx = Math.trunc(optNum(a[1], ev, 1)) - 1;
      const order = optNum(a[2], ev, 1);
      const byCol = a[3] !== undefined && a[3] !== null && toBool(ev.scalar(a[3]));
      const rows = byCol ? transpose(m.data) : [...m.data];
      if (idx < 0 || idx >= (rows[0]?.length ?? 0)) throw ERR.value;
      rows.sort((x, y) => cmpSort(x[idx]!, y[idx]!) * (order < 0 ? -1 : 1));
      return new Matrix(byCol ? transpose(rows) : rows);
    },
    { arrayArgs: true },
  ),
  SEQUENCE: def(1, 4, (a, ev) => {
    const rows = Math.trunc(num(a[0]!, ev));
    const cols = Math.trunc(optNum(a[1], ev, 1));
    const start = optNum(a[2], ev, 1);
    const step = optNum(a[3], ev, 1);
    if (rows < 1 || cols < 1) throw ERR.calc;
    if (rows * cols > 1_000_000) throw ERR.num;
    return new Matrix(
      Array.from({ length: rows }, (_, i) => Array.from({ length: cols }, (_, j) => start + (i * cols + j) * step)),
    );
  }),
};

function cmpSort(x: Scalar, y: Scalar): number {
  const rank = (v: Scalar) =>
    v === null ? 4 : v instanceof XlError ? 3 : typeof v === "number" ? 0 : typeof v === "string" ? 1 : 2;
  const rx = rank(x);
  const ry = rank(y);
  if (rx !== ry) return rx - ry;
  if (rx >= 3) return 0;
  return compare(x, y);
}

function xlookupApprox(x: Scalar, list: Scalar[], mode: number): number | undefined {
  const i = findExact(x, list, false);
  if (i >= 0) return i;
  let best = -1;
  for (let k = 0; k < list.length; k++) {
    const v = list[k]!;
    if (!sameType(v, x)) continue;
    const c = compare(v, x);
    if (mode === -1 ? c < 0 : c > 0) {
      if (best < 0 || (mode === -1 ? compare(v, list[best]!) > 0 : compare(v, list[best]!) < 0)) best = k;
    }
  }
  return best;
}

function ifError(args: Node[], ev: Evaluator, array: boolean, catches: (e: XlError) => boolean): Value {
  let v: Value;
  try {
    v = ev.eval(args[0]!, array);
  } catch (e) {
    if (!(e instanceof XlError)) throw e;
    v = e;
  }
  const d = ev.deref(v, array);
  const alt = () => (isMissing(args[1]) ? 0 : ev.eval(args[1]!, array));
  if (d instanceof Matrix) {
    let altV: Scalar | Matrix | undefined;
    return new Matrix(
      d.data.map((row, r) =>
        row.map((x, c) => {
          if (!(x instanceof XlError && catches(x))) return x;
          altV ??= ev.deref(alt(), array);
          return altV instanceof Matrix ? altV.get(r, c) : altV;
        }),
      ),
    );
  }
  if (d instanceof XlError && catches(d)) return alt();
  return v instanceof Ref ? v : d;
}
