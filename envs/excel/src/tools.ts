/** The excel env's tools: structured workbook operations on exceljs, `run_code` (JS) and `run_python` (openpyxl). */

import { readFile, writeFile } from "node:fs/promises";
import { type Tool, ToolError, tool, Workspace } from "@benchmax/core";
import { z } from "zod";
import { inspectAsync } from "./compare-pool.js";
import type { ExcelTask } from "./dataset.js";
import { RecalcBudgetError } from "./formula-engine.js";
import { applyOp, listSheets, MUTATING, type OpName, readRange, schemas } from "./operations.js";
import { recalcWorkbook } from "./recalc.js";
import { type RunCodeOptions, runCode } from "./run-code.js";
import { type RunPythonOptions, runPython } from "./run-python.js";
import { flushInterpreters } from "./sandbox/interpreters.js";
import { loadWorkbook, saveWorkbook, type Workbook, WorkbookError } from "./workbook.js";

export type RecalcMode = "embedded" | "libreoffice" | "none";

/** A successful mutating call, recorded so it can be replayed on the task's other test cases. */
export interface RecordedCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** A read-only workbook file shared by the members of a forked group until each needs its own copy. */
export interface Snapshot {
  ws: Workspace;
  file: string;
  refs: number;
}

/**
 * Per-rollout state: a private workspace holding the rollout's copy of the case-1 input — or, for a forked
 * child, a shared read-only snapshot that is copied into a private workspace on first need (copy-on-write).
 */
export interface ExcelState {
  task: ExcelTask;
  /** The rollout's own workspace (created by init; by a fork child only when it needs a file). */
  ws?: Workspace;
  /** The shared snapshot a fork child reads until it has its own file. */
  base?: Snapshot;
  /** The parent's snapshot for its forks, valid until the parent changes its workbook. */
  forkSnapshot?: Snapshot;
  /** The workbook in memory, loaded on first use. */
  wb?: Workbook;
  /** The in-memory workbook differs from `file`. */
  dirty: boolean;
  /** Formulas may need recalculation before values are shown. */
  stale: boolean;
  /** The file was last written by the model's code (run_code/run_python): inspect it before parsing it. */
  modelFile?: boolean;
  calls: RecordedCall[];
  /** When the rollout's episode deadline passes (`performance.now()`): its live interpreters are killed then. */
  endsAt?: number;
  /** Filled by computeReward: per-case detail for rollout metadata. */
  detail?: Record<string, unknown>;
}

/** Tool families a model can be given: the structured workbook operations, run_code (JS), run_python. */
export type ToolFamily = "structured" | "js" | "python";
export const TOOL_FAMILIES: readonly ToolFamily[] = ["structured", "js", "python"];
/** What a model sees unless the `tools` option says otherwise. */
export const DEFAULT_TOOL_FAMILIES: readonly ToolFamily[] = ["structured", "js"];

export interface ToolConfig {
  recalc: RecalcMode;
  runCode: RunCodeOptions;
  runPython?: RunPythonOptions;
  /** Which tool families the model sees (default: structured + js). Replay handles every family regardless. */
  families?: readonly ToolFamily[];
}

export const WORKBOOK_FILE = "workbook.xlsx";

/** The bytes of the rollout's workbook file (its own copy, or the shared snapshot). */
export async function workbookBytes(state: ExcelState): Promise<Buffer> {
  if (state.ws) return flushInterpreters(state.ws.dir).then(() => state.ws!.readFile(WORKBOOK_FILE));
  if (state.base) return readFile(state.base.file);
  throw new Error("excel: rollout state has neither a workspace nor a snapshot");
}

/**
 * The rollout's workbook in exceljs, loaded on first use. A file the model's code wrote is first inspected on a
 * worker thread (a real xlsx, bounded bytes and cells, no DTD): what fails is a tool error the model reads.
 */
export async function workbookOf(state: ExcelState): Promise<Workbook> {
  if (state.wb) return state.wb;
  const bytes = await workbookBytes(state);
  if (state.modelFile) {
    const why = await modelFileProblem(bytes);
    if (why) throw new ToolError(`the workbook file your code wrote cannot be opened: ${why}`);
  }
  try {
    state.wb = await loadWorkbook(bytes, state.modelFile ? "the workbook file your code wrote" : "the task workbook");
  } catch (e) {
    if (e instanceof WorkbookError && state.modelFile) throw new ToolError(e.message);
    throw e;
  }
  return state.wb;
}

/** Why a model-written workbook file may not be parsed (on a worker thread), or undefined. */
export async function modelFileProblem(bytes: Buffer): Promise<string | undefined> {
  try {
    return await inspectAsync(bytes);
  } catch (e) {
    return (e as Error).message;
  }
}

/** The tools' recalculation bounds (it runs on the env's thread): past them the model gets a warning. */
export const TOOL_RECALC_BUDGET = { budgetMs: 5_000, maxCells: 200_000 };

/** Recalculate for a tool; a workbook past the budget gets a warning instead of values, never a crash. */
export function toolRecalc(wb: Workbook): string[] {
  try {
    return recalcWorkbook(wb, TOOL_RECALC_BUDGET).errors;
  } catch (e) {
    if (e instanceof RecalcBudgetError)
      return [`${e.message}; formula values are not shown (the scorer recalculates the answer cells)`];
    throw e;
  }
}

export function dropSnapshot(snap: Snapshot | undefined): Promise<void> | undefined {
  if (!snap) return undefined;
  snap.refs--;
  return snap.refs <= 0 ? snap.ws.remove() : undefined;
}

/** Give the rollout its own workspace file (copying the shared snapshot in), and return its path. */
export async function ownFile(state: ExcelState): Promise<string> {
  if (!state.ws) {
    const ws = await Workspace.create({ prefix: "excel-fork" });
    if (state.base) await ws.copyIn(state.base.file, WORKBOOK_FILE);
    state.ws = ws;
    await dropSnapshot(state.base);
    state.base = undefined;
  }
  return state.ws.resolve(WORKBOOK_FILE);
}

/** Write the in-memory workbook back to the rollout's own file when it changed. */
export async function flush(state: ExcelState): Promise<void> {
  if (state.wb && state.dirty) {
    const file = await ownFile(state);
    await writeFile(file, await saveWorkbook(state.wb));
    state.dirty = false;
  }
}

/** A snapshot of the rollout's current workbook for its fork children (one copy per group). */
export async function snapshotFor(state: ExcelState): Promise<Snapshot> {
  if (state.base && !state.ws && !state.dirty) {
    state.base.refs++;
    return state.base;
  }
  await flush(state);
  await flushInterpreters(state.ws?.dir);
  if (!state.forkSnapshot) {
    const ws = await Workspace.create({ prefix: "excel-snapshot" });
    const file = await ws.copyIn(await ownFile(state), WORKBOOK_FILE);
    state.forkSnapshot = { ws, file, refs: 1 }; // the parent's own reference
  }
  state.forkSnapshot.refs++;
  return state.forkSnapshot;
}

/** The parent's workbook changed: its cached fork snapshot no longer matches. */
function invalidateSnapshot(state: ExcelState): void {
  if (state.forkSnapshot) {
    void dropSnapshot(state.forkSnapshot);
    state.forkSnapshot = undefined;
  }
}

function refresh(state: ExcelState, wb: Workbook, cfg: ToolConfig): string[] {
  if (cfg.recalc === "embedded" && state.stale) {
    state.stale = false;
    return toolRecalc(wb);
  }
  return [];
}

const descriptions: Record<OpName, string> = {
  list_sheets: "List the workbook's sheets with their used size.",
  read_range:
    "Read cells of a sheet as JSON: `values` (what the cells show) and `formulas` (where a cell holds one). At most 2000 cells per call.",
  write_range:
    'Write a block of values starting at a cell. Each inner array is a row. Strings starting with "=" are formulas (recalculated at once).',
  write_cell: 'Write one value or formula (a string starting with "=") to a cell.',
  insert_rows: "Insert empty rows before a row (cells below move down).",
  delete_rows: "Delete rows (cells below move up).",
  insert_columns: "Insert empty columns before a column (cells to the right move right).",
  delete_columns: "Delete columns (cells to the right move left).",
  add_sheet: "Add an empty sheet at the end.",
  rename_sheet: "Rename a sheet.",
  delete_sheet: "Delete a sheet.",
  set_number_format: 'Set the number format of a range, e.g. "0.00%", "yyyy-mm-dd", "h:mm".',
};

export function excelTools(cfg: ToolConfig): Tool<ExcelState, any>[] {
  const tools: Tool<ExcelState, any>[] = [];
  const families = new Set(cfg.families ?? DEFAULT_TOOL_FAMILIES);
  for (const name of Object.keys(schemas) as OpName[]) {
    // list_sheets and read_range stay with any family: a model needs to look at the workbook
    if (!families.has("structured") && MUTATING.has(name)) continue;
    tools.push(
      tool({
        name,
        description: descriptions[name],
        parameters: schemas[name],
        async execute(args: Record<string, unknown>, { state }) {
          const wb = await workbookOf(state);
          if (name === "list_sheets") return listSheets(wb);
          if (name === "read_range") {
            const budget = refresh(state, wb, cfg).filter((e) => e.includes("budget"));
            const out = readRange(wb, args as never);
            return budget.length ? `${out}\nwarning: ${budget.join("; ")}` : out;
          }
          const out = applyOp(wb, name, args);
          invalidateSnapshot(state);
          state.dirty = true;
          state.stale = true;
          state.calls.push({ name, arguments: structuredClone(args) });
          let text = out.text;
          if (out.wroteFormula && cfg.recalc === "embedded") {
            const errors = toolRecalc(wb);
            state.stale = false;
            if (errors.length) text += `\nwarning: ${errors.join("; ")}`;
          }
          return text;
        },
      }),
    );
  }
  if (families.has("js")) tools.push(runCodeTool(cfg));
  if (families.has("python")) tools.push(runPythonTool(cfg));
  return tools;
}

/**
 * A code tool (run_code, run_python): flush pending edits, run the code in the sandbox on the rollout's own copy of
 * the workbook, then reload the rewritten file on next use and record the call for replay on the other test cases.
 */
function codeTool(
  name: "run_code" | "run_python",
  description: string,
  timeoutMs: number,
  run: (file: string, dir: string, code: string, endsAt: number | undefined) => Promise<{ output: string }>,
  empty: string,
): Tool<ExcelState, any> {
  return tool({
    name,
    description,
    parameters: z.object({ code: z.string().min(1).max(100_000) }),
    timeoutMs: timeoutMs + 10_000,
    async execute(args: { code: string }, { state }) {
      await flush(state);
      const file = await ownFile(state);
      invalidateSnapshot(state);
      const { output } = await run(file, state.ws!.dir, args.code, state.endsAt);
      state.wb = undefined; // reload the rewritten file on next use
      state.dirty = false;
      state.stale = true;
      state.modelFile = true;
      state.calls.push({ name, arguments: { code: args.code } });
      return output.trim() ? output : empty;
    },
  });
}

function runCodeTool(cfg: ToolConfig): Tool<ExcelState, any> {
  return codeTool(
    "run_code",
    "Run JavaScript (async function body) against the workbook: `workbook` is an exceljs Workbook " +
      "(workbook.getWorksheet(name), ws.getCell('A1').value = 5, ws.getRow(2).values, ws.eachRow(...), " +
      "{formula: 'SUM(A1:A3)'} for formulas). Changes are saved when the code finishes. console.log output is returned. " +
      "No filesystem, network or subprocesses; time and memory are limited.",
    cfg.runCode.timeoutMs ?? 10_000,
    (file, dir, code, endsAt) => runCode(file, dir, code, { ...cfg.runCode, deferSave: true, endsAt }),
    "(no output; the workbook was saved)",
  );
}

function runPythonTool(cfg: ToolConfig): Tool<ExcelState, any> {
  return codeTool(
    "run_python",
    "Run Python 3 code with openpyxl against the workbook. The workbook file is `workbook_path` " +
      '("/work/workbook.xlsx"; `input_path` and `output_path` name the same file): load it with ' +
      "`wb = openpyxl.load_workbook(workbook_path)`, change it, and save it with `wb.save(workbook_path)`; " +
      "the saved file becomes the workbook when the code finishes without an exception. print() output is returned. " +
      "Only the standard library and openpyxl are available; no network and no files outside /work; " +
      "time, memory and disk are limited.",
    cfg.runPython?.timeoutMs ?? 10_000,
    (file, dir, code, endsAt) => runPython(file, dir, code, { ...cfg.runPython, endsAt }),
    "(no output)",
  );
}

/**
 * Apply recorded calls to another test case's workbook (the same tools, the same order). After a code call the
 * result stays the file the code wrote (inspected on a worker) until a structured call needs it in exceljs.
 */
export async function replayCalls(
  wb: Workbook,
  calls: RecordedCall[],
  cfg: ToolConfig,
  scratch: () => Promise<Workspace>,
): Promise<Workbook | Buffer> {
  let current: Workbook | Buffer = wb;
  const asWorkbook = async (what: string): Promise<Workbook> => {
    if (!Buffer.isBuffer(current)) return current;
    return loadWorkbook(current, what);
  };
  let replayWs: Workspace | undefined;
  for (const [i, call] of calls.entries()) {
    try {
      if (call.name === "run_code" || call.name === "run_python") {
        const ws = (replayWs ??= await scratch()); // one folder: the replayed calls share one live interpreter
        const file = ws.resolve(WORKBOOK_FILE);
        await writeFile(file, Buffer.isBuffer(current) ? current : await saveWorkbook(current));
        if (call.name === "run_code") await runCode(file, ws.dir, String(call.arguments.code), cfg.runCode);
        else await runPython(file, ws.dir, String(call.arguments.code), cfg.runPython);
        const bytes = await ws.readFile(WORKBOOK_FILE);
        const why = await modelFileProblem(bytes);
        if (why) throw new WorkbookError(`the workbook after ${call.name} cannot be opened: ${why}`);
        current = bytes;
      } else if (MUTATING.has(call.name)) {
        const schema = schemas[call.name as OpName];
        const book = await asWorkbook(`the workbook after call #${i}`);
        current = book;
        applyOp(book, call.name, schema.parse(call.arguments) as Record<string, unknown>);
      }
    } catch (e) {
      const msg = e instanceof ToolError || (e instanceof Error && e.name === "ToolError") ? e.message : String(e);
      throw new ReplayError(`replaying call #${i + 1} (${call.name}) failed: ${msg}`);
    }
  }
  return current;
}

/** A recorded call failed on another test case (like solution code raising there): the case fails. */
export class ReplayError extends Error {
  override name = "ReplayError";
}
