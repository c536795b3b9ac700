import ExcelJS from "exceljs";
import { describe, expect, it } from "vitest";
import { compareWorkbooks } from "./compare.js";
import { rawSheetXlsx, rawXlsx } from "./raw-xlsx.js";
import { recalcWorkbook } from "./recalc.js";
import { loadWorkbook, saveWorkbook } from "./workbook.js";

function book(): { wb: ExcelJS.Workbook; ws: ExcelJS.Worksheet } {
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet("Sheet1");
  return { wb, ws };
}
const result = (ws: ExcelJS.Worksheet, a: string) => (ws.getCell(a).value as { result?: unknown }).result;

describe("embedded recalculation", () => {
  it("evaluates formulas in dependency order, whatever the cell order", () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = { formula: "B1*2" } as ExcelJS.CellFormulaValue;
    ws.getCell("B1").value = { formula: "C1+1" } as ExcelJS.CellFormulaValue;
    ws.getCell("C1").value = 4;
    const r = recalcWorkbook(wb);
    expect(r).toEqual({ formulas: 2, errors: [], unsupported: [] });
    expect(result(ws, "A1")).toBe(10);
    expect(result(ws, "B1")).toBe(5);
  });

  it("reads other sheets, quoted names and whole columns", () => {
    const { wb, ws } = book();
    const other = wb.addWorksheet("My Data");
    other.getCell("A1").value = 2;
    other.getCell("A2").value = 3;
    ws.getCell("A1").value = { formula: "SUM('My Data'!A:A)" } as ExcelJS.CellFormulaValue;
    ws.getCell("A2").value = { formula: "MAX('My Data'!A1:A2)+MIN('My Data'!A1:A2)" } as ExcelJS.CellFormulaValue;
    recalcWorkbook(wb);
    expect(result(ws, "A1")).toBe(5);
    expect(result(ws, "A2")).toBe(5);
  });

  it("supports SUMIFS, COUNTIFS, MEDIAN, MATCH, LARGE, COUNTA, TEXTJOIN and XLOOKUP", () => {
    const { wb, ws } = book();
    [3, 1, 4, 1, 5].forEach((v, i) => {
      ws.getCell(`A${i + 1}`).value = v;
      ws.getCell(`B${i + 1}`).value = i % 2 ? "x" : "y";
    });
    const f = (a: string, formula: string) => {
      ws.getCell(a).value = { formula } as ExcelJS.CellFormulaValue;
    };
    f("C1", 'SUMIFS(A1:A5,B1:B5,"y")');
    f("C2", 'COUNTIFS(B1:B5,"x",A1:A5,">0")');
    f("C3", "MEDIAN(A1:A5)");
    f("C4", "MATCH(4,A1:A5,0)");
    f("C5", "LARGE(A1:A5,2)");
    f("C6", "COUNTA(A1:B5)");
    f("C7", 'TEXTJOIN("-",TRUE,B1:B3)');
    f("C8", 'XLOOKUP(5,A1:A5,B1:B5,"none")');
    const r = recalcWorkbook(wb);
    expect(r.errors).toEqual([]);
    expect(["C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8"].map((a) => result(ws, a))).toEqual([
      12,
      2,
      3,
      3,
      4,
      10,
      "y-x-y",
      "y",
    ]);
  });

  it("reports circular references and leaves those cells without a cached value", async () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = { formula: "B1+1" } as ExcelJS.CellFormulaValue;
    ws.getCell("B1").value = { formula: "A1+1" } as ExcelJS.CellFormulaValue;
    ws.getCell("C1").value = { formula: "1+1" } as ExcelJS.CellFormulaValue;
    const r = recalcWorkbook(wb);
    expect(r.errors.join()).toMatch(/circular reference: Sheet1!A1 → Sheet1!B1 → Sheet1!A1/);
    expect(result(ws, "A1")).toBeUndefined();
    expect(result(ws, "C1")).toBe(2);
    // saved and read as openpyxl would: A1 is None
    const buf = await saveWorkbook(wb);
    const gold = rawSheetXlsx(['<c r="C1"><v>2</v></c>']);
    expect(compareWorkbooks(gold, buf, "A1:C1").pass).toBe(true);
  });

  it("long dependency chains evaluate without recursion, in both engines", async () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = 1;
    for (let r = 2; r <= 3000; r++) ws.getCell(`A${r}`).value = { formula: `A${r - 1}+1` } as ExcelJS.CellFormulaValue;
    ws.getCell("B1").value = { formula: "SUM(A1:A3000)+MAX(A1:A3000)" } as ExcelJS.CellFormulaValue;
    expect(recalcWorkbook(wb).errors).toEqual([]);
    expect(result(ws, "A3000")).toBe(3000);
    expect(result(ws, "B1")).toBe((3000 * 3001) / 2 + 3000);
    // the same file without cached values, recalculated lazily by the scorer
    for (let r = 2; r <= 3000; r++) ws.getCell(`A${r}`).value = { formula: `A${r - 1}+1` } as ExcelJS.CellFormulaValue;
    ws.getCell("B1").value = { formula: "SUM(A1:A3000)+MAX(A1:A3000)" } as ExcelJS.CellFormulaValue;
    const gold = rawSheetXlsx([`<c r="B1"><v>${(3000 * 3001) / 2 + 3000}</v></c>`]);
    const out = await saveWorkbook(wb);
    expect(compareWorkbooks(gold, out, "B1").pass).toBe(false);
    expect(compareWorkbooks(gold, out, "B1", { recalcOutput: true }).pass).toBe(true);
  });

  it("a self-reference is circular too", () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = { formula: "A1" } as ExcelJS.CellFormulaValue;
    expect(recalcWorkbook(wb).errors[0]).toMatch(/circular/);
  });

  it("errors become Excel error values; an unknown function leaves no value at all, never a stale one", async () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = { formula: "1/0" } as ExcelJS.CellFormulaValue;
    ws.getCell("A2").value = { formula: 'INFO("osversion")', result: 42 } as ExcelJS.CellFormulaValue;
    ws.getCell("A3").value = { formula: "A2+1", result: 43 } as ExcelJS.CellFormulaValue;
    ws.getCell("A4").value = { formula: "1+1", result: 7 } as ExcelJS.CellFormulaValue;
    const r = recalcWorkbook(wb);
    expect(result(ws, "A1")).toEqual({ error: "#DIV/0!" });
    expect(result(ws, "A2")).toBeUndefined(); // the stale 42 is gone
    expect(result(ws, "A3")).toBeUndefined(); // depends on it: not trusted either
    expect(result(ws, "A4")).toBe(2); // unrelated cells still recalculate
    expect(r.unsupported).toEqual([`Sheet1!A2: =INFO("osversion"): function INFO`]);
  });

  it("translates shared formulas from a loaded file", async () => {
    const xml = rawSheetXlsx([
      '<c r="A1"><v>1</v></c>',
      '<c r="A2"><v>2</v></c>',
      '<c r="B1"><f t="shared" ref="B1:B2" si="0">A1*10</f><v>0</v></c>',
      '<c r="B2"><f t="shared" si="0"/><v>0</v></c>',
    ]);
    const wb = await loadWorkbook(xml);
    recalcWorkbook(wb);
    const ws = wb.getWorksheet("Sheet1")!;
    expect(result(ws, "B1")).toBe(10);
    expect(result(ws, "B2")).toBe(20);
  });

  it("written values read back through the compare like the gold file", async () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = 2.675;
    ws.getCell("A2").value = { formula: "A1*2" } as ExcelJS.CellFormulaValue;
    ws.getCell("A3").value = { formula: 'TEXT(A1,"0.0")' } as ExcelJS.CellFormulaValue;
    ws.getCell("A4").value = { formula: "A1>2" } as ExcelJS.CellFormulaValue;
    recalcWorkbook(wb);
    const gold = rawSheetXlsx([
      '<c r="A1"><v>2.67</v></c>',
      '<c r="A2"><v>5.35</v></c>',
      '<c r="A3" t="str"><v>2.7</v></c>',
      '<c r="A4" t="b"><v>1</v></c>',
    ]);
    expect(compareWorkbooks(gold, await saveWorkbook(wb), "A1:A4")).toMatchObject({ pass: true });
  });
});

describe("the issue's failing cases", () => {
  it("SUMPRODUCT(--(A3:A57=C3:C57),B3:B57) compares text case-insensitively, element by element", () => {
    const { wb, ws } = book();
    for (let r = 3; r <= 57; r++) {
      ws.getCell(`A${r}`).value = r % 3 ? "Apple" : "pear";
      ws.getCell(`C${r}`).value = r % 2 ? "APPLE" : "Pear";
      ws.getCell(`B${r}`).value = r;
    }
    ws.getCell("E1").value = { formula: "SUMPRODUCT(--(A3:A57=C3:C57),B3:B57)" } as ExcelJS.CellFormulaValue;
    recalcWorkbook(wb);
    let want = 0;
    for (let r = 3; r <= 57; r++) if ((r % 3 ? "apple" : "pear") === (r % 2 ? "apple" : "pear")) want += r;
    expect(result(ws, "E1")).toBe(want);
  });

  it('IF(A1=0,"",HYPERLINK(…)) evaluates, and an unrelated unsupported formula leaves it alone', () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = 0;
    ws.getCell("A2").value = 3;
    ws.getCell("B1").value = { formula: 'IF(A1=0,"",HYPERLINK("http://x.y/"&A1,"go"))' } as ExcelJS.CellFormulaValue;
    ws.getCell("B2").value = { formula: 'IF(A2=0,"",HYPERLINK("http://x.y/"&A2,"go"))' } as ExcelJS.CellFormulaValue;
    ws.getCell("Z9").value = { formula: 'WEBSERVICE("http://x")' } as ExcelJS.CellFormulaValue;
    const r = recalcWorkbook(wb);
    // "" is kept as no cached value by exceljs: openpyxl reads it as None, as it reads Excel's empty <v>
    expect([result(ws, "B1"), result(ws, "B2")]).toEqual([undefined, "go"]);
    expect(r.unsupported).toEqual(['Sheet1!Z9: =WEBSERVICE("http://x"): function WEBSERVICE']);
  });

  it("INDEX over another sheet reads that sheet; PERCENTILE.INC and QUARTILE.INC are not stubs", () => {
    const { wb, ws } = book();
    const other = wb.addWorksheet("Other");
    other.getCell("B2").value = "there";
    ws.getCell("B2").value = "here";
    [1, 2, 3, 4, 10].forEach((v, i) => {
      ws.getCell(`D${i + 1}`).value = v;
    });
    ws.getCell("A1").value = { formula: "INDEX(Other!$A$1:$B$2,2,2)" } as ExcelJS.CellFormulaValue;
    ws.getCell("A2").value = { formula: "_xlfn.PERCENTILE.INC(D1:D5,0.9)" } as ExcelJS.CellFormulaValue;
    ws.getCell("A3").value = { formula: "_xlfn.QUARTILE.INC(D1:D5,3)" } as ExcelJS.CellFormulaValue;
    recalcWorkbook(wb);
    expect([result(ws, "A1"), result(ws, "A2"), result(ws, "A3")]).toEqual(["there", 7.6, 4]);
  });
});

describe("lazy recalculation in the scorer (straight from the XML)", () => {
  const gold = (cells: string[]) => rawSheetXlsx(cells);
  it("evaluates compared formula cells and their dependencies, shared formulas included", () => {
    const out = rawSheetXlsx([
      '<c r="A1"><v>1</v></c>',
      '<c r="A2"><v>2</v></c>',
      '<c r="B1"><f t="shared" ref="B1:B2" si="0">A1*10</f></c>',
      '<c r="B2"><f t="shared" si="0"/></c>',
      '<c r="C1"><f>SUM(B1:B2)+MAX(A1:A2)</f></c>',
    ]);
    const g = gold(['<c r="B1"><v>10</v></c>', '<c r="B2"><v>20</v></c>', '<c r="C1"><v>32</v></c>']);
    expect(compareWorkbooks(g, out, "B1:C2").pass).toBe(false); // no cached values: None
    expect(compareWorkbooks(g, out, "B1:C2", { recalcOutput: true })).toMatchObject({ pass: true });
  });
  it("circular cells read as None; date styles give datetimes; cross-sheet references work", () => {
    const out = rawXlsx({
      sheets: [
        {
          name: "S",
          rows: '<row r="1"><c r="A1"><f>B1</f></c><c r="B1"><f>A1</f></c><c r="C1" s="1"><f>DATE(2024,1,1)</f></c><c r="D1"><f>\'My D\'!A1*2</f></c></row>',
        },
        { name: "My D", rows: '<row r="1"><c r="A1"><v>4</v></c></row>' },
      ],
      cellXfs: [0, 14],
    });
    const g = rawXlsx({
      sheets: [{ name: "S", rows: '<row r="1"><c r="C1"><v>45292</v></c><c r="D1"><v>8</v></c></row>' }],
    });
    expect(compareWorkbooks(g, out, "A1:D1", { recalcOutput: true })).toMatchObject({ pass: true });
  });
});

describe("bounded ranges and functions Excel lacks", () => {
  it("a function Excel does not have is #NAME? (not 'cannot evaluate'), in both engines", () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = { formula: "FOOBAR(1)" } as ExcelJS.CellFormulaValue;
    ws.getCell("A2").value = { formula: 'IFERROR(EOM(A1,0),"none")' } as ExcelJS.CellFormulaValue;
    const r = recalcWorkbook(wb);
    expect(result(ws, "A1")).toEqual({ error: "#NAME?" });
    expect(result(ws, "A2")).toBe("none");
    expect(r.unsupported).toEqual([]);
    const buf = rawSheetXlsx(['<c r="A1"><f>FOOBAR(1)</f></c>']);
    const gold = rawSheetXlsx(['<c r="A1" t="e"><v>#NAME?</v></c>']);
    expect(compareWorkbooks(gold, buf, "A1", { recalcOutput: true }).pass).toBe(true);
  });

  it("a huge reference reads only the data inside it, whatever the used area, in both engines", () => {
    const { wb, ws } = book();
    ws.getCell("A1").value = 1;
    ws.getCell("B2").value = 2;
    ws.getCell("C3").value = 3;
    ws.getCell("XFD1048576").value = 1000; // the used area is now the whole sheet
    // in column XFD: outside the ranges they sum
    ws.getCell("XFD1").value = { formula: "SUMPRODUCT(A1:C1048575)+SUM(A1:XFC1048575)" } as ExcelJS.CellFormulaValue;
    ws.getCell("XFD2").value = { formula: "ROWS(A1:XFC1048575)*1+COUNTBLANK(A1:C3)" } as ExcelJS.CellFormulaValue;
    recalcWorkbook(wb);
    expect(result(ws, "XFD1")).toBe(12);
    expect(result(ws, "XFD2")).toBe(1048575 + 6);
    const buf = rawSheetXlsx([
      '<c r="A1"><v>1</v></c>',
      '<c r="B2"><v>2</v></c>',
      '<c r="C3"><v>3</v></c>',
      '<c r="XFD3"><f>SUMPRODUCT(A1:C1048575)+SUM(A1:XFC1048575)</f></c>',
      '<c r="XFD1048576"><v>1000</v></c>',
    ]);
    const gold = rawSheetXlsx(['<c r="XFD3"><v>12</v></c>']);
    expect(compareWorkbooks(gold, buf, "XFD3", { recalcOutput: true }).pass).toBe(true);
  });
});
