/**
 * Red-team cases from the model's side (issue 23): what a policy can send through the excel tools, each with the
 * outcome its cause decides — the model's own doing is a readable tool error and a score of 0, never env_error —
 * and a victim rollout on the same env that scores correctly throughout. Timing is measured in
 * bench/excel-redteam.mjs; these tests assert only outcomes.
 */
import { type AssistantMessage, type Policy, runRollout, type ToolResult } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExcelTask } from "./dataset.js";
import { createExcelEnv } from "./index.js";
import { findSoffice } from "./libreoffice.js";
import { rawSheetXlsx } from "./raw-xlsx.js";
import { scoreOneCase } from "./reward.js";
import { pythonAvailable } from "./run-python.js";
import { DEFAULT_INSPECT_CAPS, inspectXlsx } from "./xlsx-inspect.js";

const py = pythonAvailable();
if (!py.ok) console.warn(`[env-excel] red team: run_python cases skipped: ${py.reason}`);
const env = createExcelEnv({ tools: py.ok ? "all" : "structured,js", runPythonTimeoutMs: 60_000 });
let task: ExcelTask;
const text = (r: ToolResult) => (typeof r.content === "string" ? r.content : JSON.stringify(r.content));
const AMOUNTS = [446.55, 51.87, 34.26, 498.65, 454.45, 471.3];
const TOTAL = AMOUNTS.reduce((a, b) => a + b, 0);

beforeAll(async () => {
  [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
});
afterAll(() => env.close());

async function fresh(id: string) {
  await env.init(id, task);
  return (name: string, args: Record<string, unknown> = {}) => env.runTool(id, { name, arguments: args });
}

/** A policy that sends the given replies in order, then a plain answer. */
function scripted(replies: AssistantMessage[]): Policy {
  let i = 0;
  return {
    name: "scripted",
    act: async () => ({ message: replies[i++] ?? { role: "assistant", content: "done" } }),
  };
}

const calls = (...cs: Array<[string, Record<string, unknown>]>): AssistantMessage => ({
  role: "assistant",
  content: null,
  tool_calls: cs.map(([name, args], i) => ({
    id: `c${i}`,
    type: "function" as const,
    function: { name, arguments: JSON.stringify(args) },
  })),
});

/** The victim: the reference policy on the same task and env, which must score 1 every time. */
async function victim(): Promise<void> {
  const r = await runRollout(env, task, env.capabilities!.reference!.referencePolicy(), { maxTurns: 6 });
  expect(r.error).toBeUndefined();
  expect(r.rewards).toEqual({ pass: 1, soft: 1 });
}

describe("red team: ranges are read only where the sheet has data", () => {
  it("=SUMPRODUCT(A2:XFC1048575) written to XFD1 evaluates (no 1e10 cells) while a victim scores 1", async () => {
    const call = await fresh("rt-range");
    const [w] = await Promise.all([
      call("write_cell", { cell: "XFD1", value: "=SUMPRODUCT(A2:XFC1048575)" }),
      victim(),
    ]);
    expect(w.isError).toBe(false);
    await call("write_range", {
      start: "C1",
      values: [["=ROWS(A2:XFC1048575)", "=COLUMNS(A2:XFC1048575)", "=COUNTBLANK(C2:D4)"]],
    });
    const r = JSON.parse(text(await call("read_range", { range: "XFD1" })));
    expect(r.values[0][0]).toBeCloseTo(TOTAL, 6);
    const s = JSON.parse(text(await call("read_range", { range: "C1:E1" })));
    // the logical shape of a range is Excel's, whatever was read
    expect(s.values[0]).toEqual([1048574, 16383, 6]);
    await env.release("rt-range");
  });
});

describe("red team: the model's own formulas decide its outcome", () => {
  it("a function Excel does not have in the answer cell is #NAME? and scores 0 (completed, not env_error)", async () => {
    const r = await runRollout(env, task, scripted([calls(["write_cell", { cell: "B8", value: "=FOOBAR(B2:B7)" }])]));
    expect(r.outcome).toBe("completed");
    expect(r.rewards).toEqual({ pass: 0, soft: 0 });
    const cases = r.metadata?.cases as Array<{ message: string }>;
    expect(cases[0]!.message).toMatch(/#NAME\?/);
  });

  it("a function Excel has but the engine lacks in the answer cell scores 0, naming it without LibreOffice", async () => {
    const r = await runRollout(
      env,
      task,
      scripted([calls(["write_cell", { cell: "B8", value: '=SUM(B2:B7)+0*LEN(CELL("filename"))' }])]),
    );
    expect(r.outcome).toBe("completed");
    expect(r.error).toBeUndefined();
    const cases = r.metadata?.cases as Array<{ pass: boolean; message: string }>;
    if (findSoffice()) {
      console.warn("[env-excel] red team: soffice installed, so CELL() is recalculated by LibreOffice instead");
    } else {
      expect(r.rewards).toEqual({ pass: 0, soft: 0 });
      expect(cases[0]!.message).toMatch(/scored 0: .*function CELL/);
    }
  }, 180_000);

  it("a million-formula chain is a clear per-case error past the caps and scores 0, not env_error", async () => {
    const cells: string[] = ['<c r="A1"><v>1</v></c>'];
    for (let r = 2; r <= 1_000_000; r++) cells.push(`<c r="A${r}"><f>A${r - 1}+1</f></c>`);
    const out = rawSheetXlsx(cells);
    const gold = rawSheetXlsx(['<c r="A1000000"><v>1000000</v></c>']);
    const { mkdtempSync, writeFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { tmpdir } = await import("node:os");
    const dir = mkdtempSync(join(tmpdir(), "excel-chain-"));
    writeFileSync(join(dir, "gold.xlsx"), gold);
    writeFileSync(join(dir, "out.xlsx"), out);
    const r = await scoreOneCase(
      { id: "chain", task: { answer_position: "A1000000" }, goldFile: "gold.xlsx", outputFile: "out.xlsx" },
      { baseDir: dir, options: {} },
      { mode: "embedded" },
    );
    expect(r.reward).toBe(0);
    expect(String(r.metadata?.message)).toMatch(
      /scored 0: recalculation exceeded its budget: sheet "Sheet1" holds 999999 formulas, more than 250000/,
    );
  }, 300_000);
});

describe("red team: a 10,000-call reply", () => {
  it("runs 32 calls, answers the rest with a readable error, and the rollout still scores", async () => {
    const many: Array<[string, Record<string, unknown>]> = Array.from({ length: 10_000 }, (_, i) => [
      "write_cell",
      { cell: `D${(i % 50) + 1}`, value: i },
    ]);
    const r = await runRollout(
      env,
      task,
      scripted([calls(...many), calls(["write_cell", { cell: "B8", value: "=SUM(B2:B7)" }])]),
    );
    expect(r.outcome).toBe("completed");
    expect(r.toolCalls).toBe(33);
    expect(r.toolErrors).toBe(10_000 - 32);
    const errs = r.messages.filter((m) => m.role === "tool" && String(m.content).includes("not run: this reply made"));
    expect(errs).toHaveLength(10_000 - 32);
    expect(r.rewards).toEqual({ pass: 1, soft: 1 });
  }, 120_000);
});

describe("red team: corrupt and hostile workbooks written by the model", () => {
  it("the inspection refuses non-zip, DTD, zip bombs and huge shared strings with a reason", () => {
    expect(inspectXlsx(Buffer.from("junk"))).toMatch(/not an xlsx file/);
    const ok = rawSheetXlsx(['<c r="A1"><v>1</v></c>']);
    expect(inspectXlsx(ok)).toBeUndefined();
    const dtd = rawSheetXlsx(['<c r="A1"><v>1</v></c>'], { after: '<!DOCTYPE x [<!ENTITY a "b">]>' });
    expect(inspectXlsx(dtd)).toMatch(/has a DTD/);
    expect(inspectXlsx(ok, { ...DEFAULT_INSPECT_CAPS, maxCells: 0 })).toMatch(/more than 0 cells/);
  });

  const pyIt = py.ok ? it : it.skip;
  const writers: Array<[string, string, RegExp]> = [
    ["non-zip", "open(workbook_path, 'wb').write(b'this is not a workbook')", /not an xlsx file/],
    [
      "DTD / XXE",
      [
        "import zipfile, shutil",
        "src = zipfile.ZipFile(workbook_path); parts = {n: src.read(n) for n in src.namelist()}; src.close()",
        "x = parts['xl/workbook.xml'].decode()",
        "x = x.replace('?>', '?><!DOCTYPE w [<!ENTITY xxe SYSTEM \"file:///etc/passwd\">]>', 1)",
        "parts['xl/workbook.xml'] = x.encode()",
        "z = zipfile.ZipFile(workbook_path, 'w', zipfile.ZIP_DEFLATED)",
        "[z.writestr(n, d) for n, d in parts.items()]; z.close()",
      ].join("\n"),
      /has a DTD/,
    ],
    [
      "zip bomb",
      [
        "import zipfile",
        "src = zipfile.ZipFile(workbook_path); parts = {n: src.read(n) for n in src.namelist()}; src.close()",
        "z = zipfile.ZipFile(workbook_path, 'w', zipfile.ZIP_DEFLATED, compresslevel=1)",
        "[z.writestr(n, d) for n, d in parts.items()]",
        "chunk = b' ' * (1024 * 1024)",
        "for i in range(3):",
        "    with z.open(f'xl/bomb{i}.xml', 'w') as f:",
        "        for _ in range(100): f.write(chunk)",
        "z.close()",
      ].join("\n"),
      /inflate to more than|too large/,
    ],
    [
      "huge shared strings",
      [
        "import zipfile",
        "src = zipfile.ZipFile(workbook_path); parts = {n: src.read(n) for n in src.namelist()}; src.close()",
        "n = 1_100_000",
        "parts['xl/sharedStrings.xml'] = (f'<sst xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" count=\"{n}\" uniqueCount=\"{n}\">' + '<si><t>x</t></si>' * n + '</sst>').encode()",
        "z = zipfile.ZipFile(workbook_path, 'w', zipfile.ZIP_DEFLATED)",
        "[z.writestr(n2, d) for n2, d in parts.items()]; z.close()",
      ].join("\n"),
      /shared strings, more than/,
    ],
  ];
  for (const [what, code, why] of writers) {
    pyIt(
      `${what}: the next read is a tool error the model can read, and the rollout scores 0 (completed)`,
      async () => {
        let seen: ToolResult | undefined;
        let wrote = "";
        const policy: Policy = {
          name: "hostile",
          act: async (input) => {
            const tools = input.messages.filter((m) => m.role === "tool");
            if (tools.length === 0) return { message: calls(["run_python", { code }]) };
            if (tools.length === 1) {
              wrote = String(tools[0]!.content);
              return { message: calls(["read_range", { range: "A1:B8" }]) };
            }
            seen = { content: String(tools[1]!.content), isError: String(tools[1]!.content).startsWith("Error") };
            return { message: { role: "assistant", content: "done" } };
          },
        };
        const [r] = await Promise.all([runRollout(env, task, policy, { maxTurns: 4 }), victim()]);
        expect(r.error).toBeUndefined();
        expect(r.outcome).toBe("completed");
        expect(wrote, "the model's code itself must have run").not.toMatch(/^Error/);
        expect(seen?.isError).toBe(true);
        expect(String(seen?.content)).toMatch(/the workbook file your code wrote cannot be opened/);
        expect(String(seen?.content)).toMatch(why);
        expect(r.rewards).toEqual({ pass: 0, soft: 0 });
        const cases = r.metadata?.cases as Array<{ message: string }>;
        expect(cases[0]!.message).toMatch(why);
      },
      120_000,
    );
  }
});
