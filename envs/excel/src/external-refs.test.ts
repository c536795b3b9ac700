/** External references are refused before LibreOffice sees a model-written workbook (no soffice needed here). */
import { describe, expect, it } from "vitest";
import { externalReason, refuseExternalRefs } from "./external-refs.js";
import { rawSheetXlsx, zipFiles } from "./raw-xlsx.js";
import { ZipReader } from "./zip.js";

describe("externalReason", () => {
  it("refuses references to other workbooks, URLs, paths and DDE", () => {
    for (const f of [
      `INDIRECT("'/etc/[host.xlsx]Sheet1'!B8")`,
      `INDIRECT("'file:///tmp/[host.xlsx]Sheet1'!B8")`,
      `INDIRECT("'[book0.xlsx]Sheet1'!B8")`,
      `INDIRECT("'http://127.0.0.1:8/[x.xlsx]Sheet1'!A1")`,
      `INDIRECT("'file:///tmp/host.ods'#$Sheet1.A1")`,
      `INDIRECT("\\\\server\\share\\[x.xlsx]S!A1")`,
      `indirect ("'C:\\x\\[b.xlsx]S'!A1")`,
      "[1]Sheet1!A1",
      "SUM([2]Data!A1:A9)+1",
      "'C:\\dir\\[book.xlsx]Sheet 1'!A1",
      "[1]!Rate",
      "cmd|'/c calc'!A1",
      `DDE("soffice","x","y")`,
      `WEBSERVICE("http://127.0.0.1:1/")`,
      `FILTERXML("<a/>","//a")`,
    ])
      expect(externalReason(f), f).not.toBeNull();
  });

  it("leaves ordinary formulas, structured references and strings that only look like paths alone", () => {
    for (const f of [
      "SUM(A1:A9)",
      "'My Sheet'!A1*2",
      `INDIRECT("B"&ROW())`,
      `INDIRECT("'Other sheet'!A1")`,
      "Table1[Amount]",
      "SUM(Table1[[#This Row],[Qty]])*Sheet2!A1",
      "[@Qty]*2",
      `IF(A1="[x]",1,2)`,
      `"http://example.com"&A1`,
      `HYPERLINK("http://example.com","x")`,
    ])
      expect(externalReason(f), f).toBeNull();
  });
});

const text = (xlsx: Buffer, part: string) => new ZipReader(xlsx).readText(part);

describe("refuseExternalRefs", () => {
  it("a refused formula cell becomes #REF! with no formula; other cells are untouched", () => {
    const book = rawSheetXlsx([
      `<c r="A1" t="str"><f>INDIRECT(&quot;'/tmp/[host.xlsx]Sheet1'!B8&quot;)</f><v>777</v></c>`,
      '<c r="A2"><f>1+1</f><v>2</v></c>',
    ]);
    const { xlsx, refused } = refuseExternalRefs(book);
    expect(refused).toEqual([
      { part: "xl/worksheets/sheet1.xml", where: "A1", why: "INDIRECT of another workbook, a URL or a path" },
    ]);
    const sheet = text(xlsx, "xl/worksheets/sheet1.xml");
    expect(sheet).toContain('<c r="A1" t="e"><v>#REF!</v></c>');
    expect(sheet).toContain('<c r="A2"><f>1+1</f><v>2</v></c>');
    expect(sheet).not.toContain("host.xlsx");
  });

  it("an empty self-closing cell before a refused one stays as it is", () => {
    const book = rawSheetXlsx(['<c r="A1" s="0"/>', `<c r="B1"><f>[1]Sheet1!A1</f><v>7</v></c>`, '<c r="C1"/>']);
    const sheet = text(refuseExternalRefs(book).xlsx, "xl/worksheets/sheet1.xml");
    expect(sheet).toContain('<c r="A1" s="0"/><c r="B1" t="e"><v>#REF!</v></c><c r="C1"/>');
  });

  it("a clean workbook is returned as it is (same bytes)", () => {
    const book = rawSheetXlsx(['<c r="A1"><f>SUM(B1:B3)</f></c>']);
    const r = refuseExternalRefs(book);
    expect(r.refused).toEqual([]);
    expect(r.xlsx).toBe(book);
  });

  it("a refused shared-formula master takes its whole group; defined names and validations are refused too", () => {
    const book = rawSheetXlsx(
      [
        `<c r="A1"><f t="shared" ref="A1:A3" si="0">[1]Sheet1!A1</f><v>5</v></c>`,
        '<c r="A2"><f t="shared" si="0"/><v>5</v></c>',
        '<c r="A3"><f t="shared" si="1"/><v>5</v></c>',
      ],
      {
        after:
          '<dataValidations count="1"><dataValidation type="list" sqref="B1"><formula1>INDIRECT("\'[x.xlsx]S\'!A1:A3")</formula1></dataValidation></dataValidations>',
      },
    );
    const { xlsx, refused } = refuseExternalRefs(book);
    const sheet = text(xlsx, "xl/worksheets/sheet1.xml");
    expect(sheet).toContain('<c r="A1" t="e"><v>#REF!</v></c>');
    expect(sheet).toContain('<c r="A2" t="e"><v>#REF!</v></c>');
    expect(sheet).toContain('<c r="A3"><f t="shared" si="1"/><v>5</v></c>');
    expect(sheet).toContain("<formula1>#REF!</formula1>");
    expect(refused.map((r) => r.where)).toEqual(["A1", "A2", "formula1"]);
  });

  it("removes external-link parts, data connections, external relationships (not hyperlinks) and linked pictures", () => {
    const base = new ZipReader(rawSheetXlsx(['<c r="A1"><v>1</v></c>']));
    const files: Array<[string, string | Buffer]> = base.names().map((n) => {
      let t = base.readText(n);
      if (n === "xl/workbook.xml")
        t = t.replace(
          "</sheets>",
          '</sheets><externalReferences><externalReference r:id="rId90"/></externalReferences><definedNames><definedName name="Rate">[1]Sheet1!$A$1</definedName><definedName name="Ok">Sheet1!$A$1</definedName></definedNames>',
        );
      if (n === "xl/_rels/workbook.xml.rels")
        t = t.replace(
          "</Relationships>",
          '<Relationship Id="rId90" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/externalLink" Target="externalLinks/externalLink1.xml"/><Relationship Id="rId91" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/connections" Target="connections.xml"/></Relationships>',
        );
      if (n === "[Content_Types].xml")
        t = t.replace(
          "</Types>",
          '<Override PartName="/xl/externalLinks/externalLink1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.externalLink+xml"/></Types>',
        );
      return [n, t];
    });
    files.push(["xl/externalLinks/externalLink1.xml", "<externalLink/>"]);
    files.push([
      "xl/externalLinks/_rels/externalLink1.xml.rels",
      '<Relationships><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/externalLinkPath" Target="http://127.0.0.1:9/x.xlsx" TargetMode="External"/></Relationships>',
    ]);
    files.push(["xl/connections.xml", "<connections/>"]);
    files.push(["xl/drawings/drawing1.xml", '<xdr:wsDr xmlns:r="r"><a:blip r:embed="rId1" r:link="rId2"/></xdr:wsDr>']);
    files.push([
      "xl/drawings/_rels/drawing1.xml.rels",
      '<Relationships><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="http://127.0.0.1:9/p.png" TargetMode="External"/></Relationships>',
    ]);
    files.push([
      "xl/worksheets/_rels/sheet1.xml.rels",
      '<Relationships><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/hyperlink" Target="http://example.com/" TargetMode="External"/></Relationships>',
    ]);
    const { xlsx } = refuseExternalRefs(zipFiles(files));
    const zip = new ZipReader(xlsx);
    expect(zip.names().filter((n) => /externalLink|connections/.test(n))).toEqual([]);
    const wb = zip.readText("xl/workbook.xml");
    expect(wb).not.toContain("externalReferences");
    expect(wb).toContain('<definedName name="Rate">#REF!</definedName>');
    expect(wb).toContain('<definedName name="Ok">Sheet1!$A$1</definedName>');
    expect(zip.readText("xl/_rels/workbook.xml.rels")).not.toMatch(/externalLink|connections/);
    expect(zip.readText("[Content_Types].xml")).not.toContain("externalLink");
    expect(zip.readText("xl/drawings/drawing1.xml")).toBe('<xdr:wsDr xmlns:r="r"><a:blip r:embed="rId1"/></xdr:wsDr>');
    expect(zip.readText("xl/drawings/_rels/drawing1.xml.rels")).not.toContain("127.0.0.1");
    expect(zip.readText("xl/worksheets/_rels/sheet1.xml.rels")).toContain("http://example.com/");
  });

  it("a file that is not a zip is passed on unchanged (LibreOffice's failure to open it is the file's outcome)", () => {
    const junk = Buffer.from("not a zip");
    expect(refuseExternalRefs(junk)).toEqual({ xlsx: junk, refused: [] });
  });
});
