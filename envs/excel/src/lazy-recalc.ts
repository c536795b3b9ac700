/**
 * Recalculation for the scorer without loading the workbook into exceljs: straight from the sheet XML, only the
 * formula cells the answer position names are evaluated — with every formula they depend on — by the same engine
 * as the embedded recalculation. For the compared cells this gives what a full recalculation gives. Shared
 * formulas are expanded, array (CSE) formulas are evaluated as arrays and fill their area, defined names resolve.
 */
import { createRequire } from "node:module";
import { columnIndex, columnLetters } from "./column-letters.js";
import {
  type EngineOptions,
  type EngineVal,
  FormulaEngine,
  FormulaIndex,
  type FormulaSource,
  RecalcBudgetError,
} from "./formula-engine.js";
import { HiddenCells } from "./merged-cells.js";
import { fromExcel, type PyValue } from "./py-values.js";
import { PyError } from "./python.js";
import {
  cellKey,
  parseAttrs,
  type RawCell,
  type Rect,
  type SheetCells,
  type TableDef,
  type XlsxValues,
} from "./xlsx-values.js";
import { XmlScanner } from "./xml-scan.js";

const require = createRequire(import.meta.url);
const { slideFormula } = require("exceljs/lib/utils/shared-formula.js") as {
  slideFormula(formula: string, from: string, to: string): string;
};

interface ArrayArea {
  row: number;
  col: number;
  rows: number;
  cols: number;
}

interface SheetModel {
  cells: Map<number, RawCell>;
  merges: string[];
  maxRow: number;
  maxCol: number;
  formulas: Map<number, string>;
  formulaList: Array<[number, number]>;
  index: FormulaIndex;
  /** Array-formula area of each cell inside one. */
  arrays: Map<number, ArrayArea>;
  /** Formula cells of a shape LibreOffice recalculates its own way (`oddFormula`), with why. */
  odd: Map<number, string>;
}

/**
 * Why a formula element is of a shape whose cached value LibreOffice does not keep and the engine cannot reproduce,
 * or undefined. Measured with LibreOffice 7.4 (fixtures/formula-corpus/odd-formulas.json): an empty formula reads
 * `#N/A`; a shared formula without a (numeric) group id, or whose group has no master, and a data-table formula read
 * None or LibreOffice's own value, never the cached one; a second master of one shared group reads `#N/A`.
 */
function oddFormula(
  t: string,
  text: string,
  si: string | undefined,
  masters: Map<string, unknown>,
): string | undefined {
  if (t === "dataTable") return 'a data-table formula (t="dataTable")';
  if (t === "shared") {
    if (si === undefined || !/^\d+$/.test(si)) return "a shared formula without a numeric group id (si)";
    if (text && masters.has(si)) return `a second master of the shared formula group si="${si}"`;
    return undefined;
  }
  if (t !== "normal" && t !== "array") return `a formula of unknown type t="${t}"`;
  if (!text.trim()) return "an empty formula";
  return undefined;
}

const decode = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|apos);/g, (_m, n: string) => ({ amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" })[n]!);

export interface LazyRecalcOptions extends EngineOptions {
  /** Recompute only formula cells without a cached value (gold files); others keep what the file holds. */
  onlyMissing?: boolean;
  /**
   * Most formulas one sheet may hold (default MAX_SHEET_FORMULAS; golds, read with `onlyMissing`, are not capped):
   * counted before the sheet's cells are parsed, so a million-formula chain fails at once with RecalcBudgetError.
   */
  maxFormulas?: number;
}

/** Default `maxFormulas`: the formula count past which a sheet is not recalculated (the model's file scores 0). */
export const MAX_SHEET_FORMULAS = 250_000;

/** Reads cells with formulas recalculated, for one workbook. */
export class LazyRecalc {
  private readonly models = new Map<string, SheetModel>();
  private readonly byLower = new Map<string, string>();
  private readonly names = new Map<string, string>();
  private tablesByName?: Map<string, TableDef>;
  private readonly engine: FormulaEngine;
  /** Compared cells the engine could not compute (unsupported functions), with why. */
  readonly unscorable: string[] = [];

  constructor(
    private readonly book: XlsxValues,
    private readonly options: LazyRecalcOptions = {},
  ) {
    for (const n of book.sheetNames) if (!book.isChartsheet(n)) this.byLower.set(n.toLowerCase(), n);
    try {
      for (const d of book.definedNames()) {
        const key = `${d.sheet ?? ""}\u0000${d.name.toUpperCase()}`;
        this.names.set(key, d.text);
      }
    } catch {
      // no readable defined names: formulas using them evaluate to #NAME?
    }
    const src: FormulaSource = {
      resolveSheet: (name) => this.byLower.get(name.toLowerCase()),
      formula: (s, r, c) => this.model(s).formulas.get(cellKey(r, c)),
      formulaCellsIn: (s, r1, c1, r2, c2) => this.model(s).index.cellsIn(r1, c1, r2, c2),
      literal: (s, r, c) => this.engineValue(s, r, c),
      bounds: (s) => this.model(s),
      dataExtent: (s, r1, c1, r2, c2) => {
        let maxRow = 0;
        let maxCol = 0;
        for (const k of this.model(s).cells.keys()) {
          const row = Math.floor(k / 32768);
          const col = k % 32768;
          if (row < r1 || row > r2 || col < c1 || col > c2) continue;
          if (row > maxRow) maxRow = row;
          if (col > maxCol) maxCol = col;
        }
        return maxRow ? { maxRow, maxCol } : null;
      },
      label: (s, r, c) => `${s}!${columnLetters(c)}${r}`,
      unsupportedCell: (s, r, c) => this.model(s).odd.get(cellKey(r, c)),
      arrayOf: (s, r, c) => this.model(s).arrays.get(cellKey(r, c)),
      definedName: (name, sheet) => this.names.get(`${sheet}\u0000${name}`) ?? this.names.get(`\u0000${name}`),
      table: (name) => {
        if (!this.tablesByName) {
          this.tablesByName = new Map();
          try {
            for (const t of book.tables()) this.tablesByName.set(t.name.toLowerCase(), t);
          } catch {
            // unreadable table parts: structured references stay unsupported
          }
        }
        return this.tablesByName.get(name.toLowerCase());
      },
    };
    this.engine = new FormulaEngine(src, options);
  }

  private engineValue(sheet: string, row: number, col: number): EngineVal {
    const raw = this.model(sheet).cells.get(cellKey(row, col));
    if (!raw) return null;
    const v = this.book.engineValueOf(raw);
    return v.kind === "error" ? { error: v.code } : v.value;
  }

  private model(name: string): SheetModel {
    let m = this.models.get(name);
    if (!m) {
      if (!this.options.onlyMissing) {
        const cap = this.options.maxFormulas ?? MAX_SHEET_FORMULAS;
        const n = this.book.formulaCount(name);
        if (n > cap)
          throw new RecalcBudgetError(
            `recalculation exceeded its budget: sheet ${JSON.stringify(name)} holds ${n} formulas, more than ${cap}`,
          );
      }
      const raw = this.book.rawCells(name);
      const formulas = new Map<number, string>();
      const arrays = new Map<number, ArrayArea>();
      const masters = new Map<string, { formula: string; ref: string }>();
      const sharedDeps: Array<[number, string, string]> = [];
      const odd = new Map<number, string>();
      for (const [k, c] of raw.cells) {
        const scan = new XmlScanner(c.inner);
        const tag = scan.next("f");
        if (!tag) continue;
        const f = scan.element(tag);
        if (!f) {
          // XML no parser accepts: what LibreOffice makes of the cell is its own, never the value after the tag
          odd.set(k, "a formula element that is never closed");
          formulas.set(k, "");
          continue;
        }
        const attrs = f.tag.attrs;
        const a = parseAttrs(attrs);
        const text = decode(f.inner);
        const t = a.t ?? "normal";
        const si = a.si;
        const addr = `${columnLetters(c.col)}${c.row}`;
        // shapes LibreOffice (the official recalculation) does not read as a formula with this cached value: their
        // value is LibreOffice's to give (the engine flags them unsupported, so the scorer asks LibreOffice)
        const why = oddFormula(t, text, si, masters);
        if (why) {
          odd.set(k, why);
          formulas.set(k, text);
          continue;
        }
        if (t === "shared" && si !== undefined) {
          if (text) {
            masters.set(si, { formula: text, ref: addr });
            formulas.set(k, text);
          } else sharedDeps.push([k, si, addr]);
        } else if (text) {
          formulas.set(k, text);
          if (t === "array") {
            const ref = /\bref="([A-Z]+)(\d+)(?::([A-Z]+)(\d+))?"/.exec(attrs);
            const r2 = ref?.[4] ? Number(ref[4]) : c.row;
            const c2 = ref?.[3] ? columnIndex(ref[3]) : c.col;
            const area = { row: c.row, col: c.col, rows: r2 - c.row + 1, cols: c2 - c.col + 1 };
            for (let r = c.row; r <= r2 && r - c.row < 100_000; r++) {
              for (let cc = c.col; cc <= c2 && cc - c.col < 1000; cc++) arrays.set(cellKey(r, cc), area);
            }
          }
        }
      }
      for (const [k, si, addr] of sharedDeps) {
        const master = masters.get(si);
        if (!master) {
          odd.set(k, `a shared formula (si="${si}") with no master cell`);
          formulas.set(k, "");
          continue;
        }
        try {
          formulas.set(k, slideFormula(master.formula, master.ref, addr));
        } catch (e) {
          // a member the master's references cannot slide to (off the sheet)
          odd.set(k, `a shared formula that cannot be moved to ${addr}: ${(e as Error).message}`);
          formulas.set(k, "");
        }
      }
      const index = new FormulaIndex();
      const formulaList = [...formulas.keys()].map((k): [number, number] => [Math.floor(k / 32768), k % 32768]);
      for (const [r, c] of formulaList) index.add(r, c);
      index.seal();
      m = {
        cells: raw.cells,
        merges: raw.merges,
        maxRow: raw.maxRow,
        maxCol: raw.maxCol,
        formulas,
        formulaList,
        index,
        arrays,
        odd,
      };
      this.models.set(name, m);
    }
    return m;
  }

  /** What went wrong while recalculating (circular references, unsupported functions). */
  get errors(): readonly string[] {
    return this.engine.errors;
  }

  /** Like `XlsxValues.readCells`, with formula cells recalculated. */
  readCells(sheet: string, rects: Rect[]): SheetCells {
    const out = this.book.readCells(sheet, rects);
    if (this.book.isChartsheet(sheet)) return out;
    const m = this.model(sheet);
    const targets: Array<[number, number]> = [];
    for (const r of rects) targets.push(...m.index.cellsIn(r.minRow, r.minCol, r.maxRow, r.maxCol));
    // members of array formulas (cells with only a cached value inside an array area)
    for (const [k, a] of m.arrays) {
      const row = Math.floor(k / 32768);
      const col = k % 32768;
      if (a.row === row && a.col === col) continue;
      if (rects.some((r) => row >= r.minRow && row <= r.maxRow && col >= r.minCol && col <= r.maxCol))
        targets.push([row, col]);
    }
    const hidden = new HiddenCells(rects);
    for (const ref of m.merges) hidden.add(ref);
    for (const [row, col] of targets) {
      const k = cellKey(row, col);
      if (this.options.onlyMissing && out.get(k) !== null && out.get(k) !== undefined && out.get(k) !== "") continue;
      if (out.get(k) === null && hidden.has(row, col)) continue;
      const v = this.engine.evaluate(sheet, row, col);
      if (this.engine.isCircular(sheet, row, col)) {
        out.set(k, null);
        continue;
      }
      if (this.engine.tainted(sheet, row, col)) {
        const why = this.engine.unsupported[0] ?? `${sheet}!${columnLetters(col)}${row}`;
        if (!this.unscorable.includes(why)) this.unscorable.push(why);
        continue;
      }
      const raw = m.cells.get(k) ?? { a: {}, inner: "", row, col };
      out.set(k, this.toPy(raw, v));
    }
    return out;
  }

  /** The cached value a spreadsheet application would store for a result, read back as openpyxl reads it. */
  private toPy(raw: RawCell, v: EngineVal): PyValue {
    if (v === null) return 0;
    if (typeof v === "object") return v.error;
    if (v === "") return null; // an empty text result is stored as an empty <v>, which openpyxl reads as None
    if (typeof v === "boolean" || typeof v === "string") return v;
    const style = this.book.dateStyle(raw);
    if (!style.date) return v;
    try {
      return fromExcel(v, this.book.epoch1904, style.timedelta);
    } catch (e) {
      if (e instanceof PyError) return "#VALUE!";
      throw e;
    }
  }
}
