/**
 * The formula evaluator: walks the AST with Excel's array semantics. References stay lazy (`Ref`) until a function
 * or operator needs values; in a normal formula a multi-cell reference used as one value is implicitly intersected
 * with the formula's row or column, in an array formula (and in array parameters) it is an array and operators
 * apply element-wise. Errors travel as thrown `XlError`s inside and become values at function boundaries.
 */
import { compare, toNum, toText } from "./coerce.js";
import { isExcelFunction } from "./excel-functions.js";
import type { FnDef } from "./function-types.js";
import { FUNCTIONS } from "./functions.js";
import { MAX_COL, MAX_ROW, type Node, parseFormula } from "./parse.js";
import {
  ERR,
  errorOf,
  Matrix,
  RangeCapError,
  Ref,
  type Scalar,
  UnsupportedFormula,
  type Value,
  XlError,
} from "./values.js";

/** What the evaluator reads from the workbook. */
export interface EvalHost {
  /** The value of a cell (a formula cell's computed value); null for blank. */
  cell(sheet: string, row: number, col: number): Scalar;
  resolveSheet(name: string): string | undefined;
  /** The used area of a sheet: whole-column and whole-row references are clipped to it. */
  bounds(sheet: string): { maxRow: number; maxCol: number };
  /** A defined name's formula text (without "="), or undefined. */
  definedName?(name: string, sheet: string): string | undefined;
  /** A table by name (case-insensitive), for structured references. */
  table?(name: string): TableArea | undefined;
  /** The sheet names in workbook order (for SHEET()/3-D references). */
  sheetNames?(): string[];
  /**
   * The last row and column holding a cell (value or formula) inside a rectangle, or null when it holds none. Huge
   * references are shrunk to it before their cells are read.
   */
  dataExtent?(sheet: string, r1: number, c1: number, r2: number, c2: number): { maxRow: number; maxCol: number } | null;
}

/** A reference larger than this (in cells) is shrunk to the used area, then to the data it holds, before reading. */
export const SHRINK_CELLS = 1_000_000;
/** Most cells one reference may materialise once shrunk: past it, the recalculation stops (RangeCapError). */
export const MAX_RANGE_CELLS = 4_000_000;

export interface TableArea {
  sheet: string;
  r1: number;
  c1: number;
  r2: number;
  c2: number;
  headerRows: number;
  totalsRows: number;
  columns: string[];
}

export interface EvalPosition {
  sheet: string;
  row: number;
  col: number;
  /** An array (CSE) formula: references are arrays everywhere. */
  array?: boolean;
}

export class Evaluator {
  private scopes: Array<Map<string, Value>> = [];
  private depth = 0;

  constructor(
    readonly host: EvalHost,
    readonly pos: EvalPosition,
  ) {}

  /** Evaluate a whole formula; the result may be an array (for array formulas) or a scalar. */
  run(formula: string): Value {
    const node = parseFormula(formula);
    try {
      return this.eval(node, !!this.pos.array);
    } catch (e) {
      if (e instanceof XlError) return e;
      throw e;
    }
  }

  // --- conversions --------------------------------------------------------------------------------------------

  /**
   * A reference clipped to its sheet's used area (whole columns/rows do not read a million blanks). A huge
   * reference (past SHRINK_CELLS) is also clipped to the used area wherever it ends, then to the data inside it:
   * the cells left out are blank, so aggregates are unchanged, and nothing builds 1e10 cells
   * (`=SUMPRODUCT(A2:XFC1048575)`).
   */
  clip(ref: Ref): Ref {
    let r = ref;
    if (ref.r2 >= MAX_ROW || ref.c2 >= MAX_COL) {
      const b = this.host.bounds(ref.sheet);
      const r2 = ref.r2 >= MAX_ROW ? Math.max(ref.r1, Math.min(ref.r2, b.maxRow)) : ref.r2;
      const c2 = ref.c2 >= MAX_COL ? Math.max(ref.c1, Math.min(ref.c2, b.maxCol)) : ref.c2;
      r = new Ref(ref.sheet, ref.r1, ref.c1, r2, c2);
    }
    if (r.rows * r.cols <= SHRINK_CELLS) return r;
    const b = this.host.bounds(r.sheet);
    r = new Ref(
      r.sheet,
      r.r1,
      r.c1,
      Math.max(r.r1, Math.min(r.r2, b.maxRow)),
      Math.max(r.c1, Math.min(r.c2, b.maxCol)),
    );
    if (r.rows * r.cols <= SHRINK_CELLS || !this.host.dataExtent) return r;
    const e = this.host.dataExtent(r.sheet, r.r1, r.c1, r.r2, r.c2);
    if (!e) return new Ref(r.sheet, r.r1, r.c1, r.r1, r.c1);
    return new Ref(
      r.sheet,
      r.r1,
      r.c1,
      Math.max(r.r1, Math.min(r.r2, e.maxRow)),
      Math.max(r.c1, Math.min(r.c2, e.maxCol)),
    );
  }

  refMatrix(ref: Ref): Matrix {
    const r = this.clip(ref);
    if (r.rows * r.cols > MAX_RANGE_CELLS) {
      throw new RangeCapError(
        `the range ${r.rows}x${r.cols} holds ${r.rows * r.cols} cells of data; at most ${MAX_RANGE_CELLS} are read per reference`,
      );
    }
    const data: Scalar[][] = [];
    for (let i = r.r1; i <= r.r2; i++) {
      const line: Scalar[] = [];
      for (let j = r.c1; j <= r.c2; j++) line.push(this.host.cell(r.sheet, i, j));
      data.push(line);
    }
    return new Matrix(data);
  }

  toMatrix(v: Value): Matrix {
    if (v instanceof Matrix) return v;
    if (v instanceof Ref) return this.refMatrix(v);
    return Matrix.of(v);
  }

  /** One value from a reference in a scalar position: implicit intersection (or the array in array mode). */
  deref(v: Value, array: boolean): Scalar | Matrix {
    if (!(v instanceof Ref)) return v;
    if (v.single) return this.host.cell(v.sheet, v.r1, v.c1);
    if (array) return this.refMatrix(v);
    return this.intersect(v);
  }

  intersect(v: Ref): Scalar {
    const { row, col, sheet } = this.pos;
    if (v.cols === 1 && row >= v.r1 && row <= v.r2 && sheet === v.sheet) return this.host.cell(v.sheet, row, v.c1);
    if (v.rows === 1 && col >= v.c1 && col <= v.c2 && sheet === v.sheet) return this.host.cell(v.sheet, v.r1, col);
    if (v.cols === 1 && row >= v.r1 && row <= v.r2) return this.host.cell(v.sheet, row, v.c1);
    if (v.rows === 1 && col >= v.c1 && col <= v.c2) return this.host.cell(v.sheet, v.r1, col);
    return ERR.value;
  }

  /** A single scalar (top-left of an array). */
  scalar(v: Value, array = false): Scalar {
    const d = this.deref(v, array);
    return d instanceof Matrix ? d.get(0, 0) : d;
  }

  // --- evaluation ---------------------------------------------------------------------------------------------

  eval(node: Node, array: boolean): Value {
    switch (node.t) {
      case "num":
        return node.v;
      case "str":
        return node.v;
      case "bool":
        return node.v;
      case "err":
        return errorOf(node.v);
      case "missing":
        return null;
      case "ref": {
        const sheet = node.sheet === undefined ? this.pos.sheet : this.host.resolveSheet(node.sheet);
        if (sheet === undefined) return ERR.ref;
        return new Ref(sheet, node.r1, node.c1, node.r2, node.c2);
      }
      case "arr":
        return new Matrix(node.rows.map((r) => r.map((n) => this.scalar(this.eval(n, array)))));
      case "name":
        return this.name(node.name, node.sheet, array);
      case "un": {
        const a = this.deref(this.eval(node.a, array), array);
        return lift1(a, (x) => (node.op === "-" ? -toNum(x) : x === null ? 0 : typeof x === "string" ? x : x));
      }
      case "pct": {
        const a = this.deref(this.eval(node.a, array), array);
        return lift1(a, (x) => toNum(x) / 100);
      }
      case "bin":
        return this.binary(node.op, node.a, node.b, array);
      case "fn":
        return this.call(node.name, node.args, array);
      case "table":
        return this.tableRef(node);
    }
  }

  private tableRef(node: Extract<Node, { t: "table" }>): Value {
    const t = this.host.table?.(node.table);
    if (!t) throw new UnsupportedFormula(`structured reference to an unknown table ${node.table}`);
    const col = (name: string) => {
      const i = t.columns.findIndex((c) => c.toLowerCase() === name.toLowerCase());
      if (i < 0) throw ERR.ref;
      return t.c1 + i;
    };
    const c1 = node.from === undefined ? t.c1 : col(node.from);
    const c2 = node.to === undefined ? t.c2 : col(node.to);
    const dataTop = t.r1 + t.headerRows;
    const dataBottom = t.r2 - t.totalsRows;
    let r1 = dataTop;
    let r2 = dataBottom;
    const items = new Set(node.items);
    if (items.has("#THIS ROW")) {
      if (this.pos.row < dataTop || this.pos.row > dataBottom) return ERR.value;
      r1 = r2 = this.pos.row;
    } else if (items.has("#ALL")) {
      r1 = t.r1;
      r2 = t.r2;
    } else if (items.size) {
      const rows: number[] = [];
      if (items.has("#HEADERS")) rows.push(t.r1, dataTop - 1);
      if (items.has("#DATA")) rows.push(dataTop, dataBottom);
      if (items.has("#TOTALS")) rows.push(dataBottom + 1, t.r2);
      if (!rows.length) throw new UnsupportedFormula(`structured reference item ${[...items].join(",")}`);
      r1 = Math.min(...rows);
      r2 = Math.max(...rows);
      if (r2 < r1) return ERR.ref;
    }
    return new Ref(t.sheet, r1, Math.min(c1, c2), r2, Math.max(c1, c2));
  }

  private name(name: string, sheet: string | undefined, array: boolean): Value {
    for (let i = this.scopes.length - 1; i >= 0; i--) {
      const v = this.scopes[i]!.get(name);
      if (v !== undefined) return v;
    }
    const text = this.host.definedName?.(name, sheet ?? this.pos.sheet);
    if (text !== undefined) {
      if (++this.depth > 64) throw new UnsupportedFormula(`defined name ${name} refers to itself`);
      try {
        return this.eval(parseFormula(text), array);
      } finally {
        this.depth--;
      }
    }
    return ERR.name;
  }

  /** Whether a call's name could be a LAMBDA bound by LET or by a defined name (the engine does not run those). */
  private mayBeLambda(name: string): boolean {
    if (this.scopes.some((s) => s.has(name))) return true;
    return this.host.definedName?.(name, this.pos.sheet) !== undefined;
  }

  withScope<T>(scope: Map<string, Value>, f: () => T): T {
    this.scopes.push(scope);
    try {
      return f();
    } finally {
      this.scopes.pop();
    }
  }

  private binary(op: string, an: Node, bn: Node, array: boolean): Value {
    if (op === ":") {
      const a = this.eval(an, array);
      const b = this.eval(bn, array);
      if (!(a instanceof Ref) || !(b instanceof Ref) || a.sheet !== b.sheet) return ERR.value;
      return new Ref(a.sheet, Math.min(a.r1, b.r1), Math.min(a.c1, b.c1), Math.max(a.r2, b.r2), Math.max(a.c2, b.c2));
    }
    const a = this.deref(this.eval(an, array), array);
    const b = this.deref(this.eval(bn, array), array);
    return lift2(a, b, (x, y) => binop(op, x, y));
  }

  private call(name: string, args: Node[], array: boolean): Value {
    const def: FnDef | undefined = FUNCTIONS[name];
    if (!def) {
      // a name Excel does not know (and no LAMBDA a LET or a defined name may bind) is #NAME? in Excel
      if (!isExcelFunction(name) && !this.mayBeLambda(name)) return ERR.name;
      throw new UnsupportedFormula(`function ${name}`);
    }
    if (args.length < def.min || args.length > def.max) return ERR.value;
    try {
      if (def.lazy) return def.lazy(args, this, array);
      const arrayArgs = array || !!def.arrayArgs;
      const vals = args.map((n, i) => this.eval(n, arrayArgs || !!def.arrayAt?.includes(i)));
      const scalars = def.scalars;
      if (!scalars) return def.fn!(vals, this, array);
      const isScalar = (i: number) => scalars === "all" || scalars.includes(i);
      const conv: Array<Scalar | Matrix | Value> = vals.map((v, i) => (isScalar(i) ? this.deref(v, arrayArgs) : v));
      const mats = conv.filter((v, i) => isScalar(i) && v instanceof Matrix) as Matrix[];
      if (mats.length === 0) return def.fn!(conv as Value[], this, array);
      const rows = Math.max(...mats.map((m) => m.rows));
      const cols = Math.max(...mats.map((m) => m.cols));
      const out: Scalar[][] = [];
      for (let r = 0; r < rows; r++) {
        const line: Scalar[] = [];
        for (let c = 0; c < cols; c++) {
          const one = conv.map((v, i) => (isScalar(i) && v instanceof Matrix ? v.get(r, c) : v)) as Value[];
          line.push(this.safeScalar(() => def.fn!(one, this, array)));
        }
        out.push(line);
      }
      return new Matrix(out);
    } catch (e) {
      if (e instanceof XlError) return e;
      throw e;
    }
  }

  safeScalar(f: () => Value): Scalar {
    try {
      return this.scalar(f());
    } catch (e) {
      if (e instanceof XlError) return e;
      throw e;
    }
  }
}

function lift1(a: Scalar | Matrix, f: (x: Scalar) => Scalar): Value {
  const g = (x: Scalar): Scalar => {
    if (x instanceof XlError) return x;
    try {
      return f(x);
    } catch (e) {
      if (e instanceof XlError) return e;
      throw e;
    }
  };
  return a instanceof Matrix ? a.map(g) : g(a);
}

export function lift2(a: Scalar | Matrix, b: Scalar | Matrix, f: (x: Scalar, y: Scalar) => Scalar): Value {
  const g = (x: Scalar, y: Scalar): Scalar => {
    try {
      return f(x, y);
    } catch (e) {
      if (e instanceof XlError) return e;
      throw e;
    }
  };
  if (!(a instanceof Matrix) && !(b instanceof Matrix)) return g(a, b);
  const am = a instanceof Matrix ? a : Matrix.of(a);
  const bm = b instanceof Matrix ? b : Matrix.of(b);
  const rows = Math.max(am.rows, bm.rows);
  const cols = Math.max(am.cols, bm.cols);
  const out: Scalar[][] = [];
  for (let r = 0; r < rows; r++) {
    const line: Scalar[] = [];
    for (let c = 0; c < cols; c++) {
      const x = am.rows === 1 || r < am.rows ? am.get(r, c) : ERR.na;
      const y = bm.rows === 1 || r < bm.rows ? bm.get(r, c) : ERR.na;
      const xx = am.cols === 1 || c < am.cols ? x : ERR.na;
      const yy = bm.cols === 1 || c < bm.cols ? y : ERR.na;
      line.push(g(xx, yy));
    }
    out.push(line);
  }
  return new Matrix(out);
}

export function binop(op: string, x: Scalar, y: Scalar): Scalar {
  if (x instanceof XlError) return x;
  if (y instanceof XlError) return y;
  switch (op) {
    case "+":
      return toNum(x) + toNum(y);
    case "-":
      return toNum(x) - toNum(y);
    case "*":
      return toNum(x) * toNum(y);
    case "/": {
      const d = toNum(y);
      const n = toNum(x);
      if (d === 0) return ERR.div0;
      return n / d;
    }
    case "^": {
      const r = toNum(x) ** toNum(y);
      if (!Number.isFinite(r)) return toNum(x) === 0 ? ERR.div0 : ERR.num;
      if (Number.isNaN(r)) return ERR.num;
      return r;
    }
    case "&":
      return toText(x) + toText(y);
    case "=":
      return compare(x, y) === 0;
    case "<>":
      return compare(x, y) !== 0;
    case "<":
      return compare(x, y) < 0;
    case ">":
      return compare(x, y) > 0;
    case "<=":
      return compare(x, y) <= 0;
    case ">=":
      return compare(x, y) >= 0;
  }
  return ERR.value;
}

/** A finished cell result: numbers checked finite. */
export function finite(v: Scalar): Scalar {
  if (typeof v === "number" && !Number.isFinite(v)) return ERR.num;
  return v;
}
