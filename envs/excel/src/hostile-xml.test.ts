/**
 * Workbooks whose XML a lazy regex scans in quadratic time (issue 41): unclosed `<c>`, `<t>`, `<f>`, `<si>` and
 * `<Relationship>` tags, huge attribute runs, a formula of quotes, a number format of `[`. Each is a few KB of zip.
 * Inline, every reader finishes within the test's deadline (quadratic scans of these took minutes) and the outcome is
 * what the answer cell decides, never an error of the env. hostile-xml-workers.test.ts (slow: it measures the event
 * loop, which a loaded machine's scheduling would disturb) runs them on the compare workers.
 */
import { describe, expect, it } from "vitest";
import { compareWorkbooks } from "./compare.js";
import { book, gold, HOSTILE, victimOut } from "./corpus/hostile-xml.js";
import { externalReason, refuseExternalRefs } from "./external-refs.js";
import { XlsxValues } from "./xlsx-values.js";

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
