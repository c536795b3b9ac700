/**
 * SpreadsheetBench loading: `dataset.json` rows with test cases `{n}_{id}_input.xlsx` / `{n}_{id}_answer.xlsx`
 * (n = 1..3) under `spreadsheet_path`, and the verified-400 layout (`1_{id}_init.xlsx` / `1_{id}_golden.xlsx`,
 * `prompt.txt`). Rows are accepted unchanged.
 *
 * A row whose `answer_position` the official evaluation cannot parse (two "!" in a part, a whole-column range like
 * `A:G`, a full-width colon, a space after a comma, …) is kept: the official loop catches the exception and counts
 * each of its test cases as False, and so does the compare here. The row carries a warning (`meta.warnings`) that
 * `validate` prints, and the rest of the dataset runs.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { DatasetError, isPlainRow, type LoadTasksOptions, parseWithSchema, readRows, type Task } from "@benchmax/core";
import { z } from "zod";
import { answerPositionProblem } from "./compare.js";

export interface ExcelGold {
  answerPosition: string;
  instructionType: string;
  /** Answer (golden) workbook of each test case, in case order. Never reaches a tool. */
  answers: string[];
}

export interface ExcelInit {
  /** Input workbook of each test case, in case order (the rollout works on the first). */
  inputs: string[];
  /** The test-case numbers (1-based, as in the file names). */
  caseNumbers: number[];
}

export interface ExcelTask extends Task<ExcelGold> {
  init: ExcelInit;
}

export const INSTRUCTION_TYPES = ["Cell-Level Manipulation", "Sheet-Level Manipulation"] as const;

/** One `dataset.json` row (extra fields are kept in `meta`). */
export const spreadsheetBenchRow = z
  .object({
    id: z.union([z.string().min(1), z.number()]),
    instruction: z.string().optional(),
    spreadsheet_path: z.string().min(1),
    instruction_type: z.string().min(1),
    answer_position: z.string().min(1),
    answer_sheet: z.string().nullish(),
    data_position: z.string().nullish(),
  })
  .passthrough();

export type SpreadsheetBenchRow = z.infer<typeof spreadsheetBenchRow>;

/** The warning for an answer_position every test case of which fails in the official evaluation, if any. */
export function answerPositionWarning(answerPosition: string): string | undefined {
  const problem = answerPositionProblem(answerPosition);
  if (!problem) return undefined;
  return `answer_position ${JSON.stringify(answerPosition)} cannot be parsed by the official evaluation (${problem}): every test case of this task fails, as in the official loop`;
}

/** The dataset warnings a task carries (e.g. an answer_position that always fails). */
export function taskWarnings(task: { meta?: Record<string, unknown> }): string[] {
  const w = task.meta?.warnings;
  return Array.isArray(w) ? w.filter((x): x is string => typeof x === "string") : [];
}

/** The folder of the file a `where` (`path[3]` or `path:4`) points into. */
function baseDirOf(where: string | undefined): string {
  if (!where) return process.cwd();
  const file = where.replace(/(\[\d+\]|:\d+)$/, "");
  try {
    if (existsSync(file) && statSync(file).isFile()) return dirname(resolve(file));
  } catch {
    /* fall through */
  }
  return process.cwd();
}

interface CaseFiles {
  n: number;
  input: string;
  answer: string;
}

/** Find the test cases of a task folder; DatasetError when none, or when an input lacks its answer. */
export function findCases(dir: string, id: string, where?: string): CaseFiles[] {
  if (!existsSync(dir)) throw new DatasetError(`spreadsheet folder not found: ${dir}`, where, "spreadsheet_path");
  const out: CaseFiles[] = [];
  for (let n = 1; n <= 3; n++) {
    const pairs: Array<[string, string]> = [
      [join(dir, `${n}_${id}_input.xlsx`), join(dir, `${n}_${id}_answer.xlsx`)],
      [join(dir, `${n}_${id}_init.xlsx`), join(dir, `${n}_${id}_golden.xlsx`)],
    ];
    for (const [input, answer] of pairs) {
      if (!existsSync(input)) continue;
      if (!existsSync(answer))
        throw new DatasetError(`test case ${n} has ${input} but no ${answer}`, where, "spreadsheet_path");
      out.push({ n, input, answer });
      break;
    }
  }
  if (out.length === 0) {
    throw new DatasetError(
      `no test cases in ${dir}: expected 1_${id}_input.xlsx + 1_${id}_answer.xlsx (or 1_${id}_init.xlsx + 1_${id}_golden.xlsx)`,
      where,
      "spreadsheet_path",
    );
  }
  return out;
}

export function buildPrompt(
  instruction: string,
  row: { instruction_type: string; answer_position: string; data_position?: string | null },
): string {
  const lines = [
    instruction.trim(),
    "",
    `Instruction type: ${row.instruction_type}`,
    `Answer position: ${row.answer_position}`,
  ];
  if (row.data_position) lines.push(`Data position: ${row.data_position}`);
  lines.push(
    "",
    "The workbook is already open in your tools. Make the change in the workbook itself (write values or formulas); reply without a tool call when you are done.",
  );
  return lines.join("\n");
}

const plainExcelRow = z.object({
  id: z.union([z.string(), z.number()]).optional(),
  prompt: z.string().min(1),
  ground_truth: z.object({
    answer_position: z.string().min(1),
    instruction_type: z.string().default("Cell-Level Manipulation"),
    cases: z.array(z.object({ input: z.string().min(1), answer: z.string().min(1) })).min(1),
  }),
});

/** Parse one row: a SpreadsheetBench `dataset.json` row, or a plain `{prompt, ground_truth: {answer_position, cases}}`. */
export function parseExcelRow(row: unknown, where?: string, baseDir = baseDirOf(where)): ExcelTask {
  if (isPlainRow(row)) {
    const r = parseWithSchema(plainExcelRow, row, where);
    const warning = answerPositionWarning(r.ground_truth.answer_position);
    const abs = (p: string) => (isAbsolute(p) ? p : resolve(baseDir, p));
    for (const [i, c] of r.ground_truth.cases.entries()) {
      for (const f of [c.input, c.answer]) {
        if (!existsSync(abs(f))) throw new DatasetError(`file not found: ${abs(f)}`, where, `ground_truth.cases.${i}`);
      }
    }
    return {
      id: r.id !== undefined ? String(r.id) : (where ?? "row"),
      prompt: r.prompt,
      groundTruth: {
        answerPosition: r.ground_truth.answer_position,
        instructionType: r.ground_truth.instruction_type,
        answers: r.ground_truth.cases.map((c) => abs(c.answer)),
      },
      init: {
        inputs: r.ground_truth.cases.map((c) => abs(c.input)),
        caseNumbers: r.ground_truth.cases.map((_, i) => i + 1),
      },
      meta: { answer_position: r.ground_truth.answer_position, ...(warning ? { warnings: [warning] } : {}) },
    };
  }
  const r = parseWithSchema(spreadsheetBenchRow, row, where);
  const id = String(r.id);
  const warning = answerPositionWarning(r.answer_position);
  const dir = isAbsolute(r.spreadsheet_path) ? r.spreadsheet_path : resolve(baseDir, r.spreadsheet_path);
  const cases = findCases(dir, id, where);
  let instruction = r.instruction;
  if (instruction === undefined || instruction.trim() === "") {
    const promptFile = join(dir, "prompt.txt");
    if (!existsSync(promptFile)) throw new DatasetError('no "instruction" and no prompt.txt', where, "instruction");
    instruction = readFileSync(promptFile, "utf8");
  }
  const { id: _id, instruction: _ins, ...rest } = r;
  return {
    id,
    prompt: buildPrompt(instruction, r),
    groundTruth: {
      answerPosition: r.answer_position,
      instructionType: r.instruction_type,
      answers: cases.map((c) => c.answer),
    },
    init: { inputs: cases.map((c) => c.input), caseNumbers: cases.map((c) => c.n) },
    meta: { ...rest, instruction, test_cases: cases.length, ...(warning ? { warnings: [warning] } : {}) },
  };
}

/** The fixtures shipped with the package. */
export function fixturesDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  // src/ (tests, source) or dist/ (built): fixtures/ is beside both
  return resolve(here, "..", "fixtures");
}

/** Load tasks from a SpreadsheetBench folder (with dataset.json) or a dataset file; no source = the fixtures. */
export async function loadExcelTasks(
  source?: string,
  options: LoadTasksOptions & { quiet?: boolean } = {},
): Promise<ExcelTask[]> {
  if (source === undefined) {
    // the bundled fixtures: the SpreadsheetBench layout, then the verified-400 layout
    const a = await loadExcelTasks(join(fixturesDir(), "spreadsheetbench"));
    const b = await loadExcelTasks(join(fixturesDir(), "verified"));
    const all = [...a, ...b];
    return options.limit !== undefined ? all.slice(0, options.limit) : all;
  }
  let file: string;
  if (existsSync(source) && statSync(source).isDirectory()) {
    file = join(source, "dataset.json");
    if (!existsSync(file)) throw new DatasetError(`no dataset.json in ${source}`, source);
  } else {
    file = source;
  }
  const rows = await readRows(file);
  const limited = options.limit !== undefined ? rows.slice(0, options.limit) : rows;
  const base = dirname(resolve(file));
  const seen = new Map<string, string>();
  const tasks = limited.map((r) => {
    const t = parseExcelRow(r.row, r.where, base);
    if (seen.has(t.id))
      throw new DatasetError(`duplicate task id "${t.id}" (first at ${seen.get(t.id)})`, r.where, "id");
    seen.set(t.id, r.where);
    return t;
  });
  const warned = tasks.filter((t) => taskWarnings(t).length > 0);
  if (warned.length > 0 && options.quiet !== true) {
    process.stderr.write(
      `[env-excel] ${warned.length} of ${tasks.length} rows of ${file} have an answer_position the official evaluation cannot parse (ids ${warned
        .slice(0, 5)
        .map((t) => t.id)
        .join(
          ", ",
        )}${warned.length > 5 ? ", …" : ""}); their test cases fail, as in the official loop. \`benchmax validate excel ${source}\` lists them.\n`,
    );
  }
  return tasks;
}
