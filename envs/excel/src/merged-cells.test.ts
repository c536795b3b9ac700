import { describe, expect, it } from "vitest";
import { columnLetters } from "./column-letters.js";
import { book } from "./corpus/hostile-xml.js";
import { HiddenCells, mergeArea } from "./merged-cells.js";
import { XlsxValues } from "./xlsx-values.js";

describe("HiddenCells", () => {
  it("hides every cell of a merge but its top-left, as testing each merge does (generated merges)", () => {
    let seed = 11;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return 1 + Math.floor((seed / 2147483648) * n);
    };
    for (let round = 0; round < 50; round++) {
      const rects = [{ minRow: rnd(5), minCol: rnd(5), maxRow: 5 + rnd(6), maxCol: 5 + rnd(6) }];
      const refs = Array.from({ length: rnd(8) }, () => {
        const r = rnd(12);
        const c = rnd(12);
        return `${columnLetters(c)}${r}:${columnLetters(c + rnd(4) - 1)}${r + rnd(4) - 1}`;
      });
      const h = new HiddenCells(rects);
      for (const ref of refs) h.add(ref);
      for (let row = 1; row <= 14; row++)
        for (let col = 1; col <= 14; col++) {
          if (row < rects[0]!.minRow || row > rects[0]!.maxRow || col < rects[0]!.minCol || col > rects[0]!.maxCol)
            continue;
          const brute = refs.some((ref) => {
            const m = mergeArea(ref)!;
            return (
              row >= m.minRow &&
              row <= m.maxRow &&
              col >= m.minCol &&
              col <= m.maxCol &&
              !(row === m.minRow && col === m.minCol)
            );
          });
          expect(h.has(row, col), `${refs.join(" ")} at ${columnLetters(col)}${row}`).toBe(brute);
        }
    }
  });

  it("a sheet of a million merged ranges over the answer area is read within the deadline", () => {
    const n = 1_000_000;
    const merges = `<mergeCells>${Array.from({ length: n }, (_, i) => `<mergeCell ref="A${(i % 50) + 1}:B${(i % 50) + 2 + (i % 7)}"/>`).join("")}</mergeCells>`;
    const buf = book(
      '<c r="A1"><v>1</v></c>',
      {},
      '<row r="2"><c r="A2"><v>2</v></c><c r="B2"><v>3</v></c></row>',
      merges,
    );
    const cells = new XlsxValues(buf).readCells("Sheet1", [{ minRow: 1, maxRow: 100, minCol: 1, maxCol: 2 }]);
    const plain = [...cells.values()].map((v) =>
      v && typeof v === "object" ? Number((v as { value: bigint }).value) : v,
    );
    expect(plain).toEqual([1, null, null]);
  }, 20_000);
});
