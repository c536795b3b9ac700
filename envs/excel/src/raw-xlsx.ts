/**
 * Write a minimal xlsx from raw sheet XML — for test vectors that need exact control over cell XML (types,
 * cached values, merges, inline strings) that a spreadsheet library would normalise away.
 */
import { crc32, deflateRawSync } from "node:zlib";

export interface RawSheet {
  name: string;
  /** The inner XML of `<sheetData>`: `<row r="1"><c r="A1" t="s"><v>0</v></c></row>` … */
  rows: string;
  /** Extra XML after `</sheetData>` (e.g. `<mergeCells>…</mergeCells>`). */
  after?: string;
  /** Tables ("Format as Table") on this sheet: name, area (header row included) and column names. */
  tables?: Array<{ name: string; ref: string; columns: string[]; totalsRowCount?: number }>;
}

export interface RawWorkbook {
  sheets: RawSheet[];
  sharedStrings?: string[];
  /** Custom number formats `{id: formatCode}` (ids ≥ 164). */
  numFmts?: Record<number, string>;
  /** The numFmtId of each cellXfs entry (index = the cell's `s`). Default `[0]`. */
  cellXfs?: number[];
  date1904?: boolean;
}

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

/** A zip archive of the given files (deflated). */
export function zipFiles(files: Array<[string, string | Buffer]>): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of files) {
    const data = typeof content === "string" ? Buffer.from(content, "utf8") : content;
    const comp = deflateRawSync(data);
    const nameBuf = Buffer.from(name, "utf8");
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(0, 6);
    local.writeUInt16LE(8, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(comp.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBuf.length, 26);
    locals.push(local, nameBuf, comp);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(8, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(comp.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBuf.length, 28);
    central.writeUInt32LE(offset, 42);
    centrals.push(central, nameBuf);
    offset += 30 + nameBuf.length + comp.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}

const NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"';
const RNS = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';
const REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

export function rawXlsx(wb: RawWorkbook): Buffer {
  const files: Array<[string, string]> = [];
  const tables = wb.sheets.flatMap((sh, si) => (sh.tables ?? []).map((t) => ({ ...t, si })));
  const tableOverrides = tables
    .map(
      (_, i) =>
        `<Override PartName="/xl/tables/table${i + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.table+xml"/>`,
    )
    .join("");
  const sheetOverrides =
    tableOverrides +
    wb.sheets
      .map(
        (_, i) =>
          `<Override PartName="/xl/worksheets/sheet${i + 1}.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>`,
      )
      .join("");
  files.push([
    "[Content_Types].xml",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>${sheetOverrides}<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/><Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml"/></Types>`,
  ]);
  files.push([
    "_rels/.rels",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="${REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>`,
  ]);
  const sheetsXml = wb.sheets
    .map((s, i) => `<sheet name="${esc(s.name)}" sheetId="${i + 1}" r:id="rId${i + 1}"/>`)
    .join("");
  files.push([
    "xl/workbook.xml",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><workbook ${NS} ${RNS}>${wb.date1904 ? '<workbookPr date1904="1"/>' : "<workbookPr/>"}<sheets>${sheetsXml}</sheets></workbook>`,
  ]);
  const n = wb.sheets.length;
  const rels = wb.sheets
    .map((_, i) => `<Relationship Id="rId${i + 1}" Type="${REL}/worksheet" Target="worksheets/sheet${i + 1}.xml"/>`)
    .join("");
  files.push([
    "xl/_rels/workbook.xml.rels",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${rels}<Relationship Id="rId${n + 1}" Type="${REL}/styles" Target="styles.xml"/><Relationship Id="rId${n + 2}" Type="${REL}/sharedStrings" Target="sharedStrings.xml"/></Relationships>`,
  ]);
  const fmts = Object.entries(wb.numFmts ?? {});
  const numFmts = fmts.length
    ? `<numFmts count="${fmts.length}">${fmts.map(([id, code]) => `<numFmt numFmtId="${id}" formatCode="${esc(code)}"/>`).join("")}</numFmts>`
    : "";
  const xfs = wb.cellXfs ?? [0];
  files.push([
    "xl/styles.xml",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><styleSheet ${NS}>${numFmts}<fonts count="1"><font><sz val="11"/><name val="Calibri"/></font></fonts><fills count="1"><fill><patternFill patternType="none"/></fill></fills><borders count="1"><border/></borders><cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs><cellXfs count="${xfs.length}">${xfs.map((id) => `<xf numFmtId="${id}" fontId="0" fillId="0" borderId="0" xfId="0"${id ? ' applyNumberFormat="1"' : ""}/>`).join("")}</cellXfs></styleSheet>`,
  ]);
  const ss = wb.sharedStrings ?? [];
  files.push([
    "xl/sharedStrings.xml",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><sst ${NS} count="${ss.length}" uniqueCount="${ss.length}">${ss.map((s) => `<si><t xml:space="preserve">${esc(s)}</t></si>`).join("")}</sst>`,
  ]);
  tables.forEach((t, i) => {
    const cols = t.columns.map((c, j) => `<tableColumn id="${j + 1}" name="${esc(c)}"/>`).join("");
    const totals = t.totalsRowCount ? ` totalsRowCount="${t.totalsRowCount}"` : "";
    files.push([
      `xl/tables/table${i + 1}.xml`,
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><table ${NS} id="${i + 1}" name="${esc(t.name)}" displayName="${esc(t.name)}" ref="${t.ref}"${totals}><autoFilter ref="${t.ref}"/><tableColumns count="${t.columns.length}">${cols}</tableColumns><tableStyleInfo name="TableStyleMedium2" showRowStripes="1"/></table>`,
    ]);
  });
  wb.sheets.forEach((s, i) => {
    const mine = tables.map((t, k) => ({ t, k })).filter(({ t }) => t.si === i);
    const parts = mine.length
      ? `<tableParts count="${mine.length}">${mine.map((_, j) => `<tablePart r:id="rIdT${j + 1}"/>`).join("")}</tableParts>`
      : "";
    files.push([
      `xl/worksheets/sheet${i + 1}.xml`,
      `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><worksheet ${NS} ${RNS}><sheetData>${s.rows}</sheetData>${s.after ?? ""}${parts}</worksheet>`,
    ]);
    if (mine.length) {
      files.push([
        `xl/worksheets/_rels/sheet${i + 1}.xml.rels`,
        `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${mine.map(({ k }, j) => `<Relationship Id="rIdT${j + 1}" Type="${REL}/table" Target="../tables/table${k + 1}.xml"/>`).join("")}</Relationships>`,
      ]);
    }
  });
  return zipFiles(files);
}

/** A one-sheet workbook whose cells are given as `{A1: '<c r="A1"><v>1</v></c>'}`-free shorthand: raw `<c>` XML. */
export function rawSheetXlsx(
  cells: string[],
  opts: Omit<RawWorkbook, "sheets"> & { name?: string; after?: string } = {},
) {
  const byRow = new Map<number, string[]>();
  for (const c of cells) {
    const r = Number(/r="[A-Z]+(\d+)"/.exec(c)?.[1] ?? 1);
    byRow.set(r, [...(byRow.get(r) ?? []), c]);
  }
  const rows = [...byRow.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([r, cs]) => `<row r="${r}">${cs.join("")}</row>`)
    .join("");
  return rawXlsx({ ...opts, sheets: [{ name: opts.name ?? "Sheet1", rows, after: opts.after }] });
}
