import type { StateCell, StateSheet, StateView } from "@benchmax/core";
import type ExcelJS from "exceljs";
import { type ExcelState, workbookBytes } from "./tools.js";
import { cellFormula, loadWorkbook, plainValue, saveWorkbook, type Workbook } from "./workbook.js";

/** The most rows and columns of one sheet the view shows (its used range's top-left corner). */
export const VIEW_MAX_ROWS = 60;
export const VIEW_MAX_COLS = 26;
/** The most sheets the view shows. */
export const VIEW_MAX_SHEETS = 8;
/** Longest text of one cell in the view. */
const MAX_CELL_CHARS = 200;

function viewValue(cell: ExcelJS.Cell): StateCell {
  const v = plainValue(cell.value);
  if (v && typeof v === "object") return v.error;
  // a formula with no cached value yet (written by a tool, not recalculated): show the formula itself
  if (v === null) {
    const f = cellFormula(cell);
    if (f) return `=${f}`;
  }
  return typeof v === "string" && v.length > MAX_CELL_CHARS ? `${v.slice(0, MAX_CELL_CHARS)}…` : v;
}

/** One worksheet's used range (from its first used row and column), capped at VIEW_MAX_ROWS × VIEW_MAX_COLS. */
function sheetView(ws: ExcelJS.Worksheet): StateSheet {
  let top = Number.POSITIVE_INFINITY;
  let left = Number.POSITIVE_INFINITY;
  let bottom = 0;
  let right = 0;
  ws.eachRow({ includeEmpty: false }, (row, r) => {
    row.eachCell({ includeEmpty: false }, (_cell, c) => {
      top = Math.min(top, r);
      bottom = Math.max(bottom, r);
      left = Math.min(left, c);
      right = Math.max(right, c);
    });
  });
  if (bottom === 0) return { name: ws.name, cells: [] };
  const rows = Math.min(bottom - top + 1, VIEW_MAX_ROWS);
  const cols = Math.min(right - left + 1, VIEW_MAX_COLS);
  const cells: StateCell[][] = [];
  for (let r = 0; r < rows; r++) {
    const row = ws.getRow(top + r);
    const out: StateCell[] = [];
    for (let c = 0; c < cols; c++) out.push(viewValue(row.getCell(left + c)));
    cells.push(out);
  }
  const cut: string[] = [];
  if (bottom - top + 1 > rows) cut.push(`first ${rows} of ${bottom - top + 1} rows`);
  if (right - left + 1 > cols) cut.push(`first ${cols} of ${right - left + 1} columns`);
  return {
    name: ws.name,
    firstRow: top,
    firstColumn: left,
    cells,
    ...(cut.length ? { truncated: cut.join(", ") } : {}),
  };
}

/**
 * excel's state view (`StateViewCapability`): the rollout's workbook as it is now — each sheet's used range with its
 * displayed values (a formula not yet calculated shows as its formula), capped in size. Reads the workbook and never
 * changes it.
 */
export async function excelStateView(state: ExcelState): Promise<StateView> {
  // a workbook still held in memory and changed since it was written is the current one (as excelArtifacts reads it)
  const held = state as ExcelState & { wb?: Workbook; dirty?: boolean };
  const wb = await loadWorkbook(
    held.wb && held.dirty ? await saveWorkbook(held.wb) : await workbookBytes(state),
    "the rollout's workbook",
  );
  const sheets = wb.worksheets.slice(0, VIEW_MAX_SHEETS).map(sheetView);
  const more = wb.worksheets.length - sheets.length;
  const notes = [
    ...(more > 0 ? [`${more} more sheet${more === 1 ? "" : "s"} not shown`] : []),
    ...(state.stale ? ["formulas not recalculated yet: cached values may be old"] : []),
  ];
  return { kind: "grid", sheets, ...(notes.length ? { note: notes.join("; ") } : {}) };
}
