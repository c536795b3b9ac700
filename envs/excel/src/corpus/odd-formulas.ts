/**
 * Formula elements of shapes that LibreOffice (the official pipeline's recalculation) does not read as "a formula
 * with this cached value": an orphan shared formula, data-table formulas, empty `<f>` and their relatives. Each case
 * is one cell in column C (row = its index + 1) of a sheet whose A/B columns hold data, and every one caches 471.3 — the value a model would
 * write to collect a reward LibreOffice would not give it. LibreOffice's values are recorded in
 * fixtures/formula-corpus/odd-formulas.json (written by `BENCHMAX_WRITE_CORPUS=1 npx vitest run
 * src/odd-formulas-lo.test.ts` with soffice installed).
 */
import { rawSheetXlsx } from "../raw-xlsx.js";

export interface OddCase {
  name: string;
  /** The `<f …>` element of the cell (its `<v>471.3</v>` is added). */
  f: string;
  /** The cell holds text (`t="str"`). */
  str?: boolean;
}

/** The cached value every case holds. */
export const CACHED = 471.3;

/** The data the cases' formulas could read: A1:B4, and a proper shared-formula group in D1:D4 (si 0). */
const DATA = [
  '<c r="A1"><v>10</v></c>',
  '<c r="B1"><v>5</v></c>',
  '<c r="A2"><v>2</v></c>',
  '<c r="B2"><v>3</v></c>',
  '<c r="A3"><v>471.3</v></c>',
  '<c r="B3"><v>1</v></c>',
  '<c r="A4"><v>7</v></c>',
  '<c r="B4"><v>8</v></c>',
  '<c r="D1"><f t="shared" ref="D1:D4" si="0">A1*B1</f><v>50</v></c>',
  '<c r="D2"><f t="shared" si="0"/><v>6</v></c>',
  '<c r="D3"><f t="shared" si="0"/><v>471.3</v></c>',
  '<c r="D4"><f t="shared" si="0"/><v>56</v></c>',
];

export const ODD_CASES: OddCase[] = [
  { name: "orphan shared formula (no master for its si)", f: '<f t="shared" si="7"/>' },
  { name: "data-table formula, self-closing", f: '<f t="dataTable" ref="C2:C3" dt2D="0" dtr="0" r1="A1"/>' },
  { name: "data-table formula with text", f: '<f t="dataTable" ref="C3" dt2D="0" dtr="1" r1="A3">A3</f>' },
  { name: "empty formula <f></f>", f: "<f></f>" },
  { name: "empty formula <f/>", f: "<f/>" },
  { name: "blank formula <f> </f>", f: "<f> </f>" },
  { name: "empty formula, text cell", f: "<f></f>", str: true },
  { name: "empty array formula", f: '<f t="array" ref="C8"/>' },
  { name: "shared formula without si", f: '<f t="shared"/>' },
  { name: "shared formula with a non-numeric si", f: '<f t="shared" si="x"/>' },
  { name: "a second master of shared group 0", f: '<f t="shared" ref="C11" si="0">A2*2</f>' },
  { name: "formula of an unknown type", f: '<f t="normal2">A1</f>' },
  { name: "a formula element never closed", f: "<f>A1*2" },
];

/** The workbook of one case alone (its cell in C1, the data around it): the scorer's view of one answer cell. */
export function oddCaseWorkbook(i: number): Buffer {
  const c = ODD_CASES[i]!;
  return rawSheetXlsx([
    ...DATA,
    `<c r="C${i + 1}"${c.str ? ' t="str"' : ""}>${c.f}<v>${c.str ? "471.3 text" : CACHED}</v></c>`,
  ]);
}
