import { describe, expect, it } from "vitest";
import { columnIndex, columnLetters } from "./column-letters.js";

describe("column letters", () => {
  it("maps letters to numbers and back at the edges of each width", () => {
    for (const [letters, n] of [
      ["A", 1],
      ["Z", 26],
      ["AA", 27],
      ["AZ", 52],
      ["ZZ", 702],
      ["AAA", 703],
      ["XFD", 16384],
    ] as const) {
      expect(columnIndex(letters)).toBe(n);
      expect(columnLetters(n)).toBe(letters);
    }
  });

  it("round-trips every column Excel has", () => {
    for (let n = 1; n <= 16384; n++) expect(columnIndex(columnLetters(n))).toBe(n);
  });
});
