/**
 * A fast reader of cached cell values straight from an xlsx zip, returning what openpyxl 3.1
 * `load_workbook(data_only=True)` would give for the same cells. Only the parts the compare needs are inflated
 * (workbook, rels, styles, shared strings on first use, and the named sheets), and only cells inside the asked-for
 * rectangles are decoded.
 */
import { columnIndex } from "./column-letters.js";
import type { TableArea } from "./formula/evaluate.js";
import { HiddenCells } from "./merged-cells.js";
import { castNumber, fromExcel, fromISO8601, type PyValue } from "./py-values.js";
import { PyError, pyIntFromString } from "./python.js";
import { elements, firstElement, scanAttrs, startTags, XmlScanner } from "./xml-scan.js";
import { ZipReader } from "./zip.js";

/** The file cannot be read as openpyxl would read it (openpyxl's `load_workbook` would raise). */
export class XlsxReadError extends Error {
  override name = "XlsxReadError";
}

/** A table's area (header and totals rows included) and its column names. */
export interface TableDef extends TableArea {
  name: string;
}

/** A rectangle of cells, 1-based and inclusive. */
export interface Rect {
  minCol: number;
  minRow: number;
  maxCol: number;
  maxRow: number;
}

const ENTITY = /&(?:#(\d+)|#x([0-9a-fA-F]+)|(amp|lt|gt|quot|apos));/g;
const NAMED: Record<string, string> = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" };

export function decodeXml(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(ENTITY, (_m, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (dec) return String.fromCodePoint(Number.parseInt(dec, 10));
    if (hex) return String.fromCodePoint(Number.parseInt(hex, 16));
    return NAMED[name!]!;
  });
}

/** The `name="value"` attributes of a start tag's text, decoded (one pass: xml-scan.ts). */
export function parseAttrs(s: string): Record<string, string> {
  return scanAttrs(s, decodeXml);
}

/** An attribute by local name, whatever its namespace prefix (`r:id`, `id`). */
function attrLocal(attrs: Record<string, string>, local: string): string | undefined {
  if (attrs[local] !== undefined) return attrs[local];
  for (const [k, v] of Object.entries(attrs)) if (k.endsWith(`:${local}`)) return v;
  return undefined;
}

const T_OR_RPH = new Set(["t", "rPh"]);

/** The text of every `<t>` of a string item (`<si>` / `<is>`), skipping phonetic runs — openpyxl `Text.content`. */
function textContent(xml: string): string {
  let out = "";
  for (const el of elements(xml, T_OR_RPH)) if (el.tag.local === "t") out += decodeXml(el.inner);
  return out;
}

function resolveTarget(base: string, target: string): string {
  if (target.startsWith("/")) return target.slice(1);
  const parts = base.split("/").slice(0, -1);
  for (const seg of target.split("/")) {
    if (seg === "..") parts.pop();
    else if (seg !== "." && seg !== "") parts.push(seg);
  }
  return parts.join("/");
}

interface Rel {
  target: string;
  type: string;
}

function readRels(zip: ZipReader, part: string): Map<string, Rel> {
  const dir = part.split("/").slice(0, -1).join("/");
  const file = part.split("/").pop()!;
  const relsPath = `${dir ? `${dir}/` : ""}_rels/${file}.rels`;
  const out = new Map<string, Rel>();
  if (!zip.has(relsPath)) return out;
  const xml = zip.readText(relsPath);
  for (const tag of startTags(xml, "Relationship")) {
    const a = parseAttrs(tag.attrs);
    if (a.Id && a.Target !== undefined) {
      out.set(a.Id, {
        target: a.TargetMode === "External" ? a.Target : resolveTarget(part, a.Target),
        type: a.Type ?? "",
      });
    }
  }
  return out;
}

// --- number formats (openpyxl styles/numbers.py, 3.1) -----------------------------------------------------

const BUILTIN_FORMATS: Record<number, string> = {
  0: "General",
  1: "0",
  2: "0.00",
  3: "#,##0",
  4: "#,##0.00",
  5: '"$"#,##0_);("$"#,##0)',
  6: '"$"#,##0_);[Red]("$"#,##0)',
  7: '"$"#,##0.00_);("$"#,##0.00)',
  8: '"$"#,##0.00_);[Red]("$"#,##0.00)',
  9: "0%",
  10: "0.00%",
  11: "0.00E+00",
  12: "# ?/?",
  13: "# ??/??",
  14: "mm-dd-yy",
  15: "d-mmm-yy",
  16: "d-mmm",
  17: "mmm-yy",
  18: "h:mm AM/PM",
  19: "h:mm:ss AM/PM",
  20: "h:mm",
  21: "h:mm:ss",
  22: "m/d/yy h:mm",
  37: "#,##0_);(#,##0)",
  38: "#,##0_);[Red](#,##0)",
  39: "#,##0.00_);(#,##0.00)",
  40: "#,##0.00_);[Red](#,##0.00)",
  41: '_(* #,##0_);_(* \\(#,##0\\);_(* "-"_);_(@_)',
  42: '_("$"* #,##0_);_("$"* \\(#,##0\\);_("$"* "-"_);_(@_)',
  43: '_(* #,##0.00_);_(* \\(#,##0.00\\);_(* "-"??_);_(@_)',
  44: '_("$"* #,##0.00_)_("$"* \\(#,##0.00\\)_("$"* "-"??_)_(@_)',
  45: "mm:ss",
  46: "[h]:mm:ss",
  47: "mmss.0",
  48: "##0.0E+0",
  49: "@",
};

/**
 * openpyxl's `STRIP_RE.sub("", fmt)` with `STRIP_RE = '".*?"|\\[(?!hh?\\]|mm?\\]|ss?\\])[^\\]]*\\]'` (quoted text and
 * bracketed codes but elapsed-time ones removed), in one pass: the regex restarts at every `[` of a code that never
 * closes one, quadratic in a model-written format code.
 */
function stripFormat(fmt: string): string {
  let out = "";
  let noBracket = false;
  let nl = -2; // the next line end after the position looked at (-1: none)
  for (let i = 0; i < fmt.length; ) {
    const c = fmt[i]!;
    if (c === '"') {
      const q = fmt.indexOf('"', i + 1);
      if (nl !== -1 && nl <= i) nl = fmt.indexOf("\n", i + 1); // `.` does not cross a line end
      if (q >= 0 && (nl < 0 || nl > q)) {
        i = q + 1;
        continue;
      }
    } else if (c === "[" && !noBracket && !/^\[(?:hh?|mm?|ss?)\]/.test(fmt.slice(i, i + 4))) {
      const q = fmt.indexOf("]", i + 1);
      if (q >= 0) {
        i = q + 1;
        continue;
      }
      noBracket = true;
    }
    out += c;
    i++;
  }
  return out;
}
const TIMEDELTA_RE = /\[hh?\](:mm(:ss(\.0*)?)?)?|\[mm?\](:ss(\.0*)?)?|\[ss?\](\.0*)?/i;

/** openpyxl `is_date_format`. */
export function isDateFormat(fmt: string | undefined): boolean {
  if (fmt === undefined) return false;
  const first = stripFormat(fmt.split(";")[0]!);
  return /(?<![_\\])[dmhysDMHYS]/.test(first);
}

/** openpyxl `is_timedelta_format`. */
export function isTimedeltaFormat(fmt: string | undefined): boolean {
  if (fmt === undefined) return false;
  return TIMEDELTA_RE.test(fmt.split(";")[0]!);
}

interface Styles {
  count: number;
  date: Set<number>;
  timedelta: Set<number>;
}

function readStyles(xml: string | undefined): Styles {
  const date = new Set<number>();
  const timedelta = new Set<number>();
  if (xml === undefined) return { count: 1, date, timedelta };
  const custom = new Map<number, string>();
  for (const tag of startTags(xml, "numFmt")) {
    const a = parseAttrs(tag.attrs);
    if (a.numFmtId !== undefined) custom.set(Number.parseInt(a.numFmtId, 10), a.formatCode ?? "");
  }
  const scan = new XmlScanner(xml);
  const start = scan.next("cellXfs");
  let count = 0;
  if (start) {
    const end = start.selfClosing ? start.end : (scan.element(start)?.end ?? xml.length);
    // one verdict per format id: a model's styles may repeat one long format code in many cell formats
    const kinds = new Map<number, { date: boolean; timedelta: boolean }>();
    for (const tag of startTags(xml, "xf", start.end, end)) {
      const a = parseAttrs(tag.attrs);
      const id = a.numFmtId !== undefined ? Number.parseInt(a.numFmtId, 10) : 0;
      let k = kinds.get(id);
      if (!k) {
        const fmt = custom.has(id) ? custom.get(id) : BUILTIN_FORMATS[id];
        k = { date: isDateFormat(fmt), timedelta: isTimedeltaFormat(fmt) };
        kinds.set(id, k);
      }
      if (k.date) date.add(count);
      if (k.timedelta) timedelta.add(count);
      count++;
    }
  }
  return { count, date, timedelta };
}

// --- workbook ------------------------------------------------------------------------------------------------

interface SheetEntry {
  name: string;
  part: string;
  chart: boolean;
}

const COORD = /^([A-Z]{1,3})(\d+)$/;
const SHEET_TAGS = new Set(["row", "c", "mergeCell"]);

/** One cell as found in the sheet XML. */
export interface RawCell {
  a: Record<string, string>;
  inner: string;
  row: number;
  col: number;
}

/** Cell values of one sheet, keyed `row * 32768 + col`. Cells absent from the map read as None. */
export type SheetCells = Map<number, PyValue>;

export const cellKey = (row: number, col: number) => row * 32768 + col;

/** One xlsx file opened for reading cached values. */
/** Whether any worksheet of the file holds a formula; true when the file cannot be read (let the compare fail it). */
export function hasFormulas(buf: Buffer): boolean {
  try {
    return new XlsxValues(buf).hasFormulas();
  } catch {
    return true;
  }
}

export class XlsxValues {
  readonly sheetNames: string[];
  readonly epoch1904: boolean;
  private readonly zip: ZipReader;
  private readonly sheets = new Map<string, SheetEntry>();
  private readonly wbRels: Map<string, Rel>;
  private readonly wbPart: string;
  private styles?: Styles;
  private shared?: string[];

  constructor(buf: Buffer) {
    try {
      this.zip = new ZipReader(buf);
    } catch (e) {
      throw new XlsxReadError(`File is not a zip file (${(e as Error).message})`);
    }
    const rootRels = readRels(this.zip, "");
    let wbPart = "xl/workbook.xml";
    for (const r of rootRels.values()) if (r.type.endsWith("/officeDocument")) wbPart = r.target;
    if (!this.zip.has(wbPart)) throw new XlsxReadError(`not an xlsx workbook (no ${wbPart})`);
    const wb = this.zip.readText(wbPart);
    this.wbPart = wbPart;
    this.wbRels = readRels(this.zip, wbPart);
    const pr = startTags(wb, "workbookPr").next().value;
    const d1904 = pr ? parseAttrs(pr.attrs).date1904 : undefined;
    this.epoch1904 = d1904 === "1" || d1904 === "true";
    const names: string[] = [];
    for (const tag of startTags(wb, "sheet")) {
      const a = parseAttrs(tag.attrs);
      const id = attrLocal(a, "id");
      if (!id || a.name === undefined) continue; // openpyxl drops sheets without an id
      const rel = this.wbRels.get(id);
      if (!rel) throw new XlsxReadError(`workbook.xml: sheet "${a.name}" points at a missing relationship ${id}`);
      if (!this.zip.has(rel.target)) continue; // openpyxl skips sheets whose part is missing
      names.push(a.name);
      this.sheets.set(a.name, { name: a.name, part: rel.target, chart: rel.type.includes("chartsheet") });
    }
    this.sheetNames = names;
  }

  /** The tables ("Format as Table") of every worksheet: name, sheet, area and column names. */
  tables(): TableDef[] {
    const out: TableDef[] = [];
    for (const entry of this.sheets.values()) {
      if (entry.chart) continue;
      for (const rel of readRels(this.zip, entry.part).values()) {
        if (!rel.type.endsWith("/table") || !this.zip.has(rel.target)) continue;
        const xml = this.zip.readText(rel.target);
        const t = startTags(xml, "table").next().value;
        if (!t) continue;
        const a = parseAttrs(t.attrs);
        const m = /^([A-Z]+)(\d+):([A-Z]+)(\d+)$/.exec(a.ref ?? "");
        if (!a.name || !m) continue;
        const columns: string[] = [];
        for (const c of startTags(xml, "tableColumn")) columns.push(parseAttrs(c.attrs).name ?? "");
        out.push({
          name: a.displayName ?? a.name,
          sheet: entry.name,
          r1: Number(m[2]),
          c1: columnIndex(m[1]!),
          r2: Number(m[4]),
          c2: columnIndex(m[3]!),
          headerRows: a.headerRowCount === undefined ? 1 : Number(a.headerRowCount),
          totalsRows: a.totalsRowCount === undefined ? 0 : Number(a.totalsRowCount),
          columns,
        });
      }
    }
    return out;
  }

  /** The workbook's defined names: `{name, sheet (for a sheet-local name), text}`. */
  definedNames(): Array<{ name: string; sheet?: string; text: string }> {
    const out: Array<{ name: string; sheet?: string; text: string }> = [];
    const wbPart = this.wbPart;
    const xml = this.zip.readText(wbPart);
    const order: string[] = [];
    for (const tag of startTags(xml, "sheet")) {
      const a = parseAttrs(tag.attrs);
      if (a.name !== undefined) order.push(a.name);
    }
    for (const el of elements(xml, "definedName")) {
      if (el.tag.selfClosing) continue;
      const a = parseAttrs(el.tag.attrs);
      if (!a.name) continue;
      const local = a.localSheetId !== undefined ? order[Number(a.localSheetId)] : undefined;
      out.push({ name: a.name, sheet: local, text: decodeXml(el.inner) });
    }
    return out;
  }

  /** Whether any worksheet holds a formula (`<f>`): without one, recalculation cannot change a value. */
  hasFormulas(): boolean {
    for (const entry of this.sheets.values()) {
      if (entry.chart) continue;
      if (/<(?:[\w.-]+:)?f[\s>/]/.test(this.zip.readText(entry.part))) return true;
    }
    return false;
  }

  /**
   * How many formula elements (`<f>`) a worksheet's XML holds, counted without parsing its cells: a cheap bound
   * checked before a recalculation builds anything. @internal
   */
  formulaCount(sheet: string): number {
    const entry = this.sheets.get(sheet);
    if (!entry || entry.chart) return 0;
    const xml = this.zip.readText(entry.part);
    let n = 0;
    const re = /<(?:[\w.-]+:)?f[\s>/]/g;
    while (re.exec(xml)) n++;
    return n;
  }

  hasSheet(name: string): boolean {
    return this.sheets.has(name);
  }

  isChartsheet(name: string): boolean {
    return this.sheets.get(name)?.chart ?? false;
  }

  private partOfType(suffix: string): string | undefined {
    for (const r of this.wbRels.values()) if (r.type.endsWith(suffix) && this.zip.has(r.target)) return r.target;
    return undefined;
  }

  private getStyles(): Styles {
    if (!this.styles) {
      const part = this.partOfType("/styles");
      this.styles = readStyles(part ? this.zip.readText(part) : undefined);
    }
    return this.styles;
  }

  private sharedStrings(): string[] {
    if (!this.shared) {
      const part = this.partOfType("/sharedStrings");
      const out: string[] = [];
      if (part) {
        const xml = this.zip.readText(part);
        for (const el of elements(xml, "si")) out.push(textContent(el.inner).replaceAll("x005F_", ""));
      }
      this.shared = out;
    }
    return this.shared;
  }

  /**
   * The cached values of the cells of `sheet` that lie in any of `rects` (openpyxl data_only semantics:
   * a formula without a cached value is None; cells hidden by a merge, other than its top-left, are None).
   */
  readCells(sheet: string, rects: Rect[]): SheetCells {
    const entry = this.sheets.get(sheet);
    if (!entry) throw new XlsxReadError(`no worksheet named ${JSON.stringify(sheet)}`);
    const out: SheetCells = new Map();
    if (rects.length === 0) return out;
    const inside = (row: number, col: number) => {
      for (const r of rects) if (row >= r.minRow && row <= r.maxRow && col >= r.minCol && col <= r.maxCol) return true;
      return false;
    };
    const styles = this.getStyles();
    const hidden = new HiddenCells(rects);
    let merges = 0;
    this.scanSheet(
      entry.part,
      (ref) => {
        hidden.add(ref);
        merges++;
      },
      (a, inner, row, col) => {
        if (inside(row, col)) out.set(cellKey(row, col), this.cellValue(a, inner, styles, entry.part));
      },
    );
    // cells a merged range hides (all but its top-left) read as None
    if (merges) for (const k of out.keys()) if (hidden.has(Math.floor(k / 32768), k % 32768)) out.set(k, null);
    return out;
  }

  /**
   * Every cell of a sheet, undecoded (for the lazy recalculation of the scorer), with the sheet's merged ranges.
   * @internal
   */
  rawCells(sheet: string): {
    cells: Map<number, RawCell>;
    merges: string[];
    part: string;
    maxRow: number;
    maxCol: number;
  } {
    const entry = this.sheets.get(sheet);
    if (!entry) throw new XlsxReadError(`no worksheet named ${JSON.stringify(sheet)}`);
    const cells = new Map<number, RawCell>();
    const merges: string[] = [];
    let maxRow = 0;
    let maxCol = 0;
    this.scanSheet(
      entry.part,
      (ref) => merges.push(ref),
      (a, inner, row, col) => {
        if (row > maxRow) maxRow = row;
        if (col > maxCol) maxCol = col;
        cells.set(cellKey(row, col), { a, inner, row, col });
      },
    );
    return { cells, merges, part: entry.part, maxRow, maxCol };
  }

  /**
   * Walk a worksheet part's XML in document order: each merged range's ref to `onMerge`, each cell's attributes,
   * inner XML and position to `onCell` (a cell or row without `r` follows the one before it, as openpyxl reads it).
   */
  private scanSheet(
    part: string,
    onMerge: (ref: string) => void,
    onCell: (a: Record<string, string>, inner: string, row: number, col: number) => void,
  ): void {
    const xml = this.zip.readText(part);
    const scan = new XmlScanner(xml);
    let rowCounter = 0;
    let colCounter = 0;
    for (let t = scan.next(SHEET_TAGS); t; t = scan.next(SHEET_TAGS)) {
      const tag = t.local;
      if (tag === "row") {
        const r = parseAttrs(t.attrs).r;
        if (r !== undefined) {
          const n = Number(r);
          if (!Number.isInteger(n)) throw new XlsxReadError(`${r} is not a valid row number`);
          rowCounter = n;
        } else rowCounter++;
        colCounter = 0;
        continue;
      }
      if (tag === "mergeCell") {
        const ref = parseAttrs(t.attrs).ref;
        if (ref) onMerge(ref);
        continue;
      }
      const el = scan.element(t);
      if (!el) throw new XlsxReadError(`unterminated <c> element in ${part}`);
      const inner = el.inner;
      const a = parseAttrs(t.attrs);
      let row = rowCounter;
      let col = colCounter + 1;
      if (a.r) {
        const cm = COORD.exec(a.r);
        if (!cm) throw new XlsxReadError(`invalid cell reference ${JSON.stringify(a.r)} in ${part}`);
        col = columnIndex(cm[1]!);
        row = Number(cm[2]);
      }
      colCounter = col;
      onCell(a, inner, row, col);
    }
  }

  /** openpyxl's value of a raw cell. @internal */
  pyValueOf(raw: RawCell, part: string): PyValue {
    return this.cellValue(raw.a, raw.inner, this.getStyles(), part);
  }

  /** The value a formula engine sees for a raw cell: numbers as serials, text, booleans, error codes. @internal */
  engineValueOf(
    raw: RawCell,
  ): { kind: "value"; value: number | string | boolean | null } | { kind: "error"; code: string } {
    const t = raw.a.t ?? "n";
    if (t === "inlineStr") {
      const is = firstElement(raw.inner, "is");
      return { kind: "value", value: is ? textContent(is.inner) : null };
    }
    const vm = firstElement(raw.inner, "v");
    const text = vm?.inner ? decodeXml(vm.inner) : "";
    if (text === "") return { kind: "value", value: null };
    switch (t) {
      case "n":
        return { kind: "value", value: Number(text) };
      case "s":
        return { kind: "value", value: this.sharedStrings()[Number(text)] ?? null };
      case "b":
        return { kind: "value", value: text.trim() !== "0" };
      case "e":
        return { kind: "error", code: text };
      default:
        return { kind: "value", value: text };
    }
  }

  /** Whether a cell's style is a date (and an elapsed-time) format, per openpyxl. @internal */
  dateStyle(raw: RawCell): { date: boolean; timedelta: boolean } {
    const st = this.getStyles();
    const id = raw.a.s ? Number.parseInt(raw.a.s, 10) : 0;
    return { date: st.date.has(id), timedelta: st.timedelta.has(id) };
  }

  private cellValue(a: Record<string, string>, inner: string, styles: Styles, part: string): PyValue {
    const t = a.t ?? "n";
    const styleId = a.s ? Number.parseInt(a.s, 10) : 0;
    if (a.s && (!Number.isInteger(styleId) || styleId < 0 || styleId >= Math.max(styles.count, 1))) {
      throw new XlsxReadError(`cell ${a.r ?? "?"} in ${part} uses style ${a.s}, which does not exist`);
    }
    if (t === "inlineStr") {
      const is = firstElement(inner, "is");
      return is ? textContent(is.inner) : null;
    }
    const vm = firstElement(inner, "v");
    const raw = vm?.inner ? decodeXml(vm.inner) : "";
    if (raw === "") return null;
    try {
      switch (t) {
        case "n": {
          const n = castNumber(raw);
          if (!styles.date.has(styleId)) return n;
          try {
            return fromExcel(n, this.epoch1904, styles.timedelta.has(styleId));
          } catch (e) {
            if (e instanceof PyError && (e.pyType === "OverflowError" || e.pyType === "ValueError")) return "#VALUE!";
            throw e;
          }
        }
        case "s": {
          const idx = Number(raw);
          const strings = this.sharedStrings();
          if (!Number.isInteger(idx) || idx < 0 || idx >= strings.length) {
            throw new XlsxReadError(`shared string index ${raw} out of range`);
          }
          return strings[idx]!;
        }
        case "b": {
          return pyIntFromString(raw) !== 0n; // bool(int(value))
        }
        case "d":
          return fromISO8601(raw);
        default:
          return raw; // "str" (formula string), "e" (error code) and unknown types keep the text
      }
    } catch (e) {
      if (e instanceof XlsxReadError) throw e;
      throw new XlsxReadError(`cell ${a.r ?? "?"} in ${part}: ${(e as Error).message}`);
    }
  }
}
