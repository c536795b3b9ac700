/**
 * @benchmax/env-excel — SpreadsheetBench spreadsheet manipulation, scored exactly like the official evaluation.
 */
import { existsSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import {
  defineEnv,
  defineEnvModule,
  type Env,
  type EnvModule,
  type EnvOptions,
  UsageError,
  Workspace,
} from "@benchmax/core";
import { excelArtifacts, restoreExcelArtifacts } from "./artifacts.js";
import { dropBook } from "./book-pool.js";
import { type ExcelTask, fixturesDir, loadExcelTasks, parseExcelRow } from "./dataset.js";
import { explainCases } from "./explain.js";
import { findSoffice, LibreOfficeRecalc } from "./libreoffice.js";
import { excelReferencePolicy } from "./reference-policy.js";
import { type CaseOutcome, type Scorer, scoreOneCase, scoreRollout } from "./reward.js";
import { preloadRunCode } from "./run-code.js";
import { pythonAvailable } from "./run-python.js";
import { releaseInterpreters } from "./sandbox/interpreters.js";
import { jailReady } from "./sandbox/jail.js";
import { excelStateView } from "./state-view.js";
import {
  DEFAULT_TOOL_FAMILIES,
  dropSnapshot,
  type ExcelState,
  excelTools,
  type RecalcMode,
  snapshotFor,
  TOOL_FAMILIES,
  type ToolConfig,
  type ToolFamily,
  WORKBOOK_FILE,
} from "./tools.js";

export interface ExcelEnvOptions {
  /** A SpreadsheetBench folder (with dataset.json) or dataset file; default: the bundled fixtures. */
  dataset?: string;
  /** How formulas get cached values before scoring: "embedded" (default), "libreoffice" or "none". */
  recalc?: RecalcMode;
  /**
   * Which tools the model sees: a comma-separated list of "structured" (the workbook operations), "js" (run_code),
   * "python" (run_python, openpyxl), or "all". Default "structured,js". list_sheets and read_range are always there.
   */
  tools?: string;
  /** run_code limits: time, V8 heap, whole data segment (memory outside the heap included), disk writes. */
  runCodeTimeoutMs?: number;
  runCodeMemoryMb?: number;
  runCodeMaxMemoryMb?: number;
  runCodeDiskMb?: number;
  /** run_python limits: time, address space, disk writes; and the interpreter (default /usr/bin/python3). */
  runPythonTimeoutMs?: number;
  runPythonMemoryMb?: number;
  runPythonDiskMb?: number;
  python?: string;
  /** LibreOffice: binary, per-file time limit, concurrent conversions. */
  soffice?: string;
  libreofficeTimeoutMs?: number;
  libreofficeConcurrency?: number;
  /** Default wall-clock budget of an episode (ms) when the driver sets none; default 20 minutes. */
  episodeDeadlineMs?: number;
  /** Most tool calls run from one reply (the rest get a tool error); default 32. */
  maxToolCallsPerReply?: number;
  /**
   * Claim each rollout's run_code interpreter at its init and load the workbook into it, overlapping the model's
   * first generation (its first run_code call then skips the exceljs load). Costs a live interpreter per rollout
   * whether or not the model calls run_code. Default false.
   */
  preloadRunCode?: boolean;
}

/** An excel episode's default deadline: 10 turns of 32 calls cannot hold a core for hours. */
export const DEFAULT_EPISODE_DEADLINE_MS = 20 * 60_000;

export const SYSTEM_PROMPT = `You are a spreadsheet expert working on an Excel workbook through tools.
Inspect the workbook (list_sheets, read_range), then change it to fulfil the instruction: write values or formulas
(strings starting with "="), insert or delete rows and columns, add/rename/delete sheets, set number formats, or run
JavaScript against the workbook with run_code. Only the cells named by the answer position are checked, against the
expected workbook; write the results there. Your changes are also replayed on other versions of the workbook with
different data, so prefer formulas or code that compute the result from the data over typed-in constants.
When the workbook is done, reply with a short summary and no tool call.`;

/** The system prompt for a tool selection (the default selection gets SYSTEM_PROMPT unchanged). */
export function systemPromptFor(families: readonly ToolFamily[]): string {
  const has = (f: ToolFamily) => families.includes(f);
  if (has("structured") && has("js") && !has("python")) return SYSTEM_PROMPT;
  const ways: string[] = [];
  if (has("structured"))
    ways.push(
      'write values or formulas (strings starting with "="), insert or delete rows and columns, add/rename/delete sheets, set number formats',
    );
  if (has("js")) ways.push("run JavaScript against the workbook with run_code (exceljs)");
  if (has("python"))
    ways.push("run Python against the workbook with run_python (openpyxl; save the workbook to workbook_path)");
  return `You are a spreadsheet expert working on an Excel workbook through tools.
Inspect the workbook (list_sheets, read_range), then change it to fulfil the instruction: ${ways.join("; or ")}.
Only the cells named by the answer position are checked, against the expected workbook; write the results there.
Your changes are also replayed on other versions of the workbook with different data, so prefer formulas or code
that compute the result from the data over typed-in constants.
When the workbook is done, reply with a short summary and no tool call.`;
}

/** Parse the `tools` option: "structured,js,python", "all", … */
export function parseToolFamilies(v: unknown): ToolFamily[] {
  if (v === undefined || v === "") return [...DEFAULT_TOOL_FAMILIES];
  const parts = String(v)
    .split(",")
    .map((p) => p.trim().toLowerCase())
    .filter(Boolean);
  const out = new Set<ToolFamily>();
  for (const p of parts) {
    if (p === "all") for (const f of TOOL_FAMILIES) out.add(f);
    else if (p === "javascript") out.add("js");
    else if ((TOOL_FAMILIES as readonly string[]).includes(p)) out.add(p as ToolFamily);
    else throw new UsageError(`excel: option tools: unknown tool family "${p}" (use structured, js, python or all)`);
  }
  if (out.size === 0) throw new UsageError("excel: option tools names no tool family");
  return TOOL_FAMILIES.filter((f) => out.has(f));
}

function num(v: unknown, name: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0)
    throw new UsageError(`excel: option ${name} must be a positive number, got ${String(v)}`);
  return n;
}

export function resolveOptions(options: EnvOptions = {}): Required<Pick<ExcelEnvOptions, "recalc">> & ExcelEnvOptions {
  const recalc = (options.recalc ?? "embedded") as string;
  if (!["embedded", "libreoffice", "none"].includes(recalc)) {
    throw new UsageError(`excel: option recalc must be "embedded", "libreoffice" or "none", got "${recalc}"`);
  }
  if (recalc === "libreoffice" && !(options.soffice ?? findSoffice())) {
    throw new UsageError("excel: recalc=libreoffice needs LibreOffice (soffice) installed; use recalc=embedded");
  }
  const families = parseToolFamilies(options.tools);
  if (families.includes("python")) {
    const py = pythonAvailable(options.python as string | undefined);
    if (!py.ok)
      throw new UsageError(
        `excel: tools=${String(options.tools)} asks for run_python, which cannot run here: ${py.reason}`,
      );
  }
  return {
    dataset: options.dataset as string | undefined,
    recalc: recalc as RecalcMode,
    tools: families.join(","),
    runCodeTimeoutMs: num(options.runCodeTimeoutMs, "runCodeTimeoutMs"),
    runCodeMemoryMb: num(options.runCodeMemoryMb, "runCodeMemoryMb"),
    runCodeMaxMemoryMb: num(options.runCodeMaxMemoryMb, "runCodeMaxMemoryMb"),
    runCodeDiskMb: num(options.runCodeDiskMb, "runCodeDiskMb"),
    runPythonTimeoutMs: num(options.runPythonTimeoutMs, "runPythonTimeoutMs"),
    runPythonMemoryMb: num(options.runPythonMemoryMb, "runPythonMemoryMb"),
    runPythonDiskMb: num(options.runPythonDiskMb, "runPythonDiskMb"),
    python: options.python as string | undefined,
    soffice: options.soffice as string | undefined,
    libreofficeTimeoutMs: num(options.libreofficeTimeoutMs, "libreofficeTimeoutMs"),
    libreofficeConcurrency: num(options.libreofficeConcurrency, "libreofficeConcurrency"),
    episodeDeadlineMs: num(options.episodeDeadlineMs, "episodeDeadlineMs"),
    maxToolCallsPerReply: num(options.maxToolCallsPerReply, "maxToolCallsPerReply"),
    preloadRunCode: options.preloadRunCode === true || options.preloadRunCode === "true",
  };
}

/** Create the excel env. */
export function createExcelEnv(options: EnvOptions = {}): Env<ExcelTask> {
  const opts = resolveOptions(options);
  const families = parseToolFamilies(opts.tools);
  // the jail's probe starts now, off the event loop: a rollout's first code call (or LibreOffice start) finds it done
  if (families.includes("js") || families.includes("python") || opts.recalc === "libreoffice") void jailReady();
  const cfg: ToolConfig = {
    recalc: opts.recalc,
    families,
    runCode: {
      timeoutMs: opts.runCodeTimeoutMs,
      maxOldSpaceMb: opts.runCodeMemoryMb,
      maxMemoryMb: opts.runCodeMaxMemoryMb,
      maxDiskMb: opts.runCodeDiskMb,
    },
    runPython: {
      timeoutMs: opts.runPythonTimeoutMs,
      maxMemoryMb: opts.runPythonMemoryMb,
      maxDiskMb: opts.runPythonDiskMb,
      python: opts.python,
    },
  };
  /** The env's episode deadline: a rollout's interpreters live at most this long from its init (or fork). */
  const deadlineMs = opts.episodeDeadlineMs ?? DEFAULT_EPISODE_DEADLINE_MS;
  let lo: LibreOfficeRecalc | undefined;
  /** The cases of each scored rollout, for `explainReward` (called after the reward, before release). */
  const scored = new Map<string, CaseOutcome[]>();
  const scorer: Scorer = {
    mode: opts.recalc,
    libreoffice: () => {
      lo ??= new LibreOfficeRecalc({
        soffice: opts.soffice,
        timeoutMs: opts.libreofficeTimeoutMs,
        concurrency: opts.libreofficeConcurrency,
      });
      return lo;
    },
  };

  return defineEnv<ExcelTask, ExcelState>({
    name: "excel",
    description:
      "SpreadsheetBench spreadsheet manipulation through workbook tools, scored like the official evaluation",
    systemPrompt: systemPromptFor(families),
    tools: excelTools(cfg),
    toolTimeoutMs: 60_000,
    episodeDefaults: {
      deadlineMs,
      ...(opts.maxToolCallsPerReply ? { maxToolCallsPerReply: Math.floor(opts.maxToolCallsPerReply) } : {}),
    },
    async initState(task, rolloutId) {
      const input = task.init?.inputs?.[0];
      if (!input) throw new UsageError(`excel: task ${task.id} has no input workbook (init.inputs)`);
      refuseGoldInputs(task);
      const ws = await Workspace.create({ prefix: `excel-${rolloutId}` });
      try {
        await ws.copyIn(input, WORKBOOK_FILE);
        const endsAt = performance.now() + deadlineMs;
        // not awaited: the load overlaps the model's first generation; the first run_code call queues behind it
        if (opts.preloadRunCode && families.includes("js"))
          void preloadRunCode(
            ws.resolve(WORKBOOK_FILE),
            ws.dir,
            Object.assign({}, cfg.runCode, { deferSave: true, endsAt }),
          );
        return { task, ws, version: 0, stale: false, calls: [], endsAt };
      } catch (e) {
        await ws.remove();
        throw e;
      }
    },
    async forkState(state) {
      // copy-on-write: the children share one read-only snapshot until one needs its own file
      const base = await snapshotFor(state);
      return {
        task: state.task,
        base,
        version: 0,
        stale: state.stale,
        modelFile: state.modelFile,
        calls: structuredClone(state.calls),
        endsAt: performance.now() + deadlineMs,
      };
    },
    async releaseState(state, rolloutId) {
      scored.delete(rolloutId);
      if (state.ws) dropBook(state.ws.resolve(WORKBOOK_FILE));
      await dropSnapshot(state.base);
      await dropSnapshot(state.forkSnapshot);
      state.base = state.forkSnapshot = undefined;
      releaseInterpreters(state.ws?.dir);
      await state.ws?.remove();
    },
    async reward({ state, rolloutId, endsAt }) {
      const { rewards, cases } = await scoreRollout(state, scorer, cfg, endsAt);
      state.detail = { cases, recalc: opts.recalc, replayed_calls: state.calls.length };
      scored.set(rolloutId, cases);
      return rewards;
    },
    explainReward(rolloutId) {
      const cases = scored.get(rolloutId);
      return cases && explainCases(cases);
    },
    // the spare LibreOffice, if one idles, goes with the env (else it idles up to a minute after)
    async close() {
      await lo?.close();
    },
    rewardWeights: { pass: 1, soft: 0 },
    // the reward reads the final workbook: eval and serve --record keep it, and rescore puts it back
    rewardReads: "state",
    artifacts: (state) => excelArtifacts(state),
    restoreArtifacts: (state, artifacts) => restoreExcelArtifacts(state, artifacts),
    loadTasks: (source, o) => loadExcelTasks(source ?? opts.dataset, o),
    parseTask: (row, where) => parseExcelRow(row, where),
    referencePolicy: () => excelReferencePolicy(),
    scoreCase: (c, ctx) => scoreOneCase(c, ctx, scorer),
    rolloutMetadata: (_id, state) => state.detail,
    // `benchmax play` shows the workbook as a grid after every tool call
    renderState: (state) => excelStateView(state),
  });
}

const excelModule: EnvModule<ExcelTask, EnvOptions, Env<ExcelTask>> = defineEnvModule({
  name: "excel",
  description:
    "SpreadsheetBench spreadsheet manipulation (exceljs tools, run_code and run_python sandboxes, official scoring)",
  createEnv: (options?: EnvOptions) => createExcelEnv(options),
});

export default excelModule;

export type { CellMismatch, CompareResult } from "./compare.js";
export { answerPositionProblem, compareWorkbooks, parseRange, splitAnswerPosition } from "./compare.js";
export type { ExcelGold, ExcelInit, ExcelTask } from "./dataset.js";
export { answerPositionWarning, fixturesDir, loadExcelTasks, parseExcelRow, taskWarnings } from "./dataset.js";
export { findSoffice, LibreOfficeRecalc } from "./libreoffice.js";
export type { PyValue } from "./py-values.js";
export { compareCellValue, transformValue } from "./py-values.js";
export { pyFloatFromString, pyRound } from "./python.js";
export { recalcWorkbook } from "./recalc.js";
export { excelReferencePolicy } from "./reference-policy.js";
export { networkIsolated, preloadRunCode, runCode, runCodeIsolation } from "./run-code.js";
export { pythonAvailable, runPython } from "./run-python.js";
export { closeInterpreters, flushInterpreters, interpreterStats } from "./sandbox/interpreters.js";
export { type JailSpec, jailAvailable, jailStartCommand } from "./sandbox/jail.js";
export type { ExcelState, RecalcMode, RecordedCall, ToolFamily } from "./tools.js";
export { XlsxValues } from "./xlsx-values.js";

/** Whether the bundled fixtures are present (they ship in the package). */
export function hasFixtures(): boolean {
  return existsSync(join(fixturesDir(), "spreadsheetbench", "dataset.json"));
}

/** A task (a client's, say) may never hand the model a golden/answer workbook as one of its inputs. */
function refuseGoldInputs(task: ExcelTask): void {
  const gold = new Set(
    ((task.groundTruth as { answers?: string[] } | undefined)?.answers ?? []).map((p) => resolve(p)),
  );
  for (const p of task.init?.inputs ?? []) {
    if (gold.has(resolve(p)) || /_(answer|golden)\.xlsx$/i.test(basename(p))) {
      throw new UsageError(`excel: task ${task.id} names a golden/answer workbook as an input (${basename(p)})`);
    }
  }
}

// H6: the embedded formula engine's corpora and fidelity figures (bench/excel.mjs)
export { corpusFidelity, type Fidelity } from "./corpus/fidelity.js";
export { CORPUS, corpusWorkbook, EXCEL_ONLY } from "./corpus/formula-corpus.js";
export { STRIPPED_BOOKS, strippedBook } from "./corpus/stripped-corpus.js";
export { RecalcBudgetError } from "./formula-engine.js";
export { pythonWithOpenpyxl } from "./py-env.js";
export { rawSheetXlsx } from "./raw-xlsx.js";
export { inspectXlsx } from "./xlsx-inspect.js";
