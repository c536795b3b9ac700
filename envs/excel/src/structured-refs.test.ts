/** Structured references to tables (`Table1[Col]`, `[#This Row]`, `[#Totals]` …), checked against LibreOffice where installed. */
import { describe, expect, it } from "vitest";
import { LazyRecalc } from "./lazy-recalc.js";
import { findSoffice, LibreOfficeRecalc } from "./libreoffice.js";
import { rawXlsx } from "./raw-xlsx.js";
import { cellKey, XlsxValues } from "./xlsx-values.js";

const soffice = findSoffice();
if (!soffice) console.warn("[env-excel] structured references: soffice not installed, checking Excel's values only");

/** LibreOffice 7.4 departs from Excel on these (`COUNTA(Sales[#Data])` → 1, `ROWS(Sales[#All])` → #NAME?). */
const LO_DEPARTS = new Set(["COUNTA(Sales[#Data])", "ROWS(Sales[#All])"]);

const FORMULAS: Array<[string, number | string]> = [
  ["SUM(Sales[Amount])", 60],
  ['SUMIFS(Sales[Amount],Sales[Region],"north")', 40],
  ["COUNTA(Sales[#Data])", 12],
  ["ROWS(Sales[#All])", 5],
  ["INDEX(Sales[[#Headers],[Amount]],1)", "Amount"],
  ["Sales[[#Totals],[Amount]]", 60],
  ["SUM(Sales[[Qty]:[Amount]])", 66],
  ['VLOOKUP("South",Sales[[Region]:[Amount]],3,FALSE)', 20],
  ["INDEX(Sales[Region],MATCH(30,Sales[Amount],0))", "north"],
];

function book(): Buffer {
  const data = [
    ["Region", "Qty", "Amount"],
    ["North", 1, 10],
    ["South", 2, 20],
    ["north", 3, 30],
  ];
  let rows = data
    .map(
      (r, i) =>
        `<row r="${i + 1}">${r
          .map((v, j) => {
            const ref = `${"ABC"[j]}${i + 1}`;
            return typeof v === "number"
              ? `<c r="${ref}"><v>${v}</v></c>`
              : `<c r="${ref}" t="inlineStr"><is><t>${v}</t></is></c>`;
          })
          .join("")}<c r="D${i + 1}">${i ? `<f>Sales[[#This Row],[Qty]]*2</f>` : ""}</c></row>`,
    )
    .join("")
    .replace('<c r="D1"></c>', '<c r="D1" t="inlineStr"><is><t>Double</t></is></c>');
  rows +=
    '<row r="5"><c r="A5" t="inlineStr"><is><t>Total</t></is></c><c r="C5"><f>SUBTOTAL(109,Sales[Amount])</f></c></row>';
  const calc = FORMULAS.map(
    ([f], i) =>
      `<row r="${i + 1}"><c r="A${i + 1}"><f>${f.replace(/&/g, "&amp;").replace(/"/g, "&quot;")}</f></c></row>`,
  ).join("");
  return rawXlsx({
    sheets: [
      {
        name: "Data",
        rows,
        tables: [{ name: "Sales", ref: "A1:D5", columns: ["Region", "Qty", "Amount", "Double"], totalsRowCount: 1 }],
      },
      { name: "Calc", rows: calc },
    ],
  });
}

const read = (r: { readCells: XlsxValues["readCells"] }, sheet: string, rows: number, col = 1) => {
  const cells = r.readCells(sheet, [{ minRow: 1, maxRow: rows, minCol: col, maxCol: col }]);
  return Array.from({ length: rows }, (_, i) => {
    const v = cells.get(cellKey(i + 1, col)) ?? null;
    return v && typeof v === "object" && "kind" in v && v.kind === "int" ? Number(v.value) : v;
  });
};

describe("structured references", () => {
  it("evaluate to Excel's values", () => {
    const r = new LazyRecalc(new XlsxValues(book()));
    expect(read(r, "Calc", FORMULAS.length)).toEqual(FORMULAS.map(([, v]) => v));
    expect(read(r, "Data", 4, 4)).toEqual(["Double", 2, 4, 6]);
    expect(r.unscorable).toEqual([]);
  });

  it.skipIf(!soffice)(
    "agree with LibreOffice",
    async () => {
      const out = await new LibreOfficeRecalc({ soffice: soffice! }).recalc(book());
      const lo = read(new XlsxValues(out), "Calc", FORMULAS.length);
      const keep = FORMULAS.map(([f]) => !LO_DEPARTS.has(f));
      expect(lo.filter((_, i) => keep[i])).toEqual(FORMULAS.filter((_, i) => keep[i]).map(([, v]) => v));
    },
    120_000,
  );

  it("an unknown table makes the cell unscorable, never a guessed value", () => {
    const buf = rawXlsx({ sheets: [{ name: "S", rows: '<row r="1"><c r="A1"><f>SUM(Nope[X])</f></c></row>' }] });
    const r = new LazyRecalc(new XlsxValues(buf));
    r.readCells("S", [{ minRow: 1, maxRow: 1, minCol: 1, maxCol: 1 }]);
    expect(r.unscorable.join()).toMatch(/unknown table Nope/);
  });
});
