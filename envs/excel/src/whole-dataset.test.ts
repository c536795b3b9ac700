import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runRollout } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { fixturesDir, taskWarnings } from "./dataset.js";
import { createExcelEnv } from "./index.js";
import { rawSheetXlsx } from "./raw-xlsx.js";
import { excelReferencePolicy, fixtureSolutions } from "./reference-policy.js";

/** Real answer_position strings from the SpreadsheetBench release that the official evaluation.py cannot parse. */
const UNPARSEABLE: Record<string, string> = {
  bad_quote: "Sheet3'!A:G,'Sheet4'!A:G",
  bad_two_bangs: "'Received'!'Received!A1:G16'",
  bad_fullwidth: "G12：J15",
  bad_space: "G4:G6, G11:G13, G20:G22",
  bad_space2: "B12:B110, C12:C23, D12:H18",
};

/** A dataset folder: task 101 as shipped, plus copies of its files under the ids above. */
function dataset(): string {
  const dir = mkdtempSync(join(tmpdir(), "excel-whole-"));
  const from = join(fixturesDir(), "spreadsheetbench", "spreadsheet", "101");
  const rows: unknown[] = [];
  for (const id of ["101", ...Object.keys(UNPARSEABLE)]) {
    mkdirSync(join(dir, "spreadsheet", id), { recursive: true });
    for (const n of [1, 2, 3]) {
      for (const kind of ["input", "answer"]) {
        copyFileSync(join(from, `${n}_101_${kind}.xlsx`), join(dir, "spreadsheet", id, `${n}_${id}_${kind}.xlsx`));
      }
    }
    rows.push({
      id,
      instruction: "Compute the total of the Amount column (B2:B7) in cell B8.",
      spreadsheet_path: `spreadsheet/${id}`,
      instruction_type: "Cell-Level Manipulation",
      answer_position: UNPARSEABLE[id] ?? "B8",
    });
  }
  writeFileSync(join(dir, "dataset.json"), JSON.stringify(rows));
  return dir;
}

describe("whole datasets: rows with an answer_position the official code cannot parse", () => {
  const dir = dataset();
  const env = createExcelEnv({ dataset: dir });
  afterAll(() => env.close());

  it("load with a warning each; the rest of the dataset loads unchanged", async () => {
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    expect(tasks.map((t) => t.id)).toEqual(["101", ...Object.keys(UNPARSEABLE)]);
    expect(taskWarnings(tasks[0]!)).toEqual([]);
    for (const t of tasks.slice(1)) expect(taskWarnings(t)[0]).toMatch(/cannot be parsed by the official evaluation/);
  });

  it("each of their test cases fails (False, as the official loop's except), while the good row scores 1", async () => {
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    const sol = fixtureSolutions()["101"]!;
    const policy = excelReferencePolicy(Object.fromEntries(tasks.map((t) => [t.id, sol])));
    for (const task of tasks) {
      const r = await runRollout(env, task, policy, { maxTurns: 4 });
      expect(r.error).toBeUndefined();
      const cases = r.metadata?.cases as Array<{ pass: boolean; message: string }>;
      expect(cases).toHaveLength(3);
      if (task.id === "101") expect(r.rewards).toEqual({ pass: 1, soft: 1 });
      else {
        expect(r.rewards, task.id).toEqual({ pass: 0, soft: 0 });
        expect(cases.every((c) => !c.pass && c.message.length > 0)).toBe(true);
      }
    }
  });
});

/**
 * SpreadsheetBench task 57105's shape: the input's answer cells call EOM, which Excel does not have, so they hold
 * #NAME?; the gold holds the month ends. Input vs gold is the official verdict 0 (never env_error); the fix scores 1.
 */
describe("an input holding EOM(...) (#NAME?, task 57105's shape)", () => {
  const dir = mkdtempSync(join(tmpdir(), "excel-eom-"));
  mkdirSync(join(dir, "spreadsheet", "57105"), { recursive: true });
  const dates = [45000, 45031, 45061];
  const ends = [45016, 45046, 45077];
  const row = (r: number, b: string) => `<c r="A${r}" s="1"><v>${dates[r - 2]}</v></c>${b}`;
  const input = rawSheetXlsx(
    [2, 3, 4].map((r) => row(r, `<c r="B${r}" s="1" t="e"><f>EOM(A${r},0)</f><v>#NAME?</v></c>`)),
    { cellXfs: [0, 14] },
  );
  const answer = rawSheetXlsx(
    [2, 3, 4].map((r) => row(r, `<c r="B${r}" s="1"><f>EOMONTH(A${r},0)</f><v>${ends[r - 2]}</v></c>`)),
    { cellXfs: [0, 14] },
  );
  for (const n of [1, 2, 3]) {
    writeFileSync(join(dir, "spreadsheet", "57105", `${n}_57105_input.xlsx`), input);
    writeFileSync(join(dir, "spreadsheet", "57105", `${n}_57105_answer.xlsx`), answer);
  }
  writeFileSync(
    join(dir, "dataset.json"),
    JSON.stringify([
      {
        id: "57105",
        instruction: "Column B should show the last day of each date's month.",
        spreadsheet_path: "spreadsheet/57105",
        instruction_type: "Cell-Level Manipulation",
        answer_position: "B2:B4",
      },
    ]),
  );
  const env = createExcelEnv({ dataset: dir });
  afterAll(() => env.close());
  const reply = (calls: Array<[string, Record<string, unknown>]>) => ({
    role: "assistant" as const,
    content: null,
    tool_calls: calls.map(([name, args], i) => ({
      id: `c${i}`,
      type: "function" as const,
      function: { name, arguments: JSON.stringify(args) },
    })),
  });
  const policy = (replies: ReturnType<typeof reply>[]) => {
    let i = 0;
    return {
      name: "p",
      act: async () => ({ message: replies[i++] ?? { role: "assistant" as const, content: "done" } }),
    };
  };

  it("the input as it is scores 0 (completed), and so does an unrelated edit that recalculates it", async () => {
    const [task] = await env.capabilities!.tasks!.loadTasks!();
    const idle = await runRollout(env, task!, policy([]));
    expect(idle).toMatchObject({ outcome: "completed", rewards: { pass: 0, soft: 0 } });
    const touched = await runRollout(env, task!, policy([reply([["write_cell", { cell: "D1", value: 1 }]])]));
    expect(touched.outcome).toBe("completed");
    expect(touched.rewards).toEqual({ pass: 0, soft: 0 });
    const cases = touched.metadata?.cases as Array<{ message: string }>;
    expect(cases[0]!.message).toMatch(/#NAME\?/);
  });

  it("EOMONTH in place of EOM scores 1 on every case", async () => {
    const [task] = await env.capabilities!.tasks!.loadTasks!();
    const fix = reply([
      ["write_range", { start: "B2", values: [["=EOMONTH(A2,0)"], ["=EOMONTH(A3,0)"], ["=EOMONTH(A4,0)"]] }],
    ]);
    const r = await runRollout(env, task!, policy([fix]));
    expect(r.error).toBeUndefined();
    expect(r.rewards).toEqual({ pass: 1, soft: 1 });
  });
});
