/**
 * Workbooks whose XML a lazy regex scans in quadratic time (issue 41): unclosed `<c>`, `<t>`, `<f>`, `<si>` and
 * `<Relationship>` tags, huge attribute runs, a formula of quotes, a number format of `[`. Each is a few KB of zip.
 * Inline, every reader finishes within the test's deadline (quadratic scans of these took minutes) and the outcome is
 * the model's failure (the answer does not match), never an error of the env. On the compare workers (the built
 * dist/compare-worker.js, as a served env runs them) the event loop never stalls 50 ms while they are scanned, and
 * a victim's compare on the same pool scores right.
 */
import { existsSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { compareWorkbooks } from "./compare.js";
import { ComparePool } from "./compare-pool.js";
import { externalReason, refuseExternalRefs } from "./external-refs.js";
import { rawSheetXlsx, zipFiles } from "./raw-xlsx.js";
import { XlsxValues } from "./xlsx-values.js";
import { ZipReader } from "./zip.js";

const N = 300_000;
const ANSWER = 471.3;

/** A workbook with answer cell A1 (its XML given) and parts added or replaced. */
function book(answer: string, parts: Record<string, string> = {}, rows = ""): Buffer {
  const base = new ZipReader(rawSheetXlsx([answer]));
  const files = new Map<string, string | Buffer>(base.names().map((n) => [n, base.read(n)]));
  if (rows) {
    const sheet = base.readText("xl/worksheets/sheet1.xml");
    files.set("xl/worksheets/sheet1.xml", sheet.replace("</sheetData>", `${rows}</sheetData>`));
  }
  for (const [n, t] of Object.entries(parts)) files.set(n, t);
  return zipFiles([...files]);
}

const formulaCell = (f: string) => `<c r="A1"><f>${f}</f><v>${ANSWER}</v></c>`;
/** Each hostile file; `true` where its answer cell still reads the gold's value (the garbage is beside it). */
const HOSTILE: Array<[string, Buffer, boolean?]> = [
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

const gold = rawSheetXlsx([`<c r="A1"><v>${ANSWER}</v></c>`]);
const victimOut = rawSheetXlsx([
  `<c r="A1"><f>SUM(B1:B2)</f><v>1</v></c>`,
  '<c r="B1"><v>400</v></c>',
  '<c r="B2"><v>71.3</v></c>',
]);

describe("hostile XML: every reader is linear (inline)", () => {
  for (const [what, bytes, right] of HOSTILE) {
    it(`${what}: sealed and compared within the deadline, the outcome the answer cell decides`, () => {
      expect(bytes.length).toBeLessThan(64 * 1024);
      const sealed = refuseExternalRefs(bytes);
      expect(sealed.refused).toEqual([]);
      const r = compareWorkbooks(gold, bytes, "A1", { recalcOutput: true });
      expect(r.goldError).toBeUndefined();
      // a failed case, an unreadable file or a cell left to LibreOffice; a pass only where the cell reads right
      if (right) expect(r.pass).toBe(true);
      else if (!r.unscorable) expect(r.pass).toBe(false);
    }, 20_000);
  }

  it("the readers still read what they should (control)", () => {
    const ok = book('<c r="A1" t="s"><v>0</v></c>', {
      "xl/sharedStrings.xml":
        '<sst><si><r><t>a</t></r><rPh><t>x</t></rPh><r><t xml:space="preserve"> b</t></r></si></sst>',
    });
    const cells = new XlsxValues(ok).readCells("Sheet1", [{ minRow: 1, maxRow: 1, minCol: 1, maxCol: 1 }]);
    expect([...cells.values()]).toEqual(["a b"]);
    expect(externalReason("'C:\\x\\[b.xlsx]S'!A1")).not.toBeNull();
    expect(externalReason(`'${"'".repeat(1001)}'!A1`)).toBeNull();
    expect(compareWorkbooks(gold, victimOut, "A1", { recalcOutput: true }).pass).toBe(true);
  });
});

const script = new URL("../dist/compare-worker.js", import.meta.url);
const built = existsSync(fileURLToPath(script));
if (!built)
  console.warn("[env-excel] hostile XML on workers skipped: dist/compare-worker.js is not built (run npx tsup)");

describe.skipIf(!built)("hostile XML on the compare workers: the event loop never stalls", () => {
  const pool = new ComparePool(script, 2);
  afterAll(() => pool.close());

  it("sealing and comparing every hostile file keeps the event loop under 50 ms while a victim scores right", async () => {
    // warm the workers (their first job loads the module)
    await Promise.all([pool.compare(gold, victimOut, "A1", { recalcOutput: true }), pool.seal(victimOut)]);
    const h = monitorEventLoopDelay({ resolution: 5 });
    h.enable();
    const victims: Array<Promise<boolean>> = [];
    const results = await Promise.all(
      HOSTILE.map(async ([what, bytes, right]) => {
        victims.push(pool.compare(gold, victimOut, "A1", { recalcOutput: true }).then((r) => r.pass));
        const sealed = await pool.seal(bytes);
        const r = await pool.compare(gold, bytes, "A1", { recalcOutput: true });
        return { what, sealed, wrong: r.pass && !r.unscorable && !right };
      }),
    );
    h.disable();
    const maxMs = h.max / 1e6;
    console.log(`[env-excel] hostile XML on workers: event-loop delay max ${maxMs.toFixed(1)} ms`);
    expect(results.filter((r) => r.wrong).map((r) => r.what)).toEqual([]);
    expect(results.every((r) => r.sealed === undefined)).toBe(true); // nothing to refuse: the same bytes go on
    expect(await Promise.all(victims)).toEqual(HOSTILE.map(() => true));
    expect(maxMs, `event-loop delay max ${maxMs.toFixed(1)} ms`).toBeLessThan(50);
  }, 120_000);
});
