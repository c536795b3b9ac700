/**
 * The official SpreadsheetBench comparison (evaluation/evaluation.py: `compare_workbooks`, `cell_level_compare`,
 * `generate_cell_names`, `compare_cell_value`) ported rule for rule. Any Python exception the official code would
 * raise while comparing makes the case fail, as the official evaluation loop does.
 *
 * Cells are compared sparsely: a cell absent from both files is None on both sides, which the official compare
 * accepts, so only cells present in either file are visited — huge ranges cost nothing extra.
 */

import { columnLetters } from "./column-letters.js";
import { type EngineOptions, RecalcBudgetError } from "./formula-engine.js";
import { LazyRecalc } from "./lazy-recalc.js";
import { compareCellValue, pyValueRepr } from "./py-values.js";
import { PyError } from "./python.js";
import { cellKey, type Rect, type SheetCells, XlsxReadError, XlsxValues } from "./xlsx-values.js";

/** One comma-separated part of an answer_position, as the official code reads it. */
export interface PositionPart {
  /** The sheet after quote stripping; undefined = the gold workbook's first sheet. */
  sheet?: string;
  /** The cell range after quote stripping. */
  range: string;
}

/** What a range names, in the official semantics. */
export type RangeSpec =
  | { kind: "cell"; row: number; col: number }
  | { kind: "rect"; rect: Rect }
  | { kind: "empty" }
  | { kind: "error"; message: string };

const stripQuotes = (s: string) => s.replace(/^'+/, "").replace(/'+$/, "");

/** `answer_position.split(',')`, then `Sheet!Range` with quotes stripped (evaluation.py, compare_workbooks). */
export function splitAnswerPosition(answerPosition: unknown): PositionPart[] {
  if (typeof answerPosition !== "string") {
    throw new PyError("AttributeError", `answer_position must be a str, got ${JSON.stringify(answerPosition)}`);
  }
  return answerPosition.split(",").map((part) => {
    if (part.includes("!")) {
      const pieces = part.split("!");
      if (pieces.length !== 2) {
        throw new PyError(
          "ValueError",
          `too many values to unpack: ${JSON.stringify(part)} has ${pieces.length - 1} "!"`,
        );
      }
      return { sheet: stripQuotes(pieces[0]!), range: stripQuotes(pieces[1]!) };
    }
    return { range: stripQuotes(part) };
  });
}

/** Python's str.isdigit (Unicode decimal digits plus superscript/circled digit forms). */
const PY_ISDIGIT =
  /[\p{Nd}\u00b2\u00b3\u00b9\u2070\u2074-\u2079\u2080-\u2089\u2460-\u2468\u2474-\u247c\u2488-\u2490\u24ea\u24f5-\u24fd\u24ff\u2776-\u277e\u2780-\u2788\u278a-\u2792]/u;
const ND_ONLY = /^\p{Nd}+$/u;

function pyInt(digits: string): number {
  if (digits === "" || !ND_ONLY.test(digits)) {
    throw new PyError("ValueError", `invalid literal for int() with base 10: '${digits}'`);
  }
  let n = 0;
  for (const ch of digits) {
    const cp = ch.codePointAt(0)!;
    let d = cp - 48;
    if (d < 0 || d > 9) {
      d = 0;
      while (/\p{Nd}/u.test(String.fromCodePoint(cp - d - 1))) d++;
      d %= 10;
    }
    n = n * 10 + d;
  }
  return n;
}

/** `col_name2num`: ord(c) - ord('A') + 1 for every character, in base 26 — no validation, as in the original. */
function colNameToNum(name: string): number {
  let n = 0;
  for (const ch of name) n = n * 26 + (ch.codePointAt(0)! - 65 + 1);
  return n;
}

function splitCell(cell: string): { col: string; row: string } {
  let col = "";
  let row = "";
  for (const ch of cell) {
    if (PY_ISDIGIT.test(ch)) row += ch;
    else col += ch;
  }
  return { col, row };
}

const MAX_ROW = 1048576;
const MAX_COL = 18278; // ZZZ: names past it no longer parse as coordinates

/** openpyxl `ws[name]` for a name without ":": a single cell, or an error (a row, a column or junk). */
function singleCell(name: string): RangeSpec {
  // ABSOLUTE_RE without the ":" part; Python's \d is Unicode, and "$" also matches before a final newline
  const m = /^\$?([A-Za-z]{1,3})?\$?(\p{Nd}+)?\n?$/u.exec(name);
  if (!m) return { kind: "error", message: `${name} is not a valid coordinate or range` };
  if (!m[1] && !m[2]) return { kind: "error", message: `${name} is not a valid coordinate or range` };
  if (!m[1] || !m[2]) {
    return {
      kind: "error",
      message: `${JSON.stringify(name)} names a whole row or column, not a cell ('tuple' object has no attribute 'value')`,
    };
  }
  const col = colNameToNum(m[1].toUpperCase());
  const row = pyInt(m[2]);
  if (row < 1 || row > MAX_ROW)
    return { kind: "error", message: `Row numbers must be between 1 and 1048576 (${name})` };
  return { kind: "cell", row, col };
}

/** `generate_cell_names(range)` followed by `ws[name]` for each name, as one spec. */
export function parseRange(range: string): RangeSpec {
  try {
    if (!range.includes(":")) return singleCell(range);
    const ends = range.split(":");
    if (ends.length !== 2)
      return { kind: "error", message: `too many values to unpack in range ${JSON.stringify(range)}` };
    const a = splitCell(ends[0]!);
    const b = splitCell(ends[1]!);
    const minCol = colNameToNum(a.col);
    const minRow = pyInt(a.row);
    const maxCol = colNameToNum(b.col);
    const maxRow = pyInt(b.row);
    if (minCol > maxCol || minRow > maxRow) return { kind: "empty" };
    if (minCol < 1 || maxCol > MAX_COL) {
      return {
        kind: "error",
        message: `range ${JSON.stringify(range)} spans columns ${minCol}..${maxCol}, outside A..ZZZ`,
      };
    }
    if (minRow < 1 || maxRow > MAX_ROW)
      return { kind: "error", message: `Row numbers must be between 1 and 1048576 (${range})` };
    return { kind: "rect", rect: { minCol, minRow, maxCol, maxRow } };
  } catch (e) {
    return { kind: "error", message: (e as Error).message };
  }
}

/** Check an answer_position reads as the official code reads it; returns a message when it cannot (always fails). */
export function answerPositionProblem(answerPosition: unknown): string | undefined {
  let parts: PositionPart[];
  try {
    parts = splitAnswerPosition(answerPosition);
  } catch (e) {
    return (e as Error).message;
  }
  for (const p of parts) {
    const spec = parseRange(p.range);
    if (spec.kind === "error") return `${JSON.stringify(p.range)}: ${spec.message}`;
  }
  return undefined;
}

export interface CellMismatch {
  sheet: string;
  cell: string;
  expected: string;
  actual: string;
}

export interface CompareResult {
  pass: boolean;
  /** Why it failed ("" when it passed). */
  message: string;
  /** The first mismatching cells (at most 10). */
  mismatches: CellMismatch[];
  /** Cells compared with a value on at least one side. */
  cellsCompared: number;
  /** The gold file could not be read: a dataset problem, not the model's. */
  goldError?: string;
  /**
   * The embedded engine could not compute a compared cell (an unsupported function, named here): the result
   * says nothing about the model. The caller falls back to LibreOffice or reports the case unscorable.
   */
  unscorable?: string;
  /**
   * Whose file made the case unscorable: "gold" (the task's fault: env_error) or "output" (what the model wrote:
   * a function Excel has that the engine lacks, or a recalculation past its budget).
   */
  unscorableBy?: "gold" | "output";
}

/** A recalculation budget ran out while reading one side's cells. */
class SideBudgetError extends Error {
  constructor(
    readonly side: "gold" | "output",
    readonly budget: RecalcBudgetError,
  ) {
    super(budget.message);
  }
}

function onSide<T>(side: "gold" | "output", f: () => T): T {
  try {
    return f();
  } catch (e) {
    if (e instanceof RecalcBudgetError) throw new SideBudgetError(side, e);
    throw e;
  }
}

function fail(message: string, extra: Partial<CompareResult> = {}): CompareResult {
  return { pass: false, message, mismatches: [], cellsCompared: 0, ...extra };
}

function open(buf: Buffer | XlsxValues): XlsxValues {
  return buf instanceof XlsxValues ? buf : new XlsxValues(buf);
}

/**
 * `compare_workbooks(gt_file, proc_file, instruction_type, answer_position)` plus the evaluation loop's
 * `except: result = False`. `output` undefined = the output file does not exist.
 */
export function compareWorkbooks(
  gold: Buffer | XlsxValues,
  output: Buffer | XlsxValues | undefined,
  answerPosition: unknown,
  options: CompareOptions = {},
): CompareResult {
  if (output === undefined) return fail("File not exist");
  let gt: XlsxValues;
  let proc: XlsxValues;
  try {
    gt = open(gold);
  } catch (e) {
    const msg = `gold file unreadable: ${(e as Error).message}`;
    return fail(msg, { goldError: msg });
  }
  try {
    proc = open(output);
  } catch (e) {
    return fail(`output file unreadable: ${(e as Error).message}`);
  }
  try {
    const reader = options.recalcOutput && proc.hasFormulas() ? new LazyRecalc(proc, options.engine) : proc;
    // gold formula cells Excel left without a cached value are computed, never compared as empty
    const goldReader =
      options.recalcGold !== false && gt.hasFormulas()
        ? new LazyRecalc(gt, { ...options.engine, onlyMissing: true })
        : gt;
    const r = compareOpened(goldReader, gt, proc, reader, answerPosition);
    const unscorable = [
      ...(goldReader instanceof LazyRecalc ? goldReader.unscorable.map((u) => `gold ${u}`) : []),
      ...(reader instanceof LazyRecalc ? reader.unscorable : []),
    ];
    if (!r.pass && reader instanceof LazyRecalc && reader.errors.length) {
      // never thrown away: why a recalculated cell may differ
      r.message += `; recalculation: ${reader.errors.slice(0, 3).join("; ")}`;
    }
    if (unscorable.length) {
      const goldSide = goldReader instanceof LazyRecalc && goldReader.unscorable.length > 0;
      return {
        ...r,
        pass: false,
        unscorable: `the embedded engine cannot evaluate ${unscorable.slice(0, 3).join("; ")}`,
        unscorableBy: goldSide ? "gold" : "output",
      };
    }
    return r;
  } catch (e) {
    if (e instanceof SideBudgetError) return fail(e.message, { unscorable: e.message, unscorableBy: e.side });
    if (e instanceof RecalcBudgetError) return fail(e.message, { unscorable: e.message, unscorableBy: "output" });
    if (e instanceof PyError || e instanceof XlsxReadError) return fail(e.message);
    throw e;
  }
}

export interface CompareOptions {
  /**
   * Recalculate the output's formulas first (the embedded engine, evaluated lazily from the sheet XML: only the
   * compared formula cells and what they depend on), as the official pipeline recalculates before comparing.
   */
  recalcOutput?: boolean;
  /** Compute gold formula cells that have no cached value (default true). */
  recalcGold?: boolean;
  /** Engine limits (time budget). */
  engine?: EngineOptions;
}

interface CellReader {
  readCells(sheet: string, rects: Rect[]): SheetCells;
}

function compareOpened(
  goldReader: CellReader,
  gt: XlsxValues,
  proc: XlsxValues,
  reader: CellReader,
  answerPosition: unknown,
): CompareResult {
  const parts = splitAnswerPosition(answerPosition);
  const mismatches: CellMismatch[] = [];
  let cellsCompared = 0;
  const messages: string[] = [];
  let ok = true;
  for (const part of parts) {
    let sheet = part.sheet;
    if (sheet === undefined) {
      if (gt.sheetNames.length === 0) throw new PyError("IndexError", "gold workbook has no sheets");
      sheet = gt.sheetNames[0]!;
    }
    if (!proc.hasSheet(sheet)) {
      ok = false;
      messages.push(`worksheet not found: ${JSON.stringify(sheet)}`);
      continue;
    }
    if (!gt.hasSheet(sheet)) throw new PyError("KeyError", `Worksheet ${sheet} does not exist in the gold workbook.`);
    const spec = parseRange(part.range);
    if (spec.kind === "error") throw new PyError("ValueError", spec.message);
    if (spec.kind === "empty") continue;
    if (gt.isChartsheet(sheet) || proc.isChartsheet(sheet)) {
      throw new PyError("TypeError", `'Chartsheet' object is not subscriptable (${sheet})`);
    }
    const rect: Rect =
      spec.kind === "cell" ? { minCol: spec.col, minRow: spec.row, maxCol: spec.col, maxRow: spec.row } : spec.rect;
    const a = onSide("gold", () => goldReader.readCells(sheet, [rect]));
    const b = onSide("output", () => reader.readCells(sheet, [rect]));
    const bad: number[] = [];
    const visit = (k: number) => {
      cellsCompared++;
      if (!compareCellValue(a.get(k) ?? null, b.get(k) ?? null)) bad.push(k);
    };
    for (const k of a.keys()) visit(k);
    for (const k of b.keys()) if (!a.has(k)) visit(k);
    if (bad.length) {
      ok = false;
      // report in the official order: column by column, top to bottom
      bad.sort((x, y) => (x % 32768) - (y % 32768) || x - y);
      for (const k of bad.slice(0, 10 - mismatches.length)) {
        const cell = `${columnLetters(k % 32768)}${Math.floor(k / 32768)}`;
        mismatches.push({
          sheet,
          cell,
          expected: pyValueRepr(a.get(k) ?? null),
          actual: pyValueRepr(b.get(k) ?? null),
        });
      }
    }
  }
  if (mismatches.length) {
    const m = mismatches[0]!;
    messages.unshift(`Value difference at cell ${m.sheet}!${m.cell}: gold has ${m.expected}, output has ${m.actual}`);
  }
  return { pass: ok, message: ok ? "" : messages.join("; "), mismatches, cellsCompared };
}

/** Read cell values (for tests and tools): the cached values in `range` of `sheet`. */
export function readCachedValues(buf: Buffer, sheet: string, rect: Rect): SheetCells {
  return new XlsxValues(buf).readCells(sheet, [rect]);
}

export { cellKey };
