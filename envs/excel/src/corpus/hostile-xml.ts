/**
 * Workbooks whose XML a lazy regex scans in quadratic time (issue 41): unclosed `<c>`, `<t>`, `<f>`, `<v>`, `<si>`
 * and `<Relationship>` tags, huge attribute runs, formulas of quotes, brackets or DDE-like names, a number format of
 * `[`. Each is a few KB of zip; all have answer cell A1 and a gold of 471.3 (hostile-xml*.test.ts).
 */
import { rawSheetXlsx, zipFiles } from "../raw-xlsx.js";
import { ZipReader } from "../zip.js";

const N = 300_000;
export const ANSWER = 471.3;

/** A workbook with answer cell A1 (its XML given) and parts added or replaced. */
export function book(answer: string, parts: Record<string, string> = {}, rows = "", after = ""): Buffer {
  const base = new ZipReader(rawSheetXlsx([answer]));
  const files = new Map<string, string | Buffer>(base.names().map((n) => [n, base.read(n)]));
  if (rows || after) {
    const sheet = base.readText("xl/worksheets/sheet1.xml");
    files.set("xl/worksheets/sheet1.xml", sheet.replace("</sheetData>", `${rows}</sheetData>${after}`));
  }
  for (const [n, t] of Object.entries(parts)) files.set(n, t);
  return zipFiles([...files]);
}

const formulaCell = (f: string) => `<c r="A1"><f>${f}</f><v>${ANSWER}</v></c>`;
/** Each hostile file; `true` where its answer cell still reads the gold's value (the garbage is beside it). */
export const HOSTILE: Array<[string, Buffer, boolean?]> = [
  // the input: CELL("filename") sends the file to LibreOffice, the extra sheet part to the external-ref check
  [
    "unclosed <c> in an extra sheet part",
    book(formulaCell('CELL("filename")'), {
      "xl/worksheets/sheet9.xml": `<worksheet><sheetData><row r="1">${"<c>".repeat(N)}`,
    }),
  ],
  ["unclosed <c r> in the answer sheet", book(formulaCell("1+1"), {}, `<row r="2">${'<c r="B2">'.repeat(N)}</row>`)],
  ["unclosed <t> in the answer cell", book(`<c r="A1" t="inlineStr"><is>${"<t>".repeat(N)}</is></c>`)],
  ["unclosed <f> in the answer cell", book(`<c r="A1">${"<f>".repeat(N)}<v>${ANSWER}</v></c>`)],
  ["unclosed <v> in the answer cell", book(`<c r="A1">${"<v>".repeat(N)}</c>`)],
  [
    "unclosed <si> in the shared strings",
    book('<c r="A1" t="s"><v>0</v></c>', { "xl/sharedStrings.xml": `<sst>${"<si><t>x".repeat(N)}</sst>` }),
  ],
  [
    "unclosed <Relationship> in the workbook's relationships",
    book(formulaCell("1+1"), { "xl/_rels/workbook.xml.rels": `<Relationships>${"<Relationship Id='x".repeat(N)}` }),
  ],
  ["a huge attribute run on the answer cell", book(`<c r="A1" ${"a".repeat(4 * N)}><v>${ANSWER}</v></c>`), true],
  ["an attribute value never closed", book(`<c r="A1" ${'b="x '.repeat(N)}><v>${ANSWER}</v></c>`), true],
  ["a formula of quotes", book(formulaCell("'".repeat(N)))],
  ["a formula of brackets", book(formulaCell("+[a]'".repeat(N / 4)))],
  ["a formula of DDE-like names", book(formulaCell("a|".repeat(N)))],
  ["INDIRECT of a string of spaces", book(formulaCell(`INDIRECT(&quot;${" ".repeat(N)}x&quot;)`))],
  [
    "unclosed <definedName> and <formula> tags",
    book(formulaCell('CELL("filename")'), {
      "xl/worksheets/sheet9.xml": `<worksheet>${"<formula>".repeat(N)}`,
      "xl/worksheets/sheet8.xml": `<worksheet>${"<definedName x".repeat(N)}`,
    }),
  ],
  [
    "a number format of [",
    book(`<c r="A1" s="1"><v>${ANSWER}</v></c>`, {
      "xl/styles.xml": `<styleSheet><numFmts><numFmt numFmtId="164" formatCode="${"[".repeat(N)}"/></numFmts><cellXfs>${'<xf numFmtId="164"/>'.repeat(2)}</cellXfs></styleSheet>`,
    }),
    true,
  ],
];

export const gold = rawSheetXlsx([`<c r="A1"><v>${ANSWER}</v></c>`]);
export const victimOut = rawSheetXlsx([
  `<c r="A1"><f>SUM(B1:B2)</f><v>1</v></c>`,
  '<c r="B1"><v>400</v></c>',
  '<c r="B2"><v>71.3</v></c>',
]);
