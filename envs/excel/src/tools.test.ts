import { readdirSync } from "node:fs";
import type { ToolResult } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExcelTask } from "./dataset.js";
import { createExcelEnv, parseToolFamilies, SYSTEM_PROMPT, systemPromptFor } from "./index.js";

const env = createExcelEnv();
let task: ExcelTask;
const text = (r: ToolResult) => (typeof r.content === "string" ? r.content : JSON.stringify(r.content));

beforeAll(async () => {
  [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
});
afterAll(() => env.close());

async function fresh(id: string) {
  await env.init(id, task);
  return (name: string, args: Record<string, unknown> = {}) => env.runTool(id, { name, arguments: args });
}

describe("workbook tools", () => {
  it("lists sheets and reads values and formulas as JSON", async () => {
    const call = await fresh("t-read");
    const sheets = JSON.parse(text(await call("list_sheets")));
    expect(sheets[0]).toMatchObject({ name: "Sheet1", rows: 7, columns: 2 });
    await call("write_cell", { cell: "B8", value: "=SUM(B2:B7)" });
    const r = JSON.parse(text(await call("read_range", { range: "A1:B8" })));
    expect(r.values[0]).toEqual(["Item", "Amount"]);
    expect(r.formulas).toEqual({ B8: "=SUM(B2:B7)" });
    expect(typeof r.values[7][1]).toBe("number");
    await env.release("t-read");
  });

  it("write_range, insert/delete rows and columns, sheets and number formats", async () => {
    const call = await fresh("t-write");
    expect(
      (
        await call("write_range", {
          start: "D1",
          values: [
            ["x", 1, true],
            [null, "=1+1", "t"],
          ],
        })
      ).isError,
    ).toBe(false);
    let r = JSON.parse(text(await call("read_range", { range: "D1:F2" })));
    expect(r.values).toEqual([
      ["x", 1, true],
      [null, 2, "t"],
    ]);
    await call("insert_rows", { row: 1, count: 2 });
    r = JSON.parse(text(await call("read_range", { range: "A3:B3" })));
    expect(r.values).toEqual([["Item", "Amount"]]);
    await call("delete_rows", { row: 1, count: 2 });
    await call("insert_columns", { column: "A" });
    r = JSON.parse(text(await call("read_range", { range: "B1" })));
    expect(r.values).toEqual([["Item"]]);
    await call("delete_columns", { column: "A" });
    expect((await call("add_sheet", { name: "Out" })).isError).toBe(false);
    expect((await call("add_sheet", { name: "out" })).isError).toBe(true);
    expect((await call("rename_sheet", { sheet: "Out", new_name: "Result" })).isError).toBe(false);
    expect((await call("set_number_format", { sheet: "Result", range: "A1:B2", format: "0.00%" })).isError).toBe(false);
    expect((await call("delete_sheet", { sheet: "Result" })).isError).toBe(false);
    const sheets = JSON.parse(text(await call("list_sheets")));
    expect(sheets.map((s: { name: string }) => s.name)).toEqual(["Sheet1"]);
    await env.release("t-write");
  });

  it("bad arguments come back as tool errors naming the argument", async () => {
    const call = await fresh("t-bad");
    const cases: Array<[string, Record<string, unknown>, RegExp]> = [
      ["read_range", { range: "A1:ZZ" }, /range: "ZZ" is not a cell reference/],
      ["read_range", { range: "nonsense" }, /is not a cell reference/],
      ["read_range", { sheet: "Nope", range: "A1" }, /no sheet named "Nope". Sheets: Sheet1/],
      ["write_cell", { cell: "A0", value: 1 }, /outside the sheet/],
      ["write_cell", { cell: "A1" }, /value/],
      ["write_range", { start: "A1", values: [] }, /values/],
      ["delete_sheet", { sheet: "Sheet1" }, /only sheet/],
      ["add_sheet", { name: "a/b" }, /may not contain/],
      // a NUL would not survive the xlsx round trip: "a\u0000b" came back as "ab" and the next call could not open
      // the workbook
      ["add_sheet", { name: "a\u0000b" }, /control characters/],
      ["rename_sheet", { sheet: "Sheet1", new_name: "x\ud800" }, /lone surrogates/],
      ["insert_columns", { column: "1A" }, /not a column/],
      ["no_such_tool", {}, /unknown tool/],
    ];
    for (const [name, args, re] of cases) {
      const r = await call(name, args);
      expect(r.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
      expect(text(r)).toMatch(re);
    }
    // the workbook still opens after every refusal
    expect((await call("list_sheets", {})).isError).toBe(false);
    await env.release("t-bad");
  });

  it("bounds read output: a huge range is refused, a huge empty range is clipped to the data", async () => {
    const call = await fresh("t-huge");
    await call("write_cell", { cell: "C5000", value: 1 });
    const big = await call("read_range", { range: "A1:C5000" });
    expect(big.isError).toBe(true);
    expect(text(big)).toMatch(/holds 15000 cells .* at most 2000/);
    await call("delete_rows", { row: 5000 });
    const clipped = JSON.parse(text(await call("read_range", { range: "A1:XFD1048576" })));
    expect(clipped.range).toBe("A1:B7");
    await env.release("t-huge");
  });

  it("writing a circular formula warns at once", async () => {
    const call = await fresh("t-circ");
    const r = await call("write_range", { start: "D1", values: [["=E1+1", "=D1+1"]] });
    expect(r.isError).toBe(false);
    expect(text(r)).toMatch(/warning: circular reference: Sheet1!D1 → Sheet1!E1 → Sheet1!D1/);
    await env.release("t-circ");
  });
});

describe("isolation", () => {
  it("each rollout has a private copy; forks do not share writes; no answer file is ever in a workspace", async () => {
    const a = await fresh("iso-a");
    await env.capabilities!.fork!.fork("iso-a", ["iso-b", "iso-c"]);
    await a("write_cell", { cell: "A1", value: "changed by a" });
    await env.runTool("iso-b", { name: "write_cell", arguments: { cell: "A1", value: "changed by b" } });
    const read = async (id: string) =>
      JSON.parse(text(await env.runTool(id, { name: "read_range", arguments: { range: "A1" } }))).values[0][0];
    expect(await read("iso-a")).toBe("changed by a");
    expect(await read("iso-b")).toBe("changed by b");
    expect(await read("iso-c")).toBe("Item");
    // the answer files are nowhere in the workspace, and run_code cannot read them
    const r = await env.runTool("iso-c", {
      name: "run_code",
      arguments: {
        code: `const fs = workbook.constructor.constructor("return process")().mainModule;\nconsole.log(typeof fs);`,
      },
    });
    expect(r.isError).toBe(false);
    const escaped = await env.runTool("iso-c", {
      name: "run_code",
      arguments: {
        code: `const p = workbook.constructor.constructor("return process")();\nconst fs = p.getBuiltinModule ? p.getBuiltinModule("fs") : null;\nconsole.log(fs ? fs.readFileSync(${JSON.stringify(task.groundTruth.answers[0])}, "latin1").slice(0, 2) : "no fs");`,
      },
    });
    expect(text(escaped)).not.toMatch(/^PK/);
    // a child that ran code now has its own file; its siblings and the parent are unaffected
    await env.runTool("iso-c", {
      name: "run_code",
      arguments: { code: "workbook.worksheets[0].getCell('A2').value = 'by c code';" },
    });
    expect(
      JSON.parse(text(await env.runTool("iso-c", { name: "read_range", arguments: { range: "A2" } }))).values[0][0],
    ).toBe("by c code");
    for (const id of ["iso-a", "iso-b"]) {
      expect(
        JSON.parse(text(await env.runTool(id, { name: "read_range", arguments: { range: "A2" } }))).values[0][0],
      ).not.toBe("by c code");
    }
    // forking again after the parent changed gives the children the parent's current workbook
    await env.capabilities!.fork!.fork("iso-a", ["iso-e"]);
    expect(await read("iso-e")).toBe("changed by a");
    await env.release("iso-e");
    for (const id of ["iso-a", "iso-b", "iso-c"]) await env.release(id);
  });

  it("the workspace holds only the workbook copy", async () => {
    const { Workspace } = await import("@benchmax/core");
    const ws = await Workspace.create({ prefix: "probe" });
    const root = ws.dir.replace(/\/[^/]+$/, "");
    await ws.remove();
    await env.init("iso-d", task);
    const dirs = readdirSync(root).filter((d) => d.startsWith("excel-iso-d"));
    expect(dirs).toHaveLength(1);
    expect(readdirSync(`${root}/${dirs[0]}`)).toEqual(["workbook.xlsx"]);
    await env.release("iso-d");
    expect(readdirSync(root).filter((d) => d.startsWith("excel-iso-d"))).toEqual([]);
  });
});

describe("tool selection (the tools option)", () => {
  const names = (o: Record<string, unknown>) => {
    const e = createExcelEnv(o);
    const n = e.listTools().map((t) => t.name);
    void e.close();
    return n;
  };
  it("defaults to the structured tools plus run_code; js or structured alone; bad names are usage errors", () => {
    const all = names({});
    expect(all).toContain("write_range");
    expect(all).toContain("run_code");
    expect(all).not.toContain("run_python");
    expect(names({ tools: "js" }).sort()).toEqual(["list_sheets", "read_range", "run_code"]);
    expect(names({ tools: "structured" })).not.toContain("run_code");
    expect(() => createExcelEnv({ tools: "sql" })).toThrow(/unknown tool family "sql"/);
  });
  it("the system prompt names the tools the selection offers", () => {
    expect(systemPromptFor(parseToolFamilies(undefined))).toBe(SYSTEM_PROMPT);
    const py = systemPromptFor(parseToolFamilies("python"));
    expect(py).toMatch(/run_python \(openpyxl; save the workbook to workbook_path\)/);
    expect(py).not.toMatch(/run_code|write values or formulas/);
    expect(parseToolFamilies("all")).toEqual(["structured", "js", "python"]);
    expect(parseToolFamilies("javascript, structured")).toEqual(["structured", "js"]);
  });
});
