/** Agreement figures of the two differential corpora, for the tests and bench/excel.mjs. */
import { LazyRecalc } from "../lazy-recalc.js";
import type { LibreOfficeRecalc } from "../libreoffice.js";
import { compareCellValue, type PyValue } from "../py-values.js";
import { cellKey, XlsxValues } from "../xlsx-values.js";
import { CORPUS, corpusWorkbook } from "./formula-corpus.js";
import { formulaCells, STRIPPED_BOOKS, strippedBook } from "./stripped-corpus.js";

const show = (v: PyValue) => JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? Number(x) : x));

type Reader = { readCells: XlsxValues["readCells"] };

/** Cells whose recomputed value differs from Excel's cached one (by the official compare rule). */
export function strippedMismatches(read: (bookIndex: number, stripped: Buffer) => Reader): {
  total: number;
  bad: string[];
} {
  let total = 0;
  const bad: string[] = [];
  STRIPPED_BOOKS.forEach((book, bi) => {
    const excel = new XlsxValues(strippedBook(book, false));
    const reader = read(bi, strippedBook(book, true));
    for (const c of formulaCells(book)) {
      total++;
      const rect = { minRow: c.row, maxRow: c.row, minCol: c.col, maxCol: c.col };
      const want = excel.readCells(c.sheet, [rect]).get(cellKey(c.row, c.col)) ?? null;
      const got = reader.readCells(c.sheet, [rect]).get(cellKey(c.row, c.col)) ?? null;
      if (!compareCellValue(want, got))
        bad.push(`${book.name} ${c.sheet}!${c.ref}: Excel ${show(want)}, got ${show(got)}`);
    }
  });
  return { total, bad };
}

export interface Fidelity {
  /** Formula corpus: cases where the embedded engine equals LibreOffice. */
  formulaCorpus: { total: number; agree: number };
  /** Stripped-values corpus: cells reproducing Excel's cached value, embedded and (when given) LibreOffice. */
  stripped: { total: number; embedded: number; libreoffice?: number };
}

const num = (v: PyValue): PyValue =>
  v && typeof v === "object" && "kind" in v && v.kind === "int" ? Number((v as { value: bigint }).value) : v;

function same(a: PyValue, b: PyValue): boolean {
  a = num(a);
  b = num(b);
  if (typeof a === "number" && typeof b === "number") return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a));
  return show(a) === show(b);
}

export async function corpusFidelity(lo?: LibreOfficeRecalc): Promise<Fidelity> {
  const emb = strippedMismatches((_i, buf) => new LazyRecalc(new XlsxValues(buf)));
  const out: Fidelity = {
    formulaCorpus: { total: CORPUS.length, agree: 0 },
    stripped: { total: emb.total, embedded: emb.total - emb.bad.length },
  };
  if (lo) {
    const book = corpusWorkbook();
    const rect = { minRow: 1, maxRow: CORPUS.length, minCol: 1, maxCol: 1 };
    const [loBook, ...loStripped] = await Promise.all([
      lo.recalc(book),
      ...STRIPPED_BOOKS.map((b) => lo.recalc(strippedBook(b, true))),
    ]);
    const want = new XlsxValues(loBook!).readCells("Calc", [rect]);
    const got = new LazyRecalc(new XlsxValues(book)).readCells("Calc", [rect]);
    for (let i = 1; i <= CORPUS.length; i++) {
      if (same(want.get(cellKey(i, 1)) ?? null, got.get(cellKey(i, 1)) ?? null)) out.formulaCorpus.agree++;
    }
    const l = strippedMismatches((i) => new XlsxValues(loStripped[i]!));
    out.stripped.libreoffice = l.total - l.bad.length;
  }
  return out;
}
