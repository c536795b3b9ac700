import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { canonicalZipDates } from "./artifacts.js";
import { fixturesDir } from "./dataset.js";

const book = () => readFileSync(join(fixturesDir(), "verified", "spreadsheet", "202", "1_202_init.xlsx"));

/** Offsets of each local file header's DOS time/date (what a save at another time changes). */
function localDateOffsets(buf: Buffer): number[] {
  const out: number[] = [];
  for (let i = 0; i + 4 <= buf.length; i++) if (buf.readUInt32LE(i) === 0x04034b50) out.push(i + 10);
  return out;
}

describe("excel artifacts: the stored workbook", () => {
  it("two saves of the same parts at different times store the same bytes (zip dates only)", () => {
    const a = book();
    const b = Buffer.from(a);
    for (const at of localDateOffsets(b)) b.writeUInt32LE(0x5a215c31, at); // another time and date
    expect(a.equals(b)).toBe(false);
    const ca = canonicalZipDates(a);
    expect(ca.equals(canonicalZipDates(b))).toBe(true);
    expect(ca.length).toBe(a.length);
    // only header dates differ from the input: everything else (contents, CRCs) is the same bytes
    let differing = 0;
    for (let i = 0; i < a.length; i++) if (a[i] !== ca[i]) differing++;
    expect(differing).toBeLessThanOrEqual(localDateOffsets(a).length * 8);
    expect(a.equals(book())).toBe(true); // the input is not changed
  });

  it("bytes that are not a well-formed zip (a file the model's code wrote) are stored unchanged", () => {
    const junk = Buffer.from("not a workbook at all");
    expect(canonicalZipDates(junk)).toBe(junk);
    const cut = book().subarray(0, 500);
    expect(canonicalZipDates(cut)).toBe(cut);
  });
});
