import { copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatasetError } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { fixturesDir, loadExcelTasks, parseExcelRow, taskWarnings } from "./dataset.js";

const fx = fixturesDir();
const src = (id: string, n: number, kind: string) =>
  join(fx, "spreadsheetbench", "spreadsheet", id, `${n}_${id}_${kind}.xlsx`);

function tempDataset(rows: unknown[], files: Array<[string, string]> = []): string {
  const dir = mkdtempSync(join(tmpdir(), "excel-ds-"));
  for (const [from, to] of files) {
    mkdirSync(join(dir, to, ".."), { recursive: true });
    copyFileSync(from, join(dir, to));
  }
  writeFileSync(join(dir, "dataset.json"), JSON.stringify(rows));
  return dir;
}

describe("SpreadsheetBench loading", () => {
  it("loads the original layout with up to 3 test cases, and the verified layout with prompt.txt", async () => {
    const tasks = await loadExcelTasks();
    const t101 = tasks.find((t) => t.id === "101")!;
    expect(t101.init.inputs).toHaveLength(3);
    expect(t101.groundTruth.answers[2]).toMatch(/3_101_answer\.xlsx$/);
    expect(t101.prompt).toContain("Answer position: B8");
    expect(t101.prompt).not.toContain("answer.xlsx");
    const v = tasks.find((t) => t.id === "201")!;
    expect(v.init.inputs[0]).toMatch(/1_201_init\.xlsx$/);
    expect(v.groundTruth.answers[0]).toMatch(/1_201_golden\.xlsx$/);
    expect(v.prompt).toContain("Compute the total of C2:C5"); // from prompt.txt
    const types = new Set(tasks.map((t) => t.groundTruth.instructionType));
    expect(types).toEqual(new Set(["Cell-Level Manipulation", "Sheet-Level Manipulation"]));
  });

  it("accepts a dataset.json path or folder and numeric or string ids; limit", async () => {
    const dir = join(fx, "spreadsheetbench");
    expect((await loadExcelTasks(dir, { limit: 2 })).map((t) => t.id)).toEqual(["101", "102"]);
    expect((await loadExcelTasks(join(dir, "dataset.json"))).some((t) => t.id === "13284_1")).toBe(true);
  });

  const row = {
    id: 101,
    instruction: "x",
    spreadsheet_path: "spreadsheet/101",
    instruction_type: "Cell-Level Manipulation",
    answer_position: "B8",
  };

  it("missing test cases, missing answers and missing folders are DatasetErrors naming the file", async () => {
    const noAnswer = tempDataset([row], [[src("101", 1, "input"), "spreadsheet/101/1_101_input.xlsx"]]);
    await expect(loadExcelTasks(noAnswer)).rejects.toThrow(
      /test case 1 has .*1_101_input.xlsx but no .*1_101_answer.xlsx/,
    );
    const empty = tempDataset([row], [[src("101", 1, "input"), "spreadsheet/101/other.xlsx"]]);
    await expect(loadExcelTasks(empty)).rejects.toThrow(/no test cases in .*expected 1_101_input.xlsx/);
    const none = tempDataset([row]);
    await expect(loadExcelTasks(none)).rejects.toThrow(DatasetError);
    await expect(loadExcelTasks(none)).rejects.toThrow(/spreadsheet_path: spreadsheet folder not found/);
  });

  it("bad rows name the field", () => {
    const where = "dataset.json[0]";
    expect(() => parseExcelRow({ ...row, answer_position: 5 }, where, fx)).toThrow(
      /dataset.json\[0\]: answer_position/,
    );
    // a string the official code cannot parse is kept (its cases fail), with a warning
    const sb = join(fx, "spreadsheetbench");
    expect(taskWarnings(parseExcelRow({ ...row, answer_position: "A:B" }, where, sb))[0]).toMatch(
      /answer_position "A:B" cannot be parsed by the official evaluation.*every test case of this task fails/,
    );
    expect(taskWarnings(parseExcelRow({ ...row, answer_position: "a!b!A1" }, where, sb))).toHaveLength(1);
    expect(taskWarnings(parseExcelRow(row, where, sb))).toEqual([]);
    const { spreadsheet_path: _s, ...noPath } = row;
    expect(() => parseExcelRow(noPath, where, fx)).toThrow(/spreadsheet_path/);
    expect(() => parseExcelRow("not an object", where, fx)).toThrow(DatasetError);
  });

  it("duplicate ids are rejected", async () => {
    const dir = tempDataset(
      [row, row],
      [1, 2, 3].flatMap(
        (n): Array<[string, string]> => [
          [src("101", n, "input"), `spreadsheet/101/${n}_101_input.xlsx`],
          [src("101", n, "answer"), `spreadsheet/101/${n}_101_answer.xlsx`],
        ],
      ),
    );
    await expect(loadExcelTasks(dir)).rejects.toThrow(/duplicate task id "101"/);
  });

  it("accepts plain rows {prompt, ground_truth: {answer_position, cases}}", () => {
    const t = parseExcelRow(
      {
        id: "p1",
        prompt: "Sum it",
        ground_truth: {
          answer_position: "B8",
          cases: [{ input: src("101", 1, "input"), answer: src("101", 1, "answer") }],
        },
      },
      "plain.jsonl:1",
    );
    expect(t).toMatchObject({ id: "p1", prompt: "Sum it", groundTruth: { answerPosition: "B8" } });
    expect(() =>
      parseExcelRow(
        {
          prompt: "x",
          ground_truth: { answer_position: "B8", cases: [{ input: "/nope.xlsx", answer: "/nope2.xlsx" }] },
        },
        "p:1",
      ),
    ).toThrow(/file not found/);
  });
});
