/**
 * The odd-formula corpus (src/corpus/odd-formulas.ts) against a live LibreOffice: the values recorded in
 * fixtures/formula-corpus/odd-formulas.json are what LibreOffice gives now (`BENCHMAX_WRITE_CORPUS=1` rewrites them),
 * and scoring with the LibreOffice fallback gives each odd answer cell LibreOffice's verdict, never its cached value.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compareWorkbooks } from "./compare.js";
import { CACHED, ODD_CASES, oddCaseWorkbook } from "./corpus/odd-formulas.js";
import { findSoffice, LibreOfficeRecalc } from "./libreoffice.js";
import { rawSheetXlsx } from "./raw-xlsx.js";
import { cellKey, XlsxValues } from "./xlsx-values.js";

const FIXTURE = join(import.meta.dirname, "..", "fixtures", "formula-corpus", "odd-formulas.json");
const soffice = findSoffice();
if (!soffice) console.warn("[env-excel] odd formulas: soffice not installed, the live LibreOffice check is skipped");
const json = (v: unknown) => JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? Number(x) : x)));

/** The value openpyxl would read, as a gold cell's XML at `at`. */
function goldCell(at: string, v: unknown): string {
  if (v === null) return `<c r="${at}"/>`;
  if (typeof v === "object" && v && "value" in v) return `<c r="${at}"><v>${(v as { value: number }).value}</v></c>`;
  if (typeof v === "number") return `<c r="${at}"><v>${v}</v></c>`;
  return `<c r="${at}" t="${String(v).startsWith("#") ? "e" : "str"}"><v>${v}</v></c>`;
}

describe.skipIf(!soffice)("odd formula shapes: a live LibreOffice", () => {
  it("gives the recorded values, and scoring its re-save matches them, never a cached value it does not keep", async () => {
    const lo = new LibreOfficeRecalc({ soffice: soffice! });
    const outs = await Promise.all(ODD_CASES.map((_, i) => lo.recalc(oddCaseWorkbook(i), "output")));
    const values = outs.map((out, i) => {
      const cells = new XlsxValues(out).readCells("Sheet1", [{ minRow: i + 1, maxRow: i + 1, minCol: 3, maxCol: 3 }]);
      return json(cells.get(cellKey(i + 1, 3)) ?? null);
    });
    if (process.env.BENCHMAX_WRITE_CORPUS) {
      mkdirSync(join(FIXTURE, ".."), { recursive: true });
      writeFileSync(FIXTURE, `${JSON.stringify({ cases: ODD_CASES.map((c) => c.f), values }, null, 1)}\n`);
    }
    const rec = JSON.parse(readFileSync(FIXTURE, "utf8")) as { cases: string[]; values: unknown[] };
    expect(rec.cases).toEqual(ODD_CASES.map((c) => c.f));
    expect(values).toEqual(rec.values);
    ODD_CASES.forEach((c, i) => {
      const at = `C${i + 1}`;
      const v = rec.values[i];
      const official = compareWorkbooks(rawSheetXlsx([goldCell(at, v)]), outs[i], at, { recalcGold: false });
      expect(official.pass, `${c.name}: LibreOffice's own value`).toBe(true);
      if (!(typeof v === "number" && Math.abs(v - CACHED) < 1e-9)) {
        const cached = goldCell(at, c.str ? "471.3 text" : CACHED);
        expect(compareWorkbooks(rawSheetXlsx([cached]), outs[i], at, { recalcGold: false }).pass, c.name).toBe(false);
      }
    });
  }, 180_000);
});
