/**
 * Cross-check against openpyxl itself where a Python with openpyxl is available ($BENCHMAX_PYTHON or python3):
 * the same raw cells are read by our xlsx reader + transform_value port and by openpyxl + the Python rules.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { columnIndex } from "./column-letters.js";
import { compareWorkbooks } from "./compare.js";
import { pythonWithOpenpyxl } from "./py-env.js";
import { transformValue } from "./py-values.js";
import { rawSheetXlsx } from "./raw-xlsx.js";
import { cellKey, XlsxValues } from "./xlsx-values.js";

const py = pythonWithOpenpyxl();
if (!py.available) console.warn(`[env-excel] skipping openpyxl cross-checks: ${py.reason}`);
const SCRIPT = join(import.meta.dirname, "..", "scripts", "py-compare.py");

function runPy(req: unknown): any {
  const r = spawnSync(py.python, [SCRIPT], { input: JSON.stringify(req), encoding: "utf8" });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

// [cell XML, style index] — styles: 0 General, 1 date (14), 2 time (21), 3 [h]:mm:ss (46), 4 custom "yyyy-mm-dd", 5 "0.00%", 6 '"d"0' (literal)
const CELLS = [
  '<c r="A1"><v>2.675</v></c>',
  '<c r="A2"><v>5</v></c>',
  '<c r="A3"><v>1E2</v></c>',
  '<c r="A4" t="s"><v>0</v></c>',
  '<c r="A5" t="s"><v>1</v></c>',
  '<c r="A6" t="b"><v>1</v></c>',
  '<c r="A7" t="str"><v>3.14159</v></c>',
  '<c r="A8" t="e"><v>#N/A</v></c>',
  '<c r="A9" s="1"><v>45292</v></c>',
  '<c r="A10" s="1"><v>45292.5</v></c>',
  '<c r="A11" s="2"><v>0.5625</v></c>',
  '<c r="A12" s="2"><v>0</v></c>',
  '<c r="A13" s="3"><v>1.5</v></c>',
  '<c r="A14" s="4"><v>45293.5</v></c>',
  '<c r="A15" s="5"><v>0.125</v></c>',
  '<c r="A16" s="6"><v>7</v></c>',
  '<c r="A17"><f>SUM(A1:A2)</f></c>',
  '<c r="A18"><f>SUM(A1:A2)</f><v>7.675</v></c>',
  '<c r="A19" t="inlineStr"><is><t> 12 </t></is></c>',
  '<c r="A20" t="inlineStr"><is><r><t>ab</t></r><r><t>cd</t></r></is></c>',
  '<c r="A21" t="s"><v>2</v></c>',
  '<c r="A22" s="1"><v>30</v></c>',
  '<c r="A23" s="2"><v>0.99999999999</v></c>',
  '<c r="A24" t="d"><v>2024-01-02T10:00:00</v></c>',
  '<c r="A25" t="d"><v>2024-01-02</v></c>',
  '<c r="A26"><v>-0.125</v></c>',
  '<c r="A27"><v>1.005</v></c>',
  '<c r="A28" t="s"><v>3</v></c>',
  '<c r="A29" t="str"><v></v></c>',
  '<c r="A30" s="1"><v>-1</v></c>',
];
const STRINGS = ["hello", "1_000", "x005F_y", "١٢"];

function build(): Buffer {
  return rawSheetXlsx(CELLS, {
    sharedStrings: STRINGS,
    numFmts: { 164: "yyyy-mm-dd", 165: '"d"0' },
    cellXfs: [0, 14, 21, 46, 164, 10, 165],
    after: '<mergeCells count="1"><mergeCell ref="B1:B2"/></mergeCells>',
  });
}

describe.skipIf(!py.available)("openpyxl cross-check", () => {
  it("reads and transforms every vector as openpyxl + transform_value do", () => {
    const dir = mkdtempSync(join(tmpdir(), "excel-diff-"));
    const file = join(dir, "v.xlsx");
    writeFileSync(file, build());
    const names = CELLS.map((c) => /r="([A-Z]+\d+)"/.exec(c)![1]!);
    const want = runPy({ mode: "cells", file, sheet: "Sheet1", cells: names });
    const book = new XlsxValues(build());
    const cells = book.readCells("Sheet1", [{ minCol: 1, minRow: 1, maxCol: 2, maxRow: 40 }]);
    for (const name of names) {
      const row = Number(/\d+/.exec(name)![0]);
      const col = columnIndex(/[A-Z]+/.exec(name)![0]);
      const t = transformValue(cells.get(cellKey(row, col)) ?? null);
      const ours = t === null || typeof t === "string" || typeof t === "number" ? t : t.kind;
      const theirs = want[name].norm;
      const theirsKind =
        typeof theirs === "string" && /^datetime\.(date|timedelta)\(/.test(theirs)
          ? /datetime\.(\w+)/.exec(theirs)![1]
          : theirs;
      expect({ name, v: ours }).toEqual({ name, v: theirsKind });
    }
  });

  it("scores whole files the same way", () => {
    const dir = mkdtempSync(join(tmpdir(), "excel-diff-"));
    const gold = join(dir, "gold.xlsx");
    const out1 = join(dir, "out1.xlsx");
    const out2 = join(dir, "out2.xlsx");
    writeFileSync(gold, build());
    writeFileSync(out1, rawSheetXlsx(['<c r="A1"><v>2.67</v></c>', '<c r="A2" t="str"><v>5.001</v></c>']));
    writeFileSync(out2, rawSheetXlsx(['<c r="A1"><v>2.68</v></c>', '<c r="A2"><v>5</v></c>']));
    const positions = [
      "A1:A2",
      "A1",
      "A2",
      "'Sheet1'!A1:A2",
      "Sheet1!A1:A2,A2",
      "a1:a2",
      "A1:A3",
      "B1:B2",
      "A:A",
      "Nope!A1",
      "A0",
      "A2:A1",
    ];
    const jobs = positions.flatMap((p) => [out1, out2].map((o) => ({ gold, output: o, answer_position: p })));
    const want = runPy({ mode: "compare", jobs }).results as boolean[];
    const ours = jobs.map(
      (j) => compareWorkbooks(build(), j.output === out1 ? rawOut1() : rawOut2(), j.answer_position).pass,
    );
    expect(ours).toEqual(want);
    expect(want.filter(Boolean).length).toBeGreaterThan(2);
    expect(want.filter((x) => !x).length).toBeGreaterThan(2);
  });
});

const rawOut1 = () => rawSheetXlsx(['<c r="A1"><v>2.67</v></c>', '<c r="A2" t="str"><v>5.001</v></c>']);
const rawOut2 = () => rawSheetXlsx(['<c r="A1"><v>2.68</v></c>', '<c r="A2"><v>5</v></c>']);
