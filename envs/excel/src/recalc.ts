/**
 * Embedded recalculation: every formula in the workbook is evaluated by the embedded engine (src/formula/) in
 * dependency order and its cached value stored, so a file written by the model reads the same through openpyxl's
 * `data_only=True` as one Excel or LibreOffice saved. Circular references are reported and their cells keep no
 * cached value (they read as None). A formula the engine cannot evaluate keeps no cached value either (never a
 * stale one) and is listed in `unsupported`: the scorer then falls back to LibreOffice or refuses to score.
 */
import ExcelJS from "exceljs";
import {
  type EngineOptions,
  type EngineVal,
  FormulaEngine,
  FormulaIndex,
  type FormulaSource,
  RecalcBudgetError,
} from "./formula-engine.js";
import { addr, type Cell, colToNumber, dateToSerial, type Workbook, type Worksheet } from "./workbook.js";

export interface RecalcResult {
  /** Formula cells evaluated. */
  formulas: number;
  /** Problems, e.g. `circular reference: Sheet1!A1 → Sheet1!B1 → Sheet1!A1` or an unsupported function. */
  errors: string[];
  /** Formula cells the engine could not evaluate (`Sheet1!A1: =FOO(1): function FOO`); they have no cached value. */
  unsupported: string[];
}

function literal(v: ExcelJS.CellValue | undefined): EngineVal {
  if (v === null || v === undefined) return null;
  if (typeof v === "number" || typeof v === "string" || typeof v === "boolean") return v;
  if (v instanceof Date) return dateToSerial(v);
  if (typeof v === "object") {
    if ("richText" in v && Array.isArray(v.richText)) return v.richText.map((r) => r.text).join("");
    if ("error" in v) return { error: String(v.error) };
    if ("formula" in v || "sharedFormula" in v) return literal((v as { result?: ExcelJS.CellValue }).result);
    if ("text" in v) return String((v as { text: unknown }).text);
  }
  return null;
}

/** A cell without creating it. */
function peek(ws: Worksheet, row: number, col: number): Cell | undefined {
  const r = (ws as any)._rows?.[row - 1] as ExcelJS.Row | undefined;
  return r ? ((r as any)._cells?.[col - 1] as Cell | undefined) : undefined;
}

interface Area {
  row: number;
  col: number;
  rows: number;
  cols: number;
}

/** Recalculate every formula of `wb` in place; returns how many and what went wrong. */
export function recalcWorkbook(wb: Workbook, options: EngineOptions = {}): RecalcResult {
  const sheets = new Map<string, Worksheet>();
  const lower = new Map<string, string>();
  const formulas = new Map<string, Map<number, { cell: Cell; formula: string }>>();
  const indexes = new Map<string, FormulaIndex>();
  const arrays = new Map<string, Map<number, Area>>();
  for (const ws of wb.worksheets) {
    sheets.set(ws.name, ws);
    lower.set(ws.name.toLowerCase(), ws.name);
    const map = new Map<number, { cell: Cell; formula: string }>();
    const index = new FormulaIndex();
    const arr = new Map<number, Area>();
    ws.eachRow({ includeEmpty: false }, (row) => {
      row.eachCell({ includeEmpty: false }, (cell) => {
        if (cell.type === ExcelJS.ValueType.Formula) {
          const f = cell.formula;
          if (f) {
            const r = Number(cell.row);
            const c = Number(cell.col);
            map.set(r * 32768 + c, { cell, formula: f });
            index.add(r, c);
            const v = cell.value as { shareType?: string; ref?: string };
            if (v && v.shareType === "array") {
              const m = /^\$?([A-Z]+)\$?(\d+)(?::\$?([A-Z]+)\$?(\d+))?$/.exec(v.ref ?? "");
              const r2 = m?.[4] ? Number(m[4]) : r;
              const c2 = m?.[3] ? colToNumber(m[3]) : c;
              const area = { row: r, col: c, rows: r2 - r + 1, cols: c2 - c + 1 };
              for (let i = r; i <= r2 && i - r < 100_000; i++)
                for (let j = c; j <= c2 && j - c < 1000; j++) arr.set(i * 32768 + j, area);
            }
          }
        }
      });
    });
    formulas.set(ws.name, map);
    indexes.set(ws.name, index.seal());
    arrays.set(ws.name, arr);
  }
  const names = new Map<string, string>();
  try {
    for (const d of (wb.definedNames as unknown as { model: Array<{ name: string; ranges: string[] }> }).model) {
      if (d.ranges.length === 1) names.set(d.name.toUpperCase(), d.ranges[0]!);
    }
  } catch {
    // no defined names
  }
  const src: FormulaSource = {
    resolveSheet: (name) => lower.get(name.toLowerCase()),
    formula: (s, r, c) => formulas.get(s)?.get(r * 32768 + c)?.formula,
    formulaCellsIn: (s, r1, c1, r2, c2) => indexes.get(s)?.cellsIn(r1, c1, r2, c2) ?? [],
    literal: (s, r, c) => {
      const ws = sheets.get(s);
      const cell = ws && peek(ws, r, c);
      return cell ? literal(cell.value) : null;
    },
    bounds: (s) => {
      const ws = sheets.get(s)!;
      return { maxRow: ws.rowCount, maxCol: ws.columnCount };
    },
    dataExtent: (s, r1, c1, r2, c2) => {
      const rows = ((sheets.get(s) as any)?._rows ?? []) as Array<{ _cells?: Array<Cell | undefined> } | undefined>;
      let maxRow = 0;
      let maxCol = 0;
      for (let i = r1 - 1; i < Math.min(r2, rows.length); i++) {
        const cells = rows[i]?._cells;
        if (!cells) continue;
        for (let j = Math.min(c2, cells.length) - 1; j >= c1 - 1; j--) {
          if (cells[j] === undefined) continue;
          maxRow = i + 1;
          if (j + 1 > maxCol) maxCol = j + 1;
          break;
        }
      }
      return maxRow ? { maxRow, maxCol } : null;
    },
    label: (s, r, c) => `${s}!${addr(r, c)}`,
    arrayOf: (s, r, c) => arrays.get(s)?.get(r * 32768 + c),
    definedName: (n) => names.get(n),
  };
  // a cap known before any evaluation: a workbook with more formulas than the engine may evaluate fails at once
  const total = [...formulas.values()].reduce((a, m) => a + m.size, 0);
  const cap = options.maxCells ?? 500_000;
  if (total > cap)
    throw new RecalcBudgetError(
      `recalculation exceeded its budget: the workbook holds ${total} formulas, more than ${cap}`,
    );
  const engine = new FormulaEngine(src, options);
  let count = 0;
  for (const [s, map] of formulas) {
    for (const [k] of map) engine.evaluate(s, Math.floor(k / 32768), k % 32768);
  }
  for (const [s, map] of formulas) {
    for (const [k, { cell, formula }] of map) {
      count++;
      const row = Math.floor(k / 32768);
      const col = k % 32768;
      const prior = cell.value as { shareType?: string; ref?: string };
      const keep = prior && prior.shareType === "array" ? { shareType: "array", ref: prior.ref } : {};
      if (engine.isCircular(s, row, col) || engine.tainted(s, row, col)) {
        cell.value = { formula, ...keep } as ExcelJS.CellFormulaValue; // no cached value: reads as None
        continue;
      }
      const v = engine.evaluate(s, row, col);
      const result = v && typeof v === "object" ? ({ error: v.error } as ExcelJS.CellErrorValue) : v;
      cell.value = { formula, result, ...keep } as ExcelJS.CellFormulaValue;
    }
  }
  // members of multi-cell array formulas get their element as a plain cached value
  for (const [s, arr] of arrays) {
    const ws = sheets.get(s)!;
    for (const [k, a] of arr) {
      const row = Math.floor(k / 32768);
      const col = k % 32768;
      if (a.row === row && a.col === col) continue;
      if (engine.tainted(s, a.row, a.col)) continue;
      const v = engine.evaluate(s, row, col);
      ws.getCell(row, col).value = v && typeof v === "object" ? ({ error: v.error } as ExcelJS.CellErrorValue) : v;
    }
  }
  return { formulas: count, errors: engine.errors, unsupported: engine.unsupported };
}
