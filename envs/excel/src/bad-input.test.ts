/**
 * Bad input for the scorer: a corrupt or non-xlsx answer, a formula that loops forever (a circular reference), a
 * workbook too big to recalculate within budget, and a function the engine cannot evaluate. Each gets a clear
 * per-case result or error, in bounded time, and the process carries on.
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { EnvError } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { compareWorkbooks } from "./compare.js";
import { rawSheetXlsx } from "./raw-xlsx.js";
import { scoreOneCase } from "./reward.js";

const task = { answer_position: "A1:B2" };
const gold = rawSheetXlsx(['<c r="A1"><v>2</v></c>', '<c r="B1"><v>3</v></c>']);

function files(output: Buffer | string, goldBuf: Buffer = gold): string {
  const dir = mkdtempSync(join(tmpdir(), "excel-bad-"));
  writeFileSync(join(dir, "gold.xlsx"), goldBuf);
  writeFileSync(join(dir, "out.xlsx"), output);
  return dir;
}

const ctx = (dir: string) => ({ baseDir: dir, options: {} });
const c = { id: "x", task, goldFile: "gold.xlsx", outputFile: "out.xlsx" };

describe("bad input", () => {
  it("a corrupt or non-xlsx answer fails its case with a message saying so", async () => {
    for (const bytes of ["not a zip at all", Buffer.from([0x50, 0x4b, 3, 4, 1, 2, 3])]) {
      const r = await scoreOneCase(c, ctx(files(bytes)), { mode: "embedded" });
      expect(r.reward).toBe(0);
      expect(String(r.metadata?.message)).toMatch(/output file unreadable: File is not a zip file/);
    }
  });

  it("a circular reference ends in bounded time: its cells read as None", async () => {
    const out = rawSheetXlsx(['<c r="A1"><f>B1+1</f></c>', '<c r="B1"><f>A1+1</f></c>']);
    const r = await scoreOneCase(c, ctx(files(out)), { mode: "embedded" });
    expect(r.reward).toBe(0);
    expect(String(r.metadata?.message)).toMatch(/recalculation: circular reference: Sheet1!A1 → Sheet1!B1 → Sheet1!A1/);
    expect(r.metadata?.mismatches).toEqual([
      { sheet: "Sheet1", cell: "A1", expected: "2", actual: "None" },
      { sheet: "Sheet1", cell: "B1", expected: "3", actual: "None" },
    ]);
  });

  it("a workbook past the recalculation budget is a clear per-case error, not a hang", () => {
    const cells: string[] = ['<c r="A1"><v>1</v></c>'];
    for (let r = 2; r <= 50_000; r++) cells.push(`<c r="A${r}"><f>A${r - 1}+1</f></c>`);
    const big = rawSheetXlsx(cells);
    const r = compareWorkbooks(rawSheetXlsx(['<c r="A50000"><v>50000</v></c>']), big, "A50000", {
      recalcOutput: true,
      engine: { maxCells: 1000 },
    });
    expect(r.pass).toBe(false);
    expect(r.unscorable).toMatch(/recalculation exceeded its budget of 1000 formula cells/);
    // with the default budget the same file scores
    expect(
      compareWorkbooks(rawSheetXlsx(['<c r="A50000"><v>50000</v></c>']), big, "A50000", { recalcOutput: true }).pass,
    ).toBe(true);
  });

  it("a function Excel does not have (FOOBAR, EOM) is #NAME?, as in Excel: the model's answer scores 0", async () => {
    for (const f of ["FOOBAR(1)", "EOM(B1,0)", "_xludf.EOM(B1,0)"]) {
      const out = rawSheetXlsx([`<c r="A1"><f>${f}</f><v>2</v></c>`, '<c r="B1"><v>3</v></c>']);
      const r = await scoreOneCase(c, ctx(files(out)), { mode: "embedded" });
      expect(r.reward).toBe(0);
      expect(r.metadata?.mismatches).toEqual([{ sheet: "Sheet1", cell: "A1", expected: "2", actual: '"#NAME?"' }]);
    }
    // where the gold holds Excel's #NAME? for the same formula, the answer agrees
    const g = rawSheetXlsx(['<c r="A1" t="e"><f>EOM(B1,0)</f><v>#NAME?</v></c>', '<c r="B1"><v>3</v></c>']);
    const out = rawSheetXlsx(['<c r="A1"><f>EOM(B1,0)</f></c>', '<c r="B1"><v>3</v></c>']);
    expect((await scoreOneCase(c, ctx(files(out, g)), { mode: "embedded" })).reward).toBe(1);
    // IFERROR sees the error, as in Excel
    const caught = rawSheetXlsx(['<c r="A1"><f>IFERROR(FOOBAR(1),2)</f></c>', '<c r="B1"><v>3</v></c>']);
    expect((await scoreOneCase(c, ctx(files(caught)), { mode: "embedded" })).reward).toBe(1);
  });

  it("a function Excel has but the engine lacks, in the model's answer cell, scores 0 and names it (no LibreOffice)", async () => {
    for (const [f, name] of [
      ['CELL("filename")', "CELL"],
      ['INFO("osversion")', "INFO"],
      ['WEBSERVICE("http://127.0.0.1:1/x")', "WEBSERVICE"],
    ] as const) {
      const out = rawSheetXlsx([`<c r="A1"><f>${f.replace(/"/g, "&quot;")}</f><v>2</v></c>`, '<c r="B1"><v>3</v></c>']);
      const r = await scoreOneCase(c, ctx(files(out)), { mode: "embedded" });
      expect(r.reward).toBe(0);
      expect(String(r.metadata?.message)).toMatch(
        new RegExp(`scored 0: .*cannot evaluate Sheet1!A1: .*function ${name}`),
      );
    }
  });

  it("where the gold needs a function the engine lacks, the case stays env_error (the task's, not the model's)", async () => {
    const g = rawSheetXlsx(['<c r="A1"><f>INFO("osversion")</f></c>', '<c r="B1"><v>3</v></c>']);
    const out = rawSheetXlsx(['<c r="A1"><v>2</v></c>', '<c r="B1"><v>3</v></c>']);
    const err = await scoreOneCase(c, ctx(files(out, g)), { mode: "embedded" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(EnvError);
    expect(String((err as Error).message)).toMatch(
      /cannot evaluate gold Sheet1!A1: =INFO\("osversion"\): function INFO/,
    );
  });

  it("an unrelated unsupported formula does not affect the compared cells", async () => {
    const out = rawSheetXlsx([
      '<c r="A1"><v>2</v></c>',
      '<c r="B1"><f>A1+1</f></c>',
      '<c r="D9"><f>CELL(&quot;filename&quot;)</f></c>',
    ]);
    const r = await scoreOneCase(c, ctx(files(out)), { mode: "embedded" });
    expect(r.reward).toBe(1);
  });

  it("gold formula cells without a cached value are computed, never compared as empty", async () => {
    const g = rawSheetXlsx(['<c r="A1"><v>2</v></c>', '<c r="B1"><f>A1+1</f></c>']);
    const wrong = rawSheetXlsx(['<c r="A1"><v>2</v></c>']);
    expect((await scoreOneCase(c, ctx(files(wrong, g)), { mode: "embedded" })).reward).toBe(0);
    const right = rawSheetXlsx(['<c r="A1"><v>2</v></c>', '<c r="B1"><v>3</v></c>']);
    expect((await scoreOneCase(c, ctx(files(right, g)), { mode: "embedded" })).reward).toBe(1);
  });
});
