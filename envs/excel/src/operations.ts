/**
 * The workbook operations behind the tools, as plain functions of an exceljs workbook — so the same calls can be
 * replayed on the other test cases of a task (as the official evaluation replays solution code).
 */
import { ToolError } from "@benchmax/core";
import type ExcelJS from "exceljs";
import { z } from "zod";
import { recalcWorkbook } from "./recalc.js";
import {
  addr,
  type Box,
  cellFormula,
  colToNumber,
  getSheet,
  type InputValue,
  parseCellRef,
  parseRangeRef,
  plainValue,
  toCellValue,
  type Workbook,
} from "./workbook.js";

/** Most cells one read_range may return. */
export const MAX_READ_CELLS = 2000;
/** Most cells one write may touch. */
export const MAX_WRITE_CELLS = 20000;

/** Excel's sheet limits: 1,048,576 rows and 16,384 columns (XFD). */
const MAX_ROWS = 1_048_576;
const MAX_COLS = 16_384;

const inputValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const sheetArg = z.string().optional().describe("Sheet name; default: the first sheet");

export const schemas = {
  list_sheets: z.object({}),
  read_range: z.object({
    sheet: sheetArg,
    range: z.string().describe('Cells to read, e.g. "A1:D20" or "B3"'),
  }),
  write_range: z.object({
    sheet: sheetArg,
    start: z.string().describe('Top-left cell, e.g. "A2"'),
    values: z
      .array(z.array(inputValue))
      .min(1)
      .describe('Rows of values; a string starting with "=" is a formula (e.g. "=SUM(B2:B9)"); null clears a cell'),
  }),
  write_cell: z.object({
    sheet: sheetArg,
    cell: z.string().describe('e.g. "C5"'),
    value: inputValue.describe('A number, text, boolean, null (clear) or a formula starting with "="'),
  }),
  insert_rows: z.object({
    sheet: sheetArg,
    row: z.number().int().min(1).max(MAX_ROWS).describe("Insert before this row (1-based)"),
    count: z.number().int().min(1).max(10000).default(1),
  }),
  delete_rows: z.object({
    sheet: sheetArg,
    row: z.number().int().min(1).max(MAX_ROWS).describe("First row to delete (1-based)"),
    count: z.number().int().min(1).max(100000).default(1),
  }),
  insert_columns: z.object({
    sheet: sheetArg,
    column: z.string().describe('Insert before this column, e.g. "C"'),
    count: z.number().int().min(1).max(1000).default(1),
  }),
  delete_columns: z.object({
    sheet: sheetArg,
    column: z.string().describe('First column to delete, e.g. "C"'),
    count: z.number().int().min(1).max(16384).default(1),
  }),
  add_sheet: z.object({ name: z.string().min(1).max(31) }),
  rename_sheet: z.object({ sheet: z.string(), new_name: z.string().min(1).max(31) }),
  delete_sheet: z.object({ sheet: z.string() }),
  set_number_format: z.object({
    sheet: sheetArg,
    range: z.string(),
    format: z.string().describe('An Excel number format, e.g. "0.00%", "yyyy-mm-dd", "#,##0.00"'),
  }),
} as const;

export type OpName = keyof typeof schemas;
export type OpArgs<N extends OpName> = z.infer<(typeof schemas)[N]>;

/** The operations that change the workbook (recorded for replay). */
export const MUTATING = new Set<string>([
  "write_range",
  "write_cell",
  "insert_rows",
  "delete_rows",
  "insert_columns",
  "delete_columns",
  "add_sheet",
  "rename_sheet",
  "delete_sheet",
  "set_number_format",
  "run_code",
]);

export interface OpOutcome {
  text: string;
  /** The op wrote formulas (the caller recalculates). */
  wroteFormula?: boolean;
}

function column(arg: string): number {
  const s = arg.trim();
  if (!/^(\d+|[A-Za-z]{1,3})$/.test(s)) throw new ToolError(`column: "${arg}" is not a column like C`);
  const n = /^\d+$/.test(s) ? Number(s) : colToNumber(s);
  if (n < 1) throw new ToolError(`column: "${arg}" is before the first column A`);
  if (n > MAX_COLS) throw new ToolError(`column: "${arg}" is past the last column XFD`);
  return n;
}

/** Characters XML 1.0 can't hold (controls, U+FFFE/U+FFFF, lone surrogates): a saved name would come back changed. */
const XML_INVALID = /[\u0000-\u001f\ufffe\uffff\ud800-\udfff]/u;

function sheetTitleOk(name: string): void {
  if (/[\\/?*[\]:]/.test(name)) throw new ToolError(`sheet name "${name}" may not contain \\ / ? * [ ] :`);
  if (XML_INVALID.test(name)) {
    throw new ToolError(`sheet name ${JSON.stringify(name)} may not contain control characters or lone surrogates`);
  }
  if (name.startsWith("'") || name.endsWith("'"))
    throw new ToolError(`sheet name "${name}" may not start or end with '`);
}

/** The cells of a range as JSON: values, and formulas where there are any. */
export function readRange(wb: Workbook, args: OpArgs<"read_range">): string {
  const ws = getSheet(wb, args.sheet);
  const box: Box = parseRangeRef(args.range);
  const bottom = Math.min(box.bottom, Math.max(ws.rowCount, box.top));
  const right = Math.min(box.right, Math.max(ws.columnCount, box.left));
  const cells = (bottom - box.top + 1) * (right - box.left + 1);
  if (cells > MAX_READ_CELLS) {
    throw new ToolError(
      `range ${args.range} holds ${cells} cells (of data); read at most ${MAX_READ_CELLS} at a time, e.g. fewer rows`,
    );
  }
  const values: unknown[][] = [];
  const formulas: Record<string, string> = {};
  for (let r = box.top; r <= bottom; r++) {
    const row = ws.findRow(r);
    const line: unknown[] = [];
    for (let c = box.left; c <= right; c++) {
      const cell = row?.findCell(c);
      if (!cell) {
        line.push(null);
        continue;
      }
      line.push(plainValue(cell.value));
      const f = cellFormula(cell);
      if (f) formulas[addr(r, c)] = f;
    }
    values.push(line);
  }
  const shown = `${addr(box.top, box.left)}:${addr(bottom, right)}`;
  const out: Record<string, unknown> = { sheet: ws.name, range: shown, values };
  if (Object.keys(formulas).length) out.formulas = formulas;
  if (bottom < box.bottom || right < box.right)
    out.note = `the sheet's data ends at ${addr(ws.rowCount, ws.columnCount)}`;
  return JSON.stringify(out);
}

export function listSheets(wb: Workbook): string {
  return JSON.stringify(
    wb.worksheets.map((ws) => ({
      name: ws.name,
      rows: ws.rowCount,
      columns: ws.columnCount,
      ...(ws.rowCount ? { used_range: `A1:${addr(ws.rowCount, Math.max(ws.columnCount, 1))}` } : {}),
      ...(ws.state && ws.state !== "visible" ? { state: ws.state } : {}),
    })),
  );
}

function writeValues(ws: ExcelJS.Worksheet, top: number, left: number, values: InputValue[][]): OpOutcome {
  let n = 0;
  let wroteFormula = false;
  for (const line of values) n += line.length;
  if (n > MAX_WRITE_CELLS) throw new ToolError(`values: ${n} cells is more than ${MAX_WRITE_CELLS} in one call`);
  const width = Math.max(...values.map((l) => l.length));
  if (top + values.length - 1 > 1048576 || left + width - 1 > 16384)
    throw new ToolError("values run past the edge of the sheet");
  values.forEach((line, i) => {
    const row = ws.getRow(top + i);
    line.forEach((v, j) => {
      const cv = toCellValue(v);
      if (cv && typeof cv === "object" && "formula" in cv) wroteFormula = true;
      row.getCell(left + j).value = cv;
    });
  });
  const end = addr(top + values.length - 1, left + width - 1);
  return { text: `wrote ${n} cell(s) to ${ws.name}!${addr(top, left)}:${end}`, wroteFormula };
}

/** Apply one mutating operation (not run_code) to a workbook. */
export function applyOp(wb: Workbook, name: string, args: Record<string, unknown>): OpOutcome {
  switch (name) {
    case "write_range": {
      const a = args as OpArgs<"write_range">;
      const ws = getSheet(wb, a.sheet);
      const { row, col } = parseCellRef(a.start, "start");
      return writeValues(ws, row, col, a.values as InputValue[][]);
    }
    case "write_cell": {
      const a = args as OpArgs<"write_cell">;
      const ws = getSheet(wb, a.sheet);
      const { row, col } = parseCellRef(a.cell, "cell");
      return writeValues(ws, row, col, [[a.value as InputValue]]);
    }
    case "insert_rows": {
      const a = args as OpArgs<"insert_rows">;
      const ws = getSheet(wb, a.sheet);
      if (ws.rowCount + a.count > MAX_ROWS) {
        throw new ToolError(`${ws.name} would have more than ${MAX_ROWS} rows (Excel's limit)`);
      }
      // empty rows below the last used row change no cell: nothing to move (and nothing to allocate)
      if (a.row > ws.rowCount)
        return { text: `nothing to insert: row ${a.row} is below the last used row (${ws.rowCount}) of ${ws.name}` };
      ws.spliceRows(a.row, 0, ...Array.from({ length: a.count }, () => []));
      return { text: `inserted ${a.count} row(s) before row ${a.row} of ${ws.name}` };
    }
    case "delete_rows": {
      const a = args as OpArgs<"delete_rows">;
      const ws = getSheet(wb, a.sheet);
      if (a.row > ws.rowCount)
        return { text: `nothing to delete: row ${a.row} is below the last used row (${ws.rowCount}) of ${ws.name}` };
      ws.spliceRows(a.row, a.count);
      return { text: `deleted ${a.count} row(s) from row ${a.row} of ${ws.name}` };
    }
    case "insert_columns": {
      const a = args as OpArgs<"insert_columns">;
      const ws = getSheet(wb, a.sheet);
      const c = column(a.column);
      if (ws.columnCount + a.count > MAX_COLS) {
        throw new ToolError(`${ws.name} would have more than ${MAX_COLS} columns (Excel's limit)`);
      }
      if (c > ws.columnCount) {
        return { text: `nothing to insert: column ${a.column} is right of the last used column of ${ws.name}` };
      }
      ws.spliceColumns(c, 0, ...Array.from({ length: a.count }, () => []));
      return { text: `inserted ${a.count} column(s) before column ${a.column} of ${ws.name}` };
    }
    case "delete_columns": {
      const a = args as OpArgs<"delete_columns">;
      const ws = getSheet(wb, a.sheet);
      const c = column(a.column);
      if (c > ws.columnCount) {
        return { text: `nothing to delete: column ${a.column} is right of the last used column of ${ws.name}` };
      }
      ws.spliceColumns(c, a.count);
      return { text: `deleted ${a.count} column(s) from column ${a.column} of ${ws.name}` };
    }
    case "add_sheet": {
      const a = args as OpArgs<"add_sheet">;
      sheetTitleOk(a.name);
      if (wb.worksheets.some((w) => w.name.toLowerCase() === a.name.toLowerCase())) {
        throw new ToolError(`a sheet named "${a.name}" already exists`);
      }
      wb.addWorksheet(a.name);
      return { text: `added sheet "${a.name}"` };
    }
    case "rename_sheet": {
      const a = args as OpArgs<"rename_sheet">;
      const ws = getSheet(wb, a.sheet);
      sheetTitleOk(a.new_name);
      if (wb.worksheets.some((w) => w !== ws && w.name.toLowerCase() === a.new_name.toLowerCase())) {
        throw new ToolError(`a sheet named "${a.new_name}" already exists`);
      }
      ws.name = a.new_name;
      return { text: `renamed sheet "${a.sheet}" to "${a.new_name}"` };
    }
    case "delete_sheet": {
      const a = args as OpArgs<"delete_sheet">;
      const ws = getSheet(wb, a.sheet);
      if (wb.worksheets.length === 1) throw new ToolError("cannot delete the only sheet of the workbook");
      wb.removeWorksheet(ws.id);
      return { text: `deleted sheet "${a.sheet}"` };
    }
    case "set_number_format": {
      const a = args as OpArgs<"set_number_format">;
      const ws = getSheet(wb, a.sheet);
      const box = parseRangeRef(a.range);
      const n = (box.bottom - box.top + 1) * (box.right - box.left + 1);
      if (n > MAX_WRITE_CELLS) throw new ToolError(`range: ${n} cells is more than ${MAX_WRITE_CELLS} in one call`);
      for (let r = box.top; r <= box.bottom; r++) {
        const row = ws.getRow(r);
        for (let c = box.left; c <= box.right; c++) row.getCell(c).numFmt = a.format;
      }
      return { text: `set number format "${a.format}" on ${ws.name}!${a.range}` };
    }
    default:
      throw new ToolError(`unknown operation "${name}"`);
  }
}

/** Recalculate and describe problems for the model. */
export function recalcNote(wb: Workbook): string {
  const r = recalcWorkbook(wb);
  return r.errors.length ? `\nwarning: ${r.errors.join("; ")}` : "";
}
