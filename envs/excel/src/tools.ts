/** The excel env's tools: structured workbook operations on exceljs, `run_code` (JS) and `run_python` (openpyxl). */

import { writeFile } from "node:fs/promises";
import { type Tool, ToolError, tool, Workspace } from "@benchmax/core";
import { z } from "zod";
import type { BookReply } from "./book-host.js";
import { bookAsync } from "./book-pool.js";
import { inspectAsync, readShared, type WorkerBudget } from "./compare-pool.js";
import type { ExcelTask } from "./dataset.js";
import { MUTATING, type OpName, schemas } from "./operations.js";
import { type RunCodeOptions, runCode } from "./run-code.js";
import { type RunPythonOptions, runPython } from "./run-python.js";
import { flushInterpreters } from "./sandbox/interpreters.js";
import { WorkbookError } from "./workbook.js";

export { TOOL_RECALC_BUDGET, toolRecalc } from "./book-host.js";

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
  /**
   * The version of the rollout's file as this rollout knows it: bumped whenever something rewrote the file (a
   * structured call, a code call), so the book worker's cached parse of it is used only while it is current.
   */
  version: number;
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
  // read on the thread pool into shared memory: a worker takes it without a copy on the event loop (compare-pool.ts)
  if (state.ws) return flushInterpreters(state.ws.dir).then(() => readShared(state.ws!.resolve(WORKBOOK_FILE)));
  if (state.base) return readShared(state.base.file);
  throw new Error("excel: rollout state has neither a workspace nor a snapshot");
}

/** Why a model-written workbook file may not be parsed (on a worker thread), or undefined. */
export async function modelFileProblem(bytes: Buffer, owner?: WorkerBudget): Promise<string | undefined> {
  try {
    return await inspectAsync(bytes, owner);
  } catch (e) {
    return (e as Error).message;
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

/** The file a structured call reads: the rollout's own, or the shared snapshot of a fork child. */
function readableFile(state: ExcelState): string {
  if (state.ws) return state.ws.resolve(WORKBOOK_FILE);
  if (state.base) return state.base.file;
  throw new Error("excel: rollout state has neither a workspace nor a snapshot");
}

/** A snapshot of the rollout's current workbook for its fork children (one copy per group). */
export async function snapshotFor(state: ExcelState): Promise<Snapshot> {
  if (state.base && !state.ws) {
    state.base.refs++;
    return state.base;
  }
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
          // the workbook is parsed, changed and recalculated on a book worker (book-pool.ts), never on this thread
          const mutating = MUTATING.has(name);
          const file = mutating ? await ownFile(state) : readableFile(state);
          await flushInterpreters(state.ws?.dir); // run_code's deferred saves reach the file first
          const r = await bookAsync({
            kind: "book",
            file,
            version: state.version,
            op: name,
            args,
            modelFile: !!state.modelFile,
            stale: state.stale,
            embedded: cfg.recalc === "embedded",
          });
          checkReply(r);
          if (r.wrote) {
            state.version++;
            invalidateSnapshot(state);
            state.stale = !r.fresh;
            state.calls.push({ name, arguments: structuredClone(args) });
          }
          return r.text ?? "";
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
      const file = await ownFile(state);
      invalidateSnapshot(state);
      const { output } = await run(file, state.ws!.dir, args.code, state.endsAt);
      state.version++; // the book worker parses the rewritten file again on next use
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
    (file, dir, code, endsAt) => runCode(file, dir, code, Object.assign({}, cfg.runCode, { deferSave: true, endsAt })),
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
    (file, dir, code, endsAt) => runPython(file, dir, code, Object.assign({}, cfg.runPython, { endsAt })),
    "(no output)",
  );
}

/** A book worker's reply: the model's error as a ToolError, the env's as an Error. */
function checkReply(r: BookReply): void {
  if (r.toolError !== undefined) throw new ToolError(r.toolError);
  if (r.error !== undefined) throw new Error(r.error);
}

/**
 * Apply recorded calls to another test case's workbook bytes (the same tools, the same order): runs of structured
 * calls on a book worker, code calls in the case's own live interpreter. Returns the resulting workbook's bytes.
 */
export async function replayCalls(
  input: Buffer,
  calls: RecordedCall[],
  cfg: ToolConfig,
  scratch: () => Promise<Workspace>,
  what = "the test case input",
  endsAt?: number,
): Promise<Buffer> {
  let current = input;
  const pastBudget = () => endsAt !== undefined && performance.now() >= endsAt;
  const outOfTime = (i: number) =>
    new ReplayTimeError(
      `replaying call #${i + 1} (${calls[i]!.name}) on ${what} ran out of the reward's time: replaying the model's calls is its own cost`,
    );
  let fromModel = false;
  let replayWs: Workspace | undefined;
  for (let i = 0; i < calls.length; ) {
    const call = calls[i]!;
    if (pastBudget()) throw outOfTime(i);
    if (call.name === "run_code" || call.name === "run_python") {
      try {
        const ws = (replayWs ??= await scratch()); // one folder: the replayed calls share one live interpreter
        const file = ws.resolve(WORKBOOK_FILE);
        await writeFile(file, current);
        // the live call's limits (its per-call time-out), and the interpreter dies when the reward's time runs out
        const limits = { endsAt };
        if (call.name === "run_code")
          await runCode(file, ws.dir, String(call.arguments.code), Object.assign({}, cfg.runCode, limits));
        else await runPython(file, ws.dir, String(call.arguments.code), Object.assign({}, cfg.runPython, limits));
        const bytes = await readShared(file); // shared memory: inspected on a worker without a copy here
        const why = await modelFileProblem(bytes);
        if (why) throw new WorkbookError(`the workbook after ${call.name} cannot be opened: ${why}`);
        current = bytes;
        fromModel = true;
      } catch (e) {
        if (pastBudget()) throw outOfTime(i);
        const msg = e instanceof ToolError || (e instanceof Error && e.name === "ToolError") ? e.message : String(e);
        throw new ReplayError(`replaying call #${i + 1} (${call.name}) failed: ${msg}`);
      }
      i++;
      continue;
    }
    if (!MUTATING.has(call.name)) {
      i++;
      continue;
    }
    // a run of structured calls: one job on a book worker
    let j = i;
    while (j < calls.length && MUTATING.has(calls[j]!.name) && calls[j]!.name !== "run_code") j++;
    const r = await bookAsync({
      kind: "replay",
      bytes: new Uint8Array(current.buffer, current.byteOffset, current.byteLength),
      calls: calls.slice(i, j).map((c) => ({ name: c.name, arguments: c.arguments })),
      first: i,
      what: i === 0 ? what : `the workbook after call #${i}`,
      modelFile: fromModel,
    });
    if (r.replayError !== undefined) throw new ReplayError(r.replayError);
    if (r.toolError !== undefined) throw new ReplayError(`replaying calls #${i + 1}–#${j} failed: ${r.toolError}`);
    checkReply(r);
    current = Buffer.from(r.bytes!.buffer, r.bytes!.byteOffset, r.bytes!.byteLength);
    i = j;
  }
  return current;
}

/** A recorded call failed on another test case (like solution code raising there): the case fails. */
export class ReplayError extends Error {
  override name = "ReplayError";
}

/**
 * Replaying the model's recorded calls ran out of the time the reward has for it: the model's cost (its calls can
 * sleep or spin only when replayed), so the case — and every case after it — scores 0 instead of the rollout ending
 * env_error at the reward's time limit.
 */
export class ReplayTimeError extends ReplayError {
  override name = "ReplayTimeError";
}
