/**
 * Formula evaluation in dependency order with the embedded evaluator (src/formula/): a formula's static
 * references are evaluated first, by an explicit-stack depth-first walk (deep chains cannot overflow the call
 * stack); references only known while evaluating (INDIRECT, OFFSET) are evaluated on demand. Cycles are detected
 * and reported. A formula the evaluator cannot compute faithfully (an unimplemented function, unparsable text) is
 * recorded in `unsupported` — its value must not be used: callers fall back to LibreOffice or refuse to score.
 */
import { type EvalHost, Evaluator, type TableArea } from "./formula/evaluate.js";
import { MAX_COL, MAX_ROW, parseFormula, refsOf } from "./formula/parse.js";
import {
  ERR,
  FormulaSyntaxError,
  Matrix,
  RangeCapError,
  Ref,
  type Scalar,
  UnsupportedFormula,
  type Value,
  XlError,
} from "./formula/values.js";

export type EngineVal = number | string | boolean | null | { error: string };

/** Where the engine reads a workbook (exceljs or raw XML). Sheet names are canonical (see `resolveSheet`). */
export interface FormulaSource {
  /** The canonical name of a sheet referenced in a formula (Excel compares sheet names case-insensitively). */
  resolveSheet(name: string): string | undefined;
  formula(sheet: string, row: number, col: number): string | undefined;
  /** The formula cells inside a rectangle. */
  formulaCellsIn(sheet: string, r1: number, c1: number, r2: number, c2: number): Array<[number, number]>;
  /** A non-formula cell's value for the engine: number (dates as serials), string, boolean, null, or `{error}`. */
  literal(sheet: string, row: number, col: number): EngineVal;
  bounds(sheet: string): { maxRow: number; maxCol: number };
  /** A label for messages, e.g. `Sheet1!A1`. */
  label(sheet: string, row: number, col: number): string;
  /** For an array (CSE) formula cell: its master cell and the area the array fills. */
  arrayOf?(
    sheet: string,
    row: number,
    col: number,
  ): { row: number; col: number; rows: number; cols: number } | undefined;
  /** A defined name's formula text, or undefined. */
  definedName?(name: string, sheet: string): string | undefined;
  /** A table by name, for structured references. */
  table?(name: string): TableArea | undefined;
  /**
   * Why a formula cell cannot be evaluated faithfully whatever its text (a shape the reference application reads its
   * own way), or undefined: such a cell is flagged unsupported, like an unknown function.
   */
  unsupportedCell?(sheet: string, row: number, col: number): string | undefined;
  /** The last row and column holding a cell inside a rectangle (null: none); see EvalHost.dataExtent. */
  dataExtent?(sheet: string, r1: number, c1: number, r2: number, c2: number): { maxRow: number; maxCol: number } | null;
}

/** Recalculation took longer than its budget (a huge or pathological workbook). */
export class RecalcBudgetError extends Error {
  override name = "RecalcBudgetError";
}

/** Formula cells indexed by column, for fast "formula cells in this rectangle" queries. */
export class FormulaIndex {
  private readonly byCol = new Map<number, number[]>();
  add(row: number, col: number): void {
    let l = this.byCol.get(col);
    if (!l) this.byCol.set(col, (l = []));
    l.push(row);
  }
  /** Call once all cells are added. */
  seal(): this {
    for (const l of this.byCol.values()) l.sort((a, b) => a - b);
    return this;
  }
  cellsIn(r1: number, c1: number, r2: number, c2: number): Array<[number, number]> {
    const out: Array<[number, number]> = [];
    for (const [col, rows] of this.byCol) {
      if (col < c1 || col > c2) continue;
      let lo = 0;
      let hi = rows.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (rows[mid]! < r1) lo = mid + 1;
        else hi = mid;
      }
      for (let i = lo; i < rows.length && rows[i]! <= r2; i++) out.push([rows[i]!, col]);
    }
    return out;
  }
}

interface Node {
  sheet: string;
  row: number;
  col: number;
  key: string;
}

const keyOf = (sheet: string, row: number, col: number) => `${sheet}\u0000${row}\u0000${col}`;

function fromEngine(v: EngineVal): Scalar {
  if (v && typeof v === "object") return new XlError(v.error);
  return v;
}

function toEngine(v: Scalar): EngineVal {
  if (v instanceof XlError) return { error: v.code };
  if (typeof v === "number" && !Number.isFinite(v)) return { error: "#NUM!" };
  return v;
}

export interface EngineOptions {
  maxErrors?: number;
  /** Stop with RecalcBudgetError after this many milliseconds of evaluation (default 30 s). */
  budgetMs?: number;
  /** Stop with RecalcBudgetError after evaluating this many formula cells (default 500 000). */
  maxCells?: number;
}

export class FormulaEngine {
  readonly results = new Map<string, EngineVal>();
  /** Whole results of array formulas (by master cell). */
  private readonly arrays = new Map<string, Matrix>();
  /** Cells on a reference cycle: they get no value. */
  readonly circular = new Set<string>();
  readonly errors: string[] = [];
  /** Cells whose formula the engine cannot evaluate, with why (`Sheet1!A1: function FOO`). */
  readonly unsupported: string[] = [];
  private readonly unsupportedKeys = new Set<string>();
  private readonly visiting = new Set<string>();
  private readonly host: EvalHost;
  private readonly maxErrors: number;
  private readonly deadline: number;
  private readonly maxCells: number;
  private steps = 0;

  constructor(
    private readonly src: FormulaSource,
    options: EngineOptions | number = {},
  ) {
    const o = typeof options === "number" ? { maxErrors: options } : options;
    this.maxErrors = o.maxErrors ?? 20;
    this.deadline = Date.now() + (o.budgetMs ?? 30_000);
    this.maxCells = o.maxCells ?? 500_000;
    this.host = {
      cell: (s, r, c) => this.valueFor(s, r, c),
      resolveSheet: (n) => this.src.resolveSheet(n),
      bounds: (s) => this.src.bounds(s),
      definedName: this.src.definedName ? (n, s) => this.src.definedName!(n, s) : undefined,
      table: this.src.table ? (n) => this.src.table!(n) : undefined,
      dataExtent: this.src.dataExtent ? (s, r1, c1, r2, c2) => this.extent(s, r1, c1, r2, c2) : undefined,
    };
  }

  private readonly extents = new Map<string, { maxRow: number; maxCol: number } | null>();

  /** The source's data extent of a rectangle, cached (only huge references ask, and fill-downs repeat them). */
  private extent(s: string, r1: number, c1: number, r2: number, c2: number): { maxRow: number; maxCol: number } | null {
    const k = `${s}\u0000${r1}:${c1}:${r2}:${c2}`;
    let e = this.extents.get(k);
    if (e === undefined) {
      e = this.src.dataExtent!(s, r1, c1, r2, c2);
      this.extents.set(k, e);
    }
    return e;
  }

  private note(msg: string): void {
    if (this.errors.length < this.maxErrors && !this.errors.includes(msg)) this.errors.push(msg);
  }

  isCircular(sheet: string, row: number, col: number): boolean {
    return this.circular.has(keyOf(sheet, row, col));
  }

  /** Whether this cell's value could not be computed faithfully. */
  isUnsupported(sheet: string, row: number, col: number): boolean {
    return this.unsupportedKeys.has(keyOf(sheet, row, col));
  }

  private formulaOf(n: { sheet: string; row: number; col: number }): { text: string; master: Node } | undefined {
    const f = this.src.formula(n.sheet, n.row, n.col);
    if (f !== undefined) return { text: f, master: Object.assign({}, n, { key: keyOf(n.sheet, n.row, n.col) }) };
    const a = this.src.arrayOf?.(n.sheet, n.row, n.col);
    if (a && (a.row !== n.row || a.col !== n.col)) {
      const text = this.src.formula(n.sheet, a.row, a.col);
      if (text !== undefined)
        return { text, master: { sheet: n.sheet, row: a.row, col: a.col, key: keyOf(n.sheet, a.row, a.col) } };
    }
    return undefined;
  }

  private isFormula(sheet: string, row: number, col: number): boolean {
    return this.formulaOf({ sheet, row, col }) !== undefined;
  }

  private depsOf(n: Node): Node[] {
    const f = this.formulaOf(n);
    if (!f) return [];
    if (f.master.key !== n.key) return [f.master];
    let refs: ReturnType<typeof refsOf>;
    try {
      refs = refsOf(parseFormula(f.text));
    } catch {
      return [];
    }
    const out: Node[] = [];
    for (const r of refs) {
      const sheet = r.sheet === undefined ? n.sheet : this.src.resolveSheet(r.sheet);
      if (sheet === undefined) continue;
      if (r.r1 === r.r2 && r.c1 === r.c2) {
        if (this.isFormula(sheet, r.r1, r.c1)) out.push({ sheet, row: r.r1, col: r.c1, key: keyOf(sheet, r.r1, r.c1) });
        continue;
      }
      const b = this.src.bounds(sheet);
      const r2 = Math.min(r.r2, b.maxRow);
      const c2 = Math.min(r.c2, b.maxCol);
      for (const [row, col] of this.src.formulaCellsIn(sheet, r.r1, r.c1, r2, c2)) {
        out.push({ sheet, row, col, key: keyOf(sheet, row, col) });
      }
      if (this.src.arrayOf) {
        // members of array formulas inside the range depend on their master
        for (let row = r.r1; row <= r2 && row - r.r1 < 5000; row++) {
          for (let col = r.c1; col <= c2 && col - r.c1 < 200; col++) {
            const a = this.src.arrayOf(sheet, row, col);
            if (a && (a.row !== row || a.col !== col))
              out.push({ sheet, row: a.row, col: a.col, key: keyOf(sheet, a.row, a.col) });
          }
        }
      }
    }
    return out;
  }

  /** The value of a formula cell, evaluating what it depends on first. */
  evaluate(sheet: string, row: number, col: number): EngineVal {
    const root = keyOf(sheet, row, col);
    const done = this.results.get(root);
    if (done !== undefined) return done;
    const stack: Node[] = [{ sheet, row, col, key: root }];
    while (stack.length) {
      const n = stack[stack.length - 1]!;
      if (this.results.has(n.key)) {
        stack.pop();
        continue;
      }
      if (!this.visiting.has(n.key)) {
        this.visiting.add(n.key);
        for (const d of this.depsOf(n)) {
          if (this.results.has(d.key)) continue;
          if (this.visiting.has(d.key)) {
            if (d.key !== n.key || this.formulaOf(d)?.master.key === d.key) this.markCycle(stack, d);
            continue;
          }
          stack.push(d);
        }
        continue;
      }
      this.results.set(n.key, this.compute(n));
      this.visiting.delete(n.key);
      stack.pop();
    }
    return this.results.get(root)!;
  }

  private markCycle(stack: Node[], d: Node): void {
    let i = stack.length - 1;
    while (i >= 0 && stack[i]!.key !== d.key) i--;
    const members = stack.slice(Math.max(i, 0)).filter((m) => this.visiting.has(m.key));
    for (const m of members) this.circular.add(m.key);
    const path = [...members, d].map((m) => this.src.label(m.sheet, m.row, m.col));
    this.note(`circular reference: ${path.join(" → ")}`);
  }

  private valueFor(sheet: string, row: number, col: number): Scalar {
    if (this.isFormula(sheet, row, col)) {
      const k = keyOf(sheet, row, col);
      if (this.circular.has(k)) return 0;
      let r = this.results.get(k);
      if (r === undefined) {
        if (this.visiting.has(k)) {
          // reached again through a reference only known at evaluation time (INDIRECT, OFFSET): a cycle
          this.circular.add(k);
          this.note(`circular reference through ${this.src.label(sheet, row, col)}`);
          return 0;
        }
        r = this.evaluate(sheet, row, col);
      }
      return fromEngine(r);
    }
    return fromEngine(this.src.literal(sheet, row, col));
  }

  private compute(n: Node): EngineVal {
    if (this.circular.has(n.key)) return { error: "#CIRC!" };
    if (++this.steps > this.maxCells) {
      throw new RecalcBudgetError(
        `recalculation exceeded its budget of ${this.maxCells} formula cells at ${this.src.label(n.sheet, n.row, n.col)}`,
      );
    }
    if (this.steps % 256 === 0 && Date.now() > this.deadline) {
      throw new RecalcBudgetError(`recalculation exceeded its time budget at ${this.src.label(n.sheet, n.row, n.col)}`);
    }
    const f = this.formulaOf(n)!;
    const label = this.src.label(n.sheet, n.row, n.col);
    if (f.master.key !== n.key) {
      // a member of a multi-cell array formula: its element of the master's result
      if (this.unsupportedKeys.has(f.master.key)) {
        this.flagUnsupported(
          n.key,
          `${label}: part of the array formula at ${this.src.label(f.master.sheet, f.master.row, f.master.col)}`,
        );
        return { error: "#NAME?" };
      }
      const m = this.arrays.get(f.master.key);
      const a = this.src.arrayOf!(n.sheet, n.row, n.col)!;
      const v = m ? element(m, n.row - a.row, n.col - a.col) : fromEngine(this.results.get(f.master.key) ?? null);
      return toEngine(v === null ? 0 : v);
    }
    const odd = this.src.unsupportedCell?.(n.sheet, n.row, n.col);
    if (odd !== undefined) {
      this.flagUnsupported(n.key, `${label}: ${odd}`);
      return { error: "#NAME?" };
    }
    const arr = this.src.arrayOf?.(n.sheet, n.row, n.col);
    const ev = new Evaluator(this.host, { sheet: n.sheet, row: n.row, col: n.col, array: !!arr });
    let v: Value;
    try {
      v = ev.run(f.text);
    } catch (e) {
      if (e instanceof UnsupportedFormula || e instanceof FormulaSyntaxError) {
        this.flagUnsupported(n.key, `${label}: =${f.text}: ${e instanceof UnsupportedFormula ? e.what : e.message}`);
        return { error: "#NAME?" };
      }
      if (e instanceof RangeCapError) {
        throw new RecalcBudgetError(`recalculation exceeded its budget at ${label}: ${e.message}`);
      }
      if (e instanceof RangeError) {
        this.flagUnsupported(n.key, `${label}: =${f.text}: ${e.message}`);
        return { error: "#NAME?" };
      }
      throw e;
    }
    // a formula depending on an unsupported cell cannot be trusted either
    if (arr) {
      const m = v instanceof Matrix ? v : v instanceof Ref ? ev.toMatrix(v) : Matrix.of(v as Scalar);
      this.arrays.set(n.key, m);
      const s = element(m, 0, 0);
      return toEngine(s === null ? 0 : s);
    }
    let s: Scalar;
    if (v instanceof Ref) s = v.single ? this.valueFor(v.sheet, v.r1, v.c1) : ev.intersect(v);
    else if (v instanceof Matrix) s = v.get(0, 0);
    else s = v;
    return toEngine(s === null ? 0 : s);
  }

  private flagUnsupported(key: string, why: string): void {
    this.unsupportedKeys.add(key);
    if (this.unsupported.length < this.maxErrors) this.unsupported.push(why);
    this.note(`cannot evaluate ${why}`);
  }

  /** Whether a formula cell's value rests on a cell the engine could not evaluate. */
  tainted(sheet: string, row: number, col: number): boolean {
    if (this.unsupportedKeys.size === 0) return false;
    const seen = new Set<string>();
    const stack: Node[] = [{ sheet, row, col, key: keyOf(sheet, row, col) }];
    while (stack.length) {
      const n = stack.pop()!;
      if (seen.has(n.key)) continue;
      seen.add(n.key);
      if (this.unsupportedKeys.has(n.key)) return true;
      for (const d of this.depsOf(n)) stack.push(d);
    }
    return false;
  }
}

function element(m: Matrix, r: number, c: number): Scalar {
  if ((r >= m.rows && m.rows !== 1) || (c >= m.cols && m.cols !== 1)) return ERR.na;
  return m.get(r, c);
}

export { MAX_COL, MAX_ROW };
