/**
 * The stripped-values corpus (src/corpus/stripped-corpus.ts): workbooks whose formula cells hold Excel's cached
 * values. With every cached formula value stripped, recalculation must reproduce them all.
 */
import { describe, expect, it } from "vitest";
import { strippedMismatches } from "./corpus/fidelity.js";
import { STRIPPED_BOOKS, strippedBook } from "./corpus/stripped-corpus.js";
import { LazyRecalc } from "./lazy-recalc.js";
import { findSoffice, LibreOfficeRecalc } from "./libreoffice.js";
import { XlsxValues } from "./xlsx-values.js";

const soffice = findSoffice();
if (!soffice) console.warn("[env-excel] stripped corpus: soffice not installed, skipping the LibreOffice figure");

describe("stripped-values corpus", () => {
  it("recalculating the stripped workbooks reproduces every Excel cached value", () => {
    const { total, bad } = strippedMismatches((_i, buf) => new LazyRecalc(new XlsxValues(buf)));
    expect(total).toBeGreaterThanOrEqual(80);
    expect(bad).toEqual([]);
  });

  it("the stripped files really have no cached formula values (the compare alone fails them)", () => {
    const { bad } = strippedMismatches((_i, buf) => new XlsxValues(buf));
    expect(bad.length).toBeGreaterThan(50);
  });

  it.skipIf(!soffice)(
    "LibreOffice reproduces them too, except where it departs from Excel (XLOOKUP)",
    async () => {
      const lo = new LibreOfficeRecalc({ soffice: soffice! });
      const outs = await Promise.all(STRIPPED_BOOKS.map((b) => lo.recalc(strippedBook(b, true))));
      const { bad } = strippedMismatches((i) => new XlsxValues(outs[i]!));
      expect(bad).toEqual(['order-lookup Report!B10: Excel "Delta", got "#NAME?"']);
    },
    180_000,
  );
});
