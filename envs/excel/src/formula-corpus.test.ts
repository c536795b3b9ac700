/**
 * The differential formula corpus (src/corpus/formula-corpus.ts): the embedded engine must agree with LibreOffice
 * on every case. LibreOffice's values are recorded in fixtures/formula-corpus/libreoffice-values.json (written by
 * `BENCHMAX_WRITE_CORPUS=1 npx vitest run src/formula-corpus.test.ts` with soffice installed); where soffice is
 * installed (CI) it recalculates the corpus live as well. Cases where LibreOffice departs from Excel are checked
 * against Excel's documented values.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { CORPUS, corpusWorkbook, EXCEL_ONLY } from "./corpus/formula-corpus.js";
import { LazyRecalc } from "./lazy-recalc.js";
import { findSoffice, LibreOfficeRecalc } from "./libreoffice.js";
import type { PyValue } from "./py-values.js";
import { cellKey, XlsxValues } from "./xlsx-values.js";

const FIXTURE = join(import.meta.dirname, "..", "fixtures", "formula-corpus", "libreoffice-values.json");
const soffice = findSoffice();
if (!soffice)
  console.warn(
    "[env-excel] formula corpus: soffice not installed, comparing with the recorded LibreOffice values only",
  );

function column(buf: Buffer, n: number, recalc: boolean): PyValue[] {
  const book = new XlsxValues(buf);
  const reader = recalc ? new LazyRecalc(book) : book;
  const cells = reader.readCells("Calc", [{ minRow: 1, maxRow: n, minCol: 1, maxCol: 1 }]);
  return Array.from({ length: n }, (_, i) => cells.get(cellKey(i + 1, 1)) ?? null);
}

/** An openpyxl int as a number (the engine computes doubles). */
const plain = (v: PyValue): PyValue =>
  v && typeof v === "object" && "kind" in v && v.kind === "int" ? Number((v as { value: bigint }).value) : v;

const json = (v: unknown) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? Number(x) : x));

function same(a: PyValue, b: PyValue): boolean {
  a = plain(a);
  b = plain(b);
  if (typeof a === "number" && typeof b === "number") return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a));
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  return json(a) === json(b);
}

const show = (v: PyValue) => json(v);

function disagreements(expected: PyValue[], actual: PyValue[]): string[] {
  const out: string[] = [];
  CORPUS.forEach((c, i) => {
    if (!same(expected[i]!, actual[i]!)) {
      out.push(
        `Calc!A${i + 1} ${c.array ? "{" : ""}=${c.formula}${c.array ? "}" : ""}: LibreOffice ${show(expected[i]!)}, engine ${show(actual[i]!)}`,
      );
    }
  });
  return out;
}

describe("differential formula corpus", () => {
  const book = corpusWorkbook();
  const engine = column(book, CORPUS.length, true);

  it("has at least 500 formulas", () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(500);
  });

  it("the engine evaluates every case (no unsupported function)", () => {
    const r = new LazyRecalc(new XlsxValues(book));
    r.readCells("Calc", [{ minRow: 1, maxRow: CORPUS.length, minCol: 1, maxCol: 1 }]);
    expect(r.unscorable).toEqual([]);
  });

  it("agrees with LibreOffice's recorded values on every case", () => {
    if (!existsSync(FIXTURE)) {
      expect.fail(`missing ${FIXTURE}: run with soffice installed and BENCHMAX_WRITE_CORPUS=1`);
    }
    const rec = JSON.parse(readFileSync(FIXTURE, "utf8")) as { formulas: string[]; values: PyValue[] };
    expect(rec.formulas).toEqual(CORPUS.map((c) => c.formula));
    expect(disagreements(rec.values, engine)).toEqual([]);
  });

  it.skipIf(!soffice)(
    "agrees with a live LibreOffice recalculation on every case",
    async () => {
      const lo = new LibreOfficeRecalc({ soffice: soffice! });
      const out = await lo.recalc(book);
      const values = column(out, CORPUS.length, false);
      if (process.env.BENCHMAX_WRITE_CORPUS) {
        mkdirSync(join(FIXTURE, ".."), { recursive: true });
        writeFileSync(FIXTURE, `${json({ formulas: CORPUS.map((c) => c.formula), values })}\n`);
      }
      expect(disagreements(values, engine)).toEqual([]);
    },
    120_000,
  );

  it("computes Excel's documented values where LibreOffice 7.4 departs from Excel", () => {
    const buf = corpusWorkbook(EXCEL_ONLY);
    const got = column(buf, EXCEL_ONLY.length, true);
    const bad = EXCEL_ONLY.filter((c, i) => !same(c.excel, got[i]!)).map(
      (c) => `=${c.formula}: Excel ${show(c.excel)}, engine ${show(got[EXCEL_ONLY.indexOf(c)]!)}`,
    );
    expect(bad).toEqual([]);
  });
});
