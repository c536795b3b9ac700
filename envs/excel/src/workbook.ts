/** exceljs helpers: load/save, addresses, and the JSON view of cell values the tools show. */

import { ToolError } from "@benchmax/core";
import ExcelJS from "exceljs";
import { columnIndex, columnLetters } from "./column-letters.js";

export type Workbook = ExcelJS.Workbook;
export type Worksheet = ExcelJS.Worksheet;
export type Cell = ExcelJS.Cell;

/** A corrupt or unreadable workbook. */
export class WorkbookError extends Error {
  override name = "WorkbookError";
}

export async function loadWorkbook(data: Buffer | Uint8Array, what = "workbook"): Promise<Workbook> {
  const wb = new ExcelJS.Workbook();
  try {
    await wb.xlsx.load(data as unknown as ExcelJS.Buffer);
  } catch (e) {
    throw new WorkbookError(`cannot open ${what} as xlsx: ${(e as Error).message}`);
  }
  dropInvalidDates(wb);
  return wb;
}

/**
 * exceljs reads a date-styled cached error (`<c s="1" t="e"><f>EOM(A2)</f><v>#NAME?</v></c>`) as an Invalid Date and
 * would save it as `<v>NaN</v>`: such a formula result is dropped instead (no cached value; recalculation fills it).
 */
function dropInvalidDates(wb: Workbook): void {
  for (const ws of wb.worksheets) {
    ws.eachRow({ includeEmpty: false }, (row) => {
      row.eachCell({ includeEmpty: false }, (cell) => {
        const v = cell.value as { result?: unknown } | null;
        if (v && typeof v === "object" && v.result instanceof Date && Number.isNaN(v.result.getTime())) {
          const { result: _drop, ...rest } = v;
          cell.value = rest as ExcelJS.CellValue;
        }
      });
    });
  }
}

export async function saveWorkbook(wb: Workbook): Promise<Buffer> {
  // stored (not deflated) entries: several times faster to write, and only ever read back by us
  const out = await wb.xlsx.writeBuffer({ zip: { compression: "STORE" } } as ExcelJS.XlsxWriteOptions);
  return Buffer.from(out as ArrayBuffer);
}

// --- addresses ---------------------------------------------------------------------------------------------

/** The column number of letters in either case (`ab` → 28). */
export const colToNumber = (letters: string): number => columnIndex(letters.toUpperCase());

export interface Box {
  top: number;
  left: number;
  bottom: number;
  right: number;
}

const CELL_RE = /^\$?([A-Za-z]{1,3})\$?(\d+)$/;
export const MAX_ROWS = 1048576;
export const MAX_COLS = 16384;

export function parseCellRef(ref: string, arg = "cell"): { row: number; col: number } {
  const m = CELL_RE.exec(ref.trim());
  if (!m) throw new ToolError(`${arg}: "${ref}" is not a cell reference like B3`);
  const col = colToNumber(m[1]!);
  const row = Number(m[2]);
  if (row < 1 || row > MAX_ROWS || col < 1 || col > MAX_COLS)
    throw new ToolError(`${arg}: "${ref}" is outside the sheet`);
  return { row, col };
}

/** "A1:C3" or "B2" → a box. */
export function parseRangeRef(ref: string, arg = "range"): Box {
  const parts = ref.trim().split(":");
  if (parts.length > 2 || !parts[0]) throw new ToolError(`${arg}: "${ref}" is not a range like A1:C3`);
  const a = parseCellRef(parts[0], arg);
  const b = parts[1] !== undefined ? parseCellRef(parts[1], arg) : a;
  return {
    top: Math.min(a.row, b.row),
    left: Math.min(a.col, b.col),
    bottom: Math.max(a.row, b.row),
    right: Math.max(a.col, b.col),
  };
}

export const addr = (row: number, col: number) => `${columnLetters(col)}${row}`;

/** A sheet by name, or the first sheet when no name is given; a ToolError listing the sheets otherwise. */
export function getSheet(wb: Workbook, name: string | undefined): Worksheet {
  if (name === undefined || name === "") {
    const first = wb.worksheets[0];
    if (!first) throw new ToolError("the workbook has no sheets");
    return first;
  }
  const ws = wb.getWorksheet(name);
  if (!ws) throw new ToolError(`no sheet named "${name}". Sheets: ${wb.worksheets.map((w) => w.name).join(", ")}`);
  return ws;
}

// --- values --------------------------------------------------------------------------------------------------

const EXCEL_EPOCH_MS = Date.UTC(1899, 11, 30);

/** A JS Date as exceljs reads it (UTC) → an Excel serial number. */
export function dateToSerial(d: Date): number {
  return (d.getTime() - EXCEL_EPOCH_MS) / 86_400_000;
}

export type Plain = string | number | boolean | null | { error: string };

/** The displayed (cached) value of an exceljs value, as plain JSON. */
export function plainValue(v: ExcelJS.CellValue | undefined): Plain {
  if (v === null || v === undefined) return null;
  if (typeof v === "number" || typeof v === "string" || typeof v === "boolean") return v;
  if (v instanceof Date) return v.toISOString().replace("T00:00:00.000Z", "").replace(".000Z", "Z");
  if (typeof v === "object") {
    if ("richText" in v && Array.isArray(v.richText)) return v.richText.map((r) => r.text).join("");
    if ("error" in v) return { error: String(v.error) };
    if ("formula" in v || "sharedFormula" in v) {
      return plainValue((v as { result?: ExcelJS.CellValue }).result as ExcelJS.CellValue);
    }
    if ("text" in v) return String((v as { text: unknown }).text);
  }
  return String(v);
}

/** The formula of a cell (shared formulas translated), or undefined. */
export function cellFormula(cell: Cell): string | undefined {
  if (cell.type !== ExcelJS.ValueType.Formula) return undefined;
  const f = cell.formula;
  return f ? `=${f}` : undefined;
}

/** A value the model writes: a string starting with "=" is a formula; others are literal. */
export type InputValue = string | number | boolean | null;

export function toCellValue(v: InputValue): ExcelJS.CellValue {
  if (typeof v === "string" && v.startsWith("=") && v.length > 1)
    return { formula: v.slice(1) } as ExcelJS.CellFormulaValue;
  if (typeof v === "number" && !Number.isFinite(v)) throw new ToolError(`cannot write a non-finite number (${v})`);
  return v;
}
