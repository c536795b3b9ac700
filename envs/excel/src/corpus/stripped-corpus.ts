/**
 * The stripped-values corpus: workbooks in SpreadsheetBench's shapes (header rows, data tables, summary columns
 * filled with shared formulas, cross-sheet lookups, legacy CSE arrays, date-styled results), each formula cell
 * holding the value Excel caches for it (worked out from Excel's documented semantics). The test strips every
 * cached formula value, recalculates, and must get the same values back.
 */
import { rawXlsx } from "../raw-xlsx.js";
import { stored } from "./formula-corpus.js";

/** A formula cell with Excel's cached value; `array` = a legacy CSE formula; `shared` = a shared-formula group id. */
export interface F {
  f: string;
  v: number | string | boolean | null | { error: string };
  array?: boolean;
  /** Cell style index: 1 = a date (numFmt 14), 2 = a percentage (numFmt 10). */
  s?: number;
  /** Stored as a shared formula of group `si` (the master carries the group's `ref`). */
  si?: number;
  sref?: string;
}

let sharedGroups = 0;
export type CellSpec = number | string | boolean | null | F | { date: number };

export interface StrippedBook {
  name: string;
  sheets: Array<{ name: string; cells: Record<string, CellSpec> }>;
}

/** A column of formulas like Excel's fill-down: `{B2: …, B3: …}` from one formula written for the first row. */
function down(col: string, from: number, formula: string, values: F["v"][], s?: number): Record<string, F> {
  const out: Record<string, F> = {};
  const si = sharedGroups++;
  const sref = `${col}${from}:${col}${from + values.length - 1}`;
  values.forEach((v, i) => {
    const r = from + i;
    // relative row references in the first-row formula move with the row (the `$` ones do not)
    const f = formula.replace(
      /(\$?)([A-Z]{1,3})(\$?)(\d+)(?![\d(])/g,
      (m, d1: string, c: string, d2: string, n: string) =>
        d2 === "$" || /[A-Z]/.test(c) === false ? m : `${d1}${c}${d2}${Number(n) + i}`,
    );
    out[`${col}${r}`] = { f, v, si, ...(i === 0 ? { sref } : {}), ...(s ? { s } : {}) };
  });
  return out;
}

const table = (rows: Array<Array<CellSpec>>, firstRow = 1, firstCol = 1): Record<string, CellSpec> => {
  const out: Record<string, CellSpec> = {};
  rows.forEach((r, i) => {
    r.forEach((v, j) => {
      if (v !== null) out[`${String.fromCharCode(64 + firstCol + j)}${firstRow + i}`] = v;
    });
  });
  return out;
};

export const STRIPPED_BOOKS: StrippedBook[] = [
  {
    name: "sales-summary",
    sheets: [
      {
        name: "Sheet1",
        cells: {
          ...table([
            ["Date", "Region", "Product", "Sales", null, "Region", "Total", "Count", "Widgets"],
            [{ date: 45292 }, "North", "Widget", 120, null, "North"],
            [{ date: 45293 }, "South", "Gadget", 80, null, "South"],
            [{ date: 45294 }, "north", "Gizmo", 45.5, null, "East"],
            [{ date: 45323 }, "East", "Widget", 200, null, "West"],
            [{ date: 45324 }, "South", "widget", 60],
            [{ date: 45325 }, "West", "Gadget", 33.25],
            [{ date: 45352 }, "North", "Widget", 10],
            [{ date: 45353 }, "East", "Gizmo", 99],
          ]),
          ...down("G", 2, "SUMIF($B$2:$B$9,F2,$D$2:$D$9)", [175.5, 140, 299, 33.25]),
          ...down("H", 2, "COUNTIF($B$2:$B$9,F2)", [3, 2, 2, 1]),
          ...down("I", 2, 'SUMPRODUCT(--($B$2:$B$9=F2),--($C$2:$C$9="widget"),$D$2:$D$9)', [130, 60, 200, 0]),
          G7: { f: "SUM(G2:G5)", v: 647.75 },
          G8: { f: 'SUMIFS(D2:D9,A2:A9,">="&DATE(2024,2,1),A2:A9,"<"&DATE(2024,3,1))', v: 293.25 },
          G9: { f: 'MAX(IF(B2:B9="north",D2:D9))', v: 120, array: true },
          G10: { f: 'TEXT(G7,"$#,##0.00")', v: "$647.75" },
          G11: { f: 'AVERAGEIF(C2:C9,"widget",D2:D9)', v: 97.5 },
          G12: { f: 'COUNTIFS(B2:B9,"<>north",D2:D9,">50")', v: 4 },
        },
      },
    ],
  },
  {
    name: "order-lookup",
    sheets: [
      {
        name: "Report",
        cells: {
          A1: "Order",
          A2: 1003,
          B2: { f: "VLOOKUP(A2,Orders!$A$2:$C$6,2,FALSE)", v: "acme" },
          C2: { f: "INDEX(Orders!C2:C6,MATCH(A2,Orders!A2:A6,0))", v: 130 },
          A3: "gamma",
          B3: { f: "INDEX(Orders!A2:A6,MATCH(A3,Orders!B2:B6,0))", v: 1004 },
          C3: { f: 'IFERROR(VLOOKUP("zeta",Orders!B2:C6,2,FALSE),"not found")', v: "not found" },
          B4: { f: 'SUMIF(Orders!B:B,"acme",Orders!C:C)', v: 380 },
          B5: { f: 'LOOKUP(2,1/(Orders!B2:B6="acme"),Orders!A2:A6)', v: 1003 },
          B6: { f: 'COUNTIF(Orders!B2:B6,"*LL*")', v: 1 },
          B7: { f: "INDEX(Orders!$A$1:$C$6,3,2)", v: "Beta LLC" },
          B8: { f: "OFFSET(Orders!A1,4,2)", v: 410 },
          B9: { f: 'INDIRECT("Orders!B"&2)', v: "ACME" },
          B10: { f: "XLOOKUP(1005,Orders!A2:A6,Orders!B2:B6)", v: "Delta" },
          B11: { f: "MATCH(MAX(Orders!C2:C6),Orders!C2:C6,0)", v: 4 },
        },
      },
      {
        name: "Orders",
        cells: table([
          ["OrderID", "Customer", "Amount"],
          [1001, "ACME", 250],
          [1002, "Beta LLC", 75],
          [1003, "acme", 130],
          [1004, "Gamma", 410],
          [1005, "Delta", 55],
        ]),
      },
    ],
  },
  {
    name: "text-clean",
    sheets: [
      {
        name: "Sheet1",
        cells: {
          ...table([["Raw"], ["  john  SMITH "], ["mary-jane o'neil"], ["PK-1001"], ["pk-2002x"], [null], ["Zoe"]]),
          ...down("B", 2, "PROPER(TRIM(A2))", ["John Smith", "Mary-Jane O'Neil", "Pk-1001", "Pk-2002X", null, "Zoe"]),
          ...down("C", 2, 'IF(ISNUMBER(SEARCH("pk",A2)),"product","name")', [
            "name",
            "name",
            "product",
            "product",
            "name",
            "name",
          ]),
          ...down("D", 2, "LEN(A2)", [14, 16, 7, 8, 0, 3]),
          ...down("E", 2, 'LEFT(TRIM(A2),FIND(" ",TRIM(A2)&" ")-1)', [
            "john",
            "mary-jane",
            "PK-1001",
            "pk-2002x",
            null,
            "Zoe",
          ]),
          F2: { f: 'TEXTJOIN(", ",TRUE,C2:C7)', v: "name, name, product, product, name, name" },
          F3: { f: 'SUBSTITUTE(A4,"-","")', v: "PK1001" },
          F4: { f: "UPPER(MID(A3,6,4))", v: "JANE" },
        },
      },
    ],
  },
  {
    name: "dates",
    sheets: [
      {
        name: "Sheet1",
        cells: {
          ...table([
            ["Date"],
            [{ date: 45306 }],
            [{ date: 45351 }],
            [{ date: 45473 }],
            [{ date: 45657 }],
            [{ date: 45658 }],
          ]),
          ...down("B", 2, 'TEXT(A2,"yyyy-mm")', ["2024-01", "2024-02", "2024-06", "2024-12", "2025-01"]),
          ...down("C", 2, "EOMONTH(A2,0)", [45322, 45351, 45473, 45657, 45688], 1),
          ...down("D", 2, "WEEKDAY(A2,2)", [1, 4, 7, 2, 3]),
          ...down("E", 2, 'DATEDIF(A2,DATE(2025,1,31),"m")', [12, 11, 7, 1, 0]),
          F2: { f: 'COUNTIF(A2:A6,">"&DATE(2024,6,30))', v: 2 },
          F3: { f: "NETWORKDAYS(A2,A3)", v: 34 },
          F4: { f: "YEAR(A5)*100+MONTH(A5)", v: 202412 },
        },
      },
    ],
  },
  {
    name: "grades",
    sheets: [
      {
        name: "Sheet1",
        cells: {
          ...table([
            ["Student", "Score"],
            ["s1", 78],
            ["s2", 92],
            ["s3", 65],
            ["s4", 88],
            ["s5", 92],
            ["s6", 70],
            ["s7", 55],
            ["s8", 81],
            ["s9", 99],
            ["s10", 60],
          ]),
          ...down("C", 2, "RANK(B2,$B$2:$B$11)", [6, 2, 8, 4, 2, 7, 10, 5, 1, 9]),
          ...down("D", 2, 'IF(B2>=90,"A",IF(B2>=80,"B",IF(B2>=70,"C","F")))', [
            "C",
            "A",
            "F",
            "B",
            "A",
            "C",
            "F",
            "B",
            "A",
            "F",
          ]),
          F2: { f: "PERCENTILE(B2:B11,0.9)", v: 92.7 },
          F3: { f: "PERCENTILE.INC(B2:B11,0.25)", v: 66.25 },
          F4: { f: "QUARTILE(B2:B11,3)", v: 91 },
          F5: { f: "QUARTILE.INC(B2:B11,1)", v: 66.25 },
          F6: { f: "MEDIAN(B2:B11)", v: 79.5 },
          F7: { f: "AVERAGE(B2:B11)", v: 78 },
          F8: { f: "ROUND(STDEV.S(B2:B11),4)", v: 15.0111 },
          F9: { f: 'COUNTIF(D2:D11,"a")', v: 3 },
          F10: { f: 'TEXTJOIN("/",TRUE,IF(B2:B11>90,D2:D11,""))', v: "A/A/A", array: true },
          F11: { f: "SUMPRODUCT((B2:B11>=70)*(B2:B11<90))", v: 4 },
          F12: { f: "LARGE(B2:B11,3)", v: 92 },
          F13: { f: 'MAXIFS(B2:B11,D2:D11,"b")', v: 88 },
        },
      },
    ],
  },
  {
    name: "cse-index",
    sheets: [
      {
        name: "Data",
        cells: table([
          ["Name", "Team"],
          ["Ann", "Red"],
          ["Bob", "Blue"],
          ["Cid", "red"],
          ["Dan", "Green"],
          ["Eve", "Blue"],
          ["Fay", "Red"],
          ["Gus", "Green"],
          ["Hal", "BLUE"],
        ]),
      },
      {
        name: "Out",
        cells: {
          A2: "Red",
          B2: {
            f: "INDEX(Data!$A$2:$A$9,SMALL(IF(Data!$B$2:$B$9=$A$2,ROW(Data!$B$2:$B$9)-1),1))",
            v: "Ann",
            array: true,
          },
          B3: {
            f: "INDEX(Data!$A$2:$A$9,SMALL(IF(Data!$B$2:$B$9=$A$2,ROW(Data!$B$2:$B$9)-1),2))",
            v: "Cid",
            array: true,
          },
          B4: {
            f: "INDEX(Data!$A$2:$A$9,SMALL(IF(Data!$B$2:$B$9=$A$2,ROW(Data!$B$2:$B$9)-1),3))",
            v: "Fay",
            array: true,
          },
          B5: {
            f: 'IFERROR(INDEX(Data!$A$2:$A$9,SMALL(IF(Data!$B$2:$B$9=$A$2,ROW(Data!$B$2:$B$9)-1),4)),"")',
            v: null,
            array: true,
          },
          B6: { f: 'SUM(IF(Data!B2:B9="blue",1,0))', v: 3, array: true },
          B7: { f: 'MAX(IF(Data!B2:B9="green",ROW(Data!B2:B9)))', v: 8, array: true },
        },
      },
    ],
  },
  {
    name: "misc",
    sheets: [
      {
        name: "Sheet1",
        cells: {
          A1: 0,
          A2: 5,
          A3: "x",
          B1: { f: 'IF(A1=0,"",HYPERLINK("http://a.b","link"))', v: null },
          B2: { f: 'IF(A2=0,"",HYPERLINK("http://a.b","link"))', v: "link" },
          B3: { f: 'CHOOSE(2,"a","b","c")', v: "b" },
          B4: { f: 'SWITCH(A3,"x","ex","y","why","none")', v: "ex" },
          B5: { f: 'IFS(A2>10,"big",A2>3,"mid",TRUE,"small")', v: "mid" },
          B6: { f: 'A4=""', v: true },
          B7: { f: "COUNTBLANK(A1:A4)", v: 1 },
          B8: { f: "SUM(A:A)", v: 5 },
          B9: { f: "A2/A1", v: { error: "#DIV/0!" } },
          B10: { f: 'IFERROR(A2/A1,"n/a")', v: "n/a" },
          B11: { f: "ROUND(2.675*100,0)/100", v: 2.68 },
          B12: { f: '"A"&TEXT(A2,"000")', v: "A005" },
          B13: { f: 'CONCAT("a",A2,"b")', v: "a5b" },
          B14: { f: "MOD(-7,3)", v: 2 },
          B15: { f: "INT(-2.5)", v: -3 },
        },
      },
    ],
  },
  {
    // SpreadsheetBench task 57105's shape: an input whose month-end column calls EOM, which Excel does not have
    // (its cached value is #NAME?, and the official verdict on such a cell is 0 unless the gold holds #NAME? too)
    name: "name-errors",
    sheets: [
      {
        name: "Sheet1",
        cells: {
          ...table([
            ["Date", "Month end", "Fallback", "Checks"],
            [{ date: 45000 }],
            [{ date: 45031 }],
            [{ date: 45061 }],
          ]),
          ...down("B", 2, "EOM(A2,0)", [{ error: "#NAME?" }, { error: "#NAME?" }, { error: "#NAME?" }]),
          ...down("C", 2, "IFERROR(EOM(A2,0),EOMONTH(A2,0))", [45016, 45046, 45077]),
          D2: { f: "ISERROR(FOOBAR(1))", v: true },
          D3: { f: "_xludf.EOM(A2,0)", v: { error: "#NAME?" } },
          D4: { f: 'ERROR.TYPE(NOSUCHFUNCTION("x"))', v: 5 },
        },
      },
    ],
  },
  {
    name: "budget",
    sheets: [
      {
        name: "Jan",
        cells: table([
          ["Item", "Cost"],
          ["Rent", 1000],
          ["Food", 350.5],
          ["Fun", 120],
        ]),
      },
      {
        name: "Feb",
        cells: table([
          ["Item", "Cost"],
          ["Rent", 1000],
          ["Food", 410.25],
          ["Fun", 80],
        ]),
      },
      {
        name: "Summary",
        cells: {
          ...table([["Item", "Total", "Share"], ["Rent"], ["Food"], ["Fun"]]),
          ...down(
            "B",
            2,
            "SUMIF(Jan!$A$2:$A$4,A2,Jan!$B$2:$B$4)+SUMIF(Feb!$A$2:$A$4,A2,Feb!$B$2:$B$4)",
            [2000, 760.75, 200],
          ),
          ...down("C", 2, "B2/SUM($B$2:$B$4)", [0.6755045174364603, 0.2569450308198936, 0.06755045174364603], 2),
          D2: { f: 'INDEX(Feb!B2:B4,MATCH("food",Feb!A2:A4,0))-INDEX(Jan!B2:B4,MATCH("FOOD",Jan!A2:A4,0))', v: 59.75 },
        },
      },
    ],
  },
];

const esc = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
const isF = (c: CellSpec): c is F => !!c && typeof c === "object" && "f" in c;

function order(ref: string): [number, number] {
  const m = /^([A-Z]+)(\d+)$/.exec(ref)!;
  let col = 0;
  for (const ch of m[1]!) col = col * 26 + ch.charCodeAt(0) - 64;
  return [Number(m[2]), col];
}

/** The workbook as Excel saved it (`strip` = without the cached values of formula cells). */
export function strippedBook(book: StrippedBook, strip: boolean): Buffer {
  const strings: string[] = [];
  const sidx = (s: string) => {
    let i = strings.indexOf(s);
    if (i < 0) i = strings.push(s) - 1;
    return i;
  };
  const sheets = book.sheets.map((sh) => {
    const byRow = new Map<number, Array<[number, string]>>();
    for (const [ref, c] of Object.entries(sh.cells)) {
      const [r, col] = order(ref);
      let xml: string;
      if (isF(c)) {
        const f = esc(stored(c.f));
        const fx = c.array
          ? `<f t="array" ref="${ref}">${f}</f>`
          : c.si !== undefined
            ? c.sref
              ? `<f t="shared" ref="${c.sref}" si="${c.si}">${f}</f>`
              : `<f t="shared" si="${c.si}"/>`
            : `<f>${f}</f>`;
        const s = c.s ? ` s="${c.s}"` : "";
        const v = c.v;
        if (strip) xml = `<c r="${ref}"${s}>${fx}</c>`;
        else if (v === null) xml = `<c r="${ref}"${s} t="str">${fx}<v></v></c>`;
        else if (typeof v === "number") xml = `<c r="${ref}"${s}>${fx}<v>${v}</v></c>`;
        else if (typeof v === "boolean") xml = `<c r="${ref}"${s} t="b">${fx}<v>${v ? 1 : 0}</v></c>`;
        else if (typeof v === "string") xml = `<c r="${ref}"${s} t="str">${fx}<v>${esc(v)}</v></c>`;
        else xml = `<c r="${ref}"${s} t="e">${fx}<v>${esc(v.error)}</v></c>`;
      } else if (c && typeof c === "object" && "date" in c) xml = `<c r="${ref}" s="1"><v>${c.date}</v></c>`;
      else if (typeof c === "number") xml = `<c r="${ref}"><v>${c}</v></c>`;
      else if (typeof c === "boolean") xml = `<c r="${ref}" t="b"><v>${c ? 1 : 0}</v></c>`;
      else if (typeof c === "string") xml = `<c r="${ref}" t="s"><v>${sidx(c)}</v></c>`;
      else continue;
      if (!byRow.has(r)) byRow.set(r, []);
      byRow.get(r)!.push([col, xml]);
    }
    const rows = [...byRow.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(
        ([r, cs]) =>
          `<row r="${r}">${cs
            .sort((a, b) => a[0] - b[0])
            .map((x) => x[1])
            .join("")}</row>`,
      )
      .join("");
    return { name: sh.name, rows };
  });
  return rawXlsx({ sheets, sharedStrings: strings, cellXfs: [0, 14, 10] });
}

/** Every formula cell of a book: sheet, cell and Excel's cached value. */
export function formulaCells(
  book: StrippedBook,
): Array<{ sheet: string; ref: string; row: number; col: number; v: F["v"] }> {
  const out: Array<{ sheet: string; ref: string; row: number; col: number; v: F["v"] }> = [];
  for (const sh of book.sheets) {
    for (const [ref, c] of Object.entries(sh.cells)) {
      if (!isF(c)) continue;
      const [row, col] = order(ref);
      out.push({ sheet: sh.name, ref, row, col, v: c.v });
    }
  }
  return out;
}
