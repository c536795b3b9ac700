/**
 * Formula shapes LibreOffice reads its own way (src/corpus/odd-formulas.ts): an orphan shared formula, data-table
 * formulas, empty `<f>` and their relatives. The embedded engine never trusts their cached value: it either gives
 * LibreOffice's recorded value (fixtures/formula-corpus/odd-formulas.json) or leaves the cell to LibreOffice; without
 * LibreOffice, an answer cell of such a shape scores 0 with the reason. No soffice is needed here
 * (src/odd-formulas-lo.test.ts re-checks the fixture against a live LibreOffice).
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compareWorkbooks } from "./compare.js";
import { CACHED, ODD_CASES, oddCaseWorkbook } from "./corpus/odd-formulas.js";
import { LazyRecalc } from "./lazy-recalc.js";
import { rawSheetXlsx } from "./raw-xlsx.js";
import { scoreOneCase } from "./reward.js";
import { cellKey, XlsxValues } from "./xlsx-values.js";

const FIXTURE = join(import.meta.dirname, "..", "fixtures", "formula-corpus", "odd-formulas.json");
const rec = JSON.parse(readFileSync(FIXTURE, "utf8")) as { cases: string[]; values: unknown[] };
const plain = (v: unknown) =>
  v && typeof v === "object" && "value" in v ? Number((v as { value: unknown }).value) : v;

describe("odd formula shapes: the cached value is never trusted", () => {
  it("the fixture records LibreOffice's value of every case of the corpus", () => {
    expect(rec.cases).toEqual(ODD_CASES.map((c) => c.f));
  });

  it("the engine gives LibreOffice's recorded value or leaves the cell to LibreOffice (never the cached one)", () => {
    const trusted: string[] = [];
    ODD_CASES.forEach((c, i) => {
      const r = new LazyRecalc(new XlsxValues(oddCaseWorkbook(i)));
      const got = r
        .readCells("Sheet1", [{ minRow: i + 1, maxRow: i + 1, minCol: 3, maxCol: 3 }])
        .get(cellKey(i + 1, 3));
      if (r.unscorable.length) return;
      const lo = plain(rec.values[i] ?? null);
      if (JSON.stringify(plain(got ?? null)) !== JSON.stringify(lo))
        trusted.push(`${c.name}: engine ${got}, LibreOffice ${lo}`);
    });
    expect(trusted).toEqual([]);
  });

  it("a formula reading an odd cell is left to LibreOffice too (the cached value does not flow into it)", () => {
    const book = rawSheetXlsx([
      '<c r="A1"><f t="shared" si="9"/><v>471.3</v></c>',
      '<c r="A2"><f/><v>471.3</v></c>',
      '<c r="B1"><f>A1*2</f><v>942.6</v></c>',
      '<c r="B2"><f>A2+0</f><v>471.3</v></c>',
    ]);
    for (const at of ["B1", "B2"]) {
      const row = Number(at.slice(1));
      const r = new LazyRecalc(new XlsxValues(book));
      r.readCells("Sheet1", [{ minRow: row, maxRow: row, minCol: 2, maxCol: 2 }]);
      expect(r.unscorable.join("; "), at).toMatch(row === 1 ? /no master cell/ : /an empty formula/);
    }
  });

  it("scoring from the model's side: an odd answer cell holding the gold value scores 0 with the reason (no LibreOffice)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "excel-odd-"));
    const shapes: Array<[string, RegExp]> = [
      ['<f t="shared" si="7"/>', /shared formula \(si="7"\) with no master/],
      ['<f t="dataTable" ref="A1" dt2D="0" dtr="0" r1="B1"/>', /data-table formula/],
      ["<f></f>", /an empty formula/],
      ["<f/>", /an empty formula/],
    ];
    writeFileSync(join(dir, "gold.xlsx"), rawSheetXlsx([`<c r="A1"><v>${CACHED}</v></c>`]));
    const task = {
      id: 1,
      instruction: "x",
      spreadsheet_path: "s/1",
      instruction_type: "Cell-Level Manipulation",
      answer_position: "A1",
    };
    for (const [f, why] of shapes) {
      writeFileSync(
        join(dir, "out.xlsx"),
        rawSheetXlsx([`<c r="A1">${f}<v>${CACHED}</v></c>`, '<c r="B1"><v>2</v></c>']),
      );
      const r = await scoreOneCase(
        { id: "odd", task, outputFile: "out.xlsx", goldFile: "gold.xlsx" },
        { baseDir: dir, options: {} },
        { mode: "embedded" },
      );
      expect(r.reward, f).toBe(0);
      expect(String(r.metadata?.message), f).toMatch(why);
      // the same value written as a value (or a real formula) still scores 1: only the odd shape is refused
      writeFileSync(join(dir, "out.xlsx"), rawSheetXlsx([`<c r="A1"><v>${CACHED}</v></c>`]));
      const ok = await scoreOneCase(
        { id: "ok", task, outputFile: "out.xlsx", goldFile: "gold.xlsx" },
        { baseDir: dir, options: {} },
        { mode: "embedded" },
      );
      expect(ok.reward).toBe(1);
    }
  });

  it("a gold's odd cell keeps its cached value (golds are read as the task ships them)", () => {
    const gold = rawSheetXlsx([`<c r="A1"><f t="shared" si="3"/><v>${CACHED}</v></c>`]);
    const out = rawSheetXlsx([`<c r="A1"><v>${CACHED}</v></c>`]);
    expect(compareWorkbooks(gold, out, "A1").pass).toBe(true);
  });
});
