/**
 * Scoring: every test case of a task is produced (case 1 = the rollout's own workbook; cases 2..n = the rollout's
 * recorded calls replayed on those inputs, as the official evaluation replays solution code), recalculated, and
 * compared with its answer file by the ported official compare. `pass` = all cases pass (hard), `soft` = fraction.
 */
import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { isAbsolute, resolve } from "node:path";
import {
  DatasetError,
  DEFAULT_TIMEOUTS,
  EnvError,
  type ScoreCase,
  type ScoreContext,
  type ScoreResult,
  Workspace,
} from "@benchmax/core";
import type { CellMismatch, CompareResult } from "./compare.js";
import {
  compareAsync,
  hasFormulasAsync,
  readShared,
  type WorkerBudget,
  WorkerTimeoutError,
  workerBudget,
} from "./compare-pool.js";
import type { ExcelTask } from "./dataset.js";
import { findSoffice, type LibreOfficeRecalc, OutputRecalcError } from "./libreoffice.js";
import {
  type ExcelState,
  modelFileProblem,
  type RecalcMode,
  ReplayError,
  ReplayTimeError,
  replayCalls,
  type ToolConfig,
  workbookBytes,
} from "./tools.js";
import { saveWorkbook, type Workbook, WorkbookError } from "./workbook.js";

export interface CaseOutcome {
  case: number;
  pass: boolean;
  message: string;
  mismatches: CellMismatch[];
}

export interface Scorer {
  mode: RecalcMode;
  libreoffice?: () => LibreOfficeRecalc;
}

/** LibreOffice, when the env has it configured and soffice is installed (the fallback of the embedded engine). */
function fallback(scorer: Scorer): LibreOfficeRecalc | undefined {
  if (!scorer.libreoffice) return undefined;
  if (scorer.mode !== "libreoffice" && !findSoffice()) return undefined;
  return scorer.libreoffice();
}

/** The case cannot be scored: the rollout ends env_error (never a reward of 0 for the model). */
function unscorable(why: string): EnvError {
  return new EnvError(
    `cannot score this case: ${why}; LibreOffice (soffice) is not installed to recalculate it instead`,
  );
}

/**
 * Outputs the embedded engine recalculates lazily in the compare (on a worker thread when the pool runs): only the
 * compared formula cells and what they depend on are evaluated, so a formula it cannot evaluate elsewhere in the
 * workbook changes nothing, and one that a compared cell depends on makes the case fall back to LibreOffice (or
 * unscorable) instead of a wrong value.
 */
const lazyOutputs = new WeakSet<Buffer>();

/** The bytes the compare reads for a workbook: recalculated per the mode. */
export async function finalBytes(wb: Workbook | Buffer, scorer: Scorer): Promise<Buffer> {
  const buf = Buffer.isBuffer(wb) ? wb : await saveWorkbook(wb);
  if (scorer.mode === "embedded") lazyOutputs.add(buf);
  if (scorer.mode === "libreoffice") return scorer.libreoffice!().recalc(buf);
  return buf;
}

async function readGold(path: string): Promise<Buffer> {
  try {
    return await readShared(path); // on the thread pool, into memory a compare worker shares (compare-pool.ts)
  } catch (e) {
    throw new DatasetError(
      `cannot read answer file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      path,
    );
  }
}

async function judge(
  n: number,
  gold: Buffer,
  goldPath: string,
  output: Buffer | undefined,
  answerPosition: string,
  scorer: Scorer,
  recalcOutput = false,
  input?: () => Promise<Buffer | undefined>,
  owner?: WorkerBudget,
): Promise<CaseOutcome> {
  let r: CompareResult;
  try {
    r = await compareAsync(gold, output, answerPosition, { recalcOutput }, owner);
  } catch (e) {
    // a file whose parse or recalculation ran past the worker's time limit: the model's output (golds are the task's)
    if (e instanceof WorkerTimeoutError)
      return { case: n, pass: false, message: `scored 0: ${e.message}`, mismatches: [] };
    throw e;
  }
  if (r.goldError) throw new DatasetError(r.goldError, goldPath);
  if (r.unscorable) {
    // the model's own output past the recalculation budget: its failure (0), not the env's
    if (r.unscorableBy === "output" && /exceeded its (time )?budget/.test(r.unscorable)) {
      return { case: n, pass: false, message: `scored 0: ${r.unscorable}`, mismatches: [] };
    }
    const lo = fallback(scorer);
    if (!lo) {
      if (r.unscorableBy === "output" && !(await inputUnscorable(gold, input, answerPosition))) {
        // a function Excel has but the engine lacks, written by the model: its failure, named (score 0)
        return {
          case: n,
          pass: false,
          message: `scored 0: ${r.unscorable} (without LibreOffice installed, an answer cell must use functions the embedded engine evaluates)`,
          mismatches: [],
        };
      }
      throw unscorable(r.unscorable);
    }
    // LibreOffice recalculates the output (and the gold file only when its own missing values were the problem)
    const goldToo = r.unscorableBy === "gold";
    // golds and model-written outputs never share a LibreOffice batch (the output's external references are refused)
    let g: Buffer;
    let o: Buffer | undefined;
    try {
      [g, o] = await Promise.all([
        goldToo ? lo.recalc(gold, "gold") : Promise.resolve(gold),
        output ? lo.recalc(output, "output") : Promise.resolve(undefined),
      ]);
    } catch (e) {
      if (e instanceof OutputRecalcError) return { case: n, pass: false, message: e.message, mismatches: [] };
      throw e;
    }
    // LibreOffice's re-save of the model's file is still the model's XML: read on a worker, not on the event loop
    try {
      r = await compareAsync(g, o, answerPosition, { recalcGold: !goldToo }, owner);
    } catch (e) {
      if (e instanceof WorkerTimeoutError)
        return { case: n, pass: false, message: `scored 0: ${e.message}`, mismatches: [] };
      throw e;
    }
    if (r.goldError) throw new DatasetError(r.goldError, goldPath);
    if (r.unscorable) throw new EnvError(`cannot score this case: ${r.unscorable}`);
  }
  return { case: n, pass: r.pass, message: r.message, mismatches: r.mismatches };
}

/**
 * Whether the task's own input (before the model touched it) already holds an answer cell the engine cannot
 * evaluate: then the failure is the task's (env_error), not the model's.
 */
async function inputUnscorable(
  gold: Buffer,
  input: (() => Promise<Buffer | undefined>) | undefined,
  answerPosition: string,
): Promise<boolean> {
  const buf = input && (await input());
  if (!buf) return false;
  const r = await compareAsync(gold, buf, answerPosition, { recalcOutput: true });
  return r.unscorableBy === "output";
}

/**
 * Case 1's output: the rollout's workbook. A file the model's code wrote last is scored from its bytes (inspected on
 * a worker, recalculated lazily there), never parsed on the env's thread; a refused file fails the case.
 */
async function rolloutOutput(state: ExcelState, scorer: Scorer, owner?: WorkerBudget): Promise<Buffer> {
  const bytes = await workbookBytes(state);
  if (state.modelFile) {
    const why = await modelFileProblem(bytes, owner);
    if (why) throw new WorkbookError(`scored 0: the workbook file the model's code wrote cannot be opened: ${why}`);
  }
  return finalBytes(bytes, scorer);
}

/**
 * When replaying the model's calls must stop, given when the reward's time runs out (`endsAt`, the caller's limit;
 * the core default when it gave none): a quarter of the limit (at least 5 s) is kept for recalculating and comparing
 * what was replayed, so a rollout whose calls are slow only when replayed scores 0 instead of ending env_error.
 */
export function replayDeadline(endsAt: number | undefined, now = performance.now()): number {
  const end = endsAt ?? now + DEFAULT_TIMEOUTS.rewardMs;
  const left = Math.max(0, end - now);
  return now + Math.max(0, left - Math.max(5_000, left / 4));
}

/** Score a finished rollout on every test case of its task. */
export async function scoreRollout(
  state: ExcelState,
  scorer: Scorer,
  cfg: ToolConfig,
  endsAt?: number,
): Promise<{ rewards: { pass: number; soft: number }; cases: CaseOutcome[] }> {
  const task: ExcelTask = state.task;
  const { answers, answerPosition } = task.groundTruth;
  const cases: CaseOutcome[] = [];
  const scratch: Workspace[] = [];
  const replayEndsAt = replayDeadline(endsAt);
  // the rollout's share of the scoring workers: all its cases together (compare-pool.ts)
  const owner = workerBudget();
  let outOfTime: string | undefined;
  try {
    for (let i = 0; i < answers.length; i++) {
      const n = task.init.caseNumbers[i] ?? i + 1;
      if (outOfTime) {
        // the replay budget is spent: the later cases are not replayed (the model's cost, scored 0)
        cases.push({ case: n, pass: false, message: `scored 0: not replayed: ${outOfTime}`, mismatches: [] });
        continue;
      }
      const gold = await readGold(answers[i]!);
      let output: Buffer;
      try {
        if (i === 0) {
          output = state.calls.length === 0 ? await workbookBytes(state) : await rolloutOutput(state, scorer, owner);
        } else {
          const input = await readFile(task.init.inputs[i]!).catch((e) => {
            throw new DatasetError(
              `cannot read input file (${(e as NodeJS.ErrnoException).code})`,
              task.init.inputs[i]!,
            );
          });
          if (state.calls.length === 0) output = input;
          else {
            const after = await replayCalls(
              input,
              state.calls,
              cfg,
              async () => {
                const ws = await Workspace.create({ prefix: "excel-replay" });
                scratch.push(ws);
                return ws;
              },
              `test case ${n} input`,
              replayEndsAt,
            );
            output = await finalBytes(after, scorer);
          }
        }
      } catch (e) {
        if (e instanceof ReplayTimeError) {
          outOfTime = e.message;
          cases.push({ case: n, pass: false, message: `scored 0: ${e.message}`, mismatches: [] });
          continue;
        }
        if (e instanceof ReplayError || e instanceof WorkbookError || e instanceof OutputRecalcError) {
          cases.push({ case: n, pass: false, message: e.message, mismatches: [] });
          continue;
        }
        throw e;
      }
      const inputPath = task.init.inputs[i];
      const input = inputPath ? () => readFile(inputPath).catch(() => undefined) : undefined;
      cases.push(
        await judge(n, gold, answers[i]!, output, answerPosition, scorer, lazyOutputs.has(output), input, owner),
      );
    }
  } finally {
    await Promise.all(scratch.map((w) => w.remove()));
  }
  const passed = cases.filter((c) => c.pass).length;
  return { rewards: { pass: passed === cases.length ? 1 : 0, soft: cases.length ? passed / cases.length : 0 }, cases };
}

/** `benchmax score excel cases.jsonl`: one `{id, task, outputFile, goldFile}` line. */
export async function scoreOneCase(c: ScoreCase, ctx: ScoreContext, scorer: Scorer): Promise<ScoreResult> {
  const task = c.task as Record<string, unknown> | undefined;
  if (!task || typeof task !== "object")
    throw new DatasetError('case has no "task" (the dataset.json row)', c.id, "task");
  const answerPosition = task.answer_position;
  if (typeof answerPosition !== "string")
    throw new DatasetError('task has no "answer_position" string', c.id, "task.answer_position");
  if (typeof c.goldFile !== "string") throw new DatasetError('case has no "goldFile" path', c.id, "goldFile");
  if (typeof c.outputFile !== "string") throw new DatasetError('case has no "outputFile" path', c.id, "outputFile");
  const abs = (p: string) => (isAbsolute(p) ? p : resolve(ctx.baseDir, p));
  const goldPath = abs(c.goldFile);
  const gold = await readGold(goldPath);
  const outPath = abs(c.outputFile);
  let output: Buffer | undefined;
  const recalc = ctx.options.recalc !== false && ctx.options.recalc !== "false" && scorer.mode !== "none";
  if (existsSync(outPath)) {
    output = await readShared(outPath);
    // the model's file is checked on a worker and goes to LibreOffice as it is (as the rollout's own file does): no
    // parse or copy of its bytes on the event loop
    if (recalc && scorer.mode === "libreoffice") {
      const why = await modelFileProblem(output);
      // refused (not an xlsx, past the caps): the model's failure, as for a rollout's own file
      if (why) {
        const msg = `scored 0: the output file cannot be opened: ${why}`;
        return { reward: 0, rewards: { pass: 0, soft: 0 }, metadata: { message: msg, mismatches: [] } };
      }
      if (await hasFormulasAsync(output)) {
        try {
          output = await finalBytes(output, scorer);
        } catch (e) {
          if (e instanceof OutputRecalcError)
            return { reward: 0, rewards: { pass: 0, soft: 0 }, metadata: { message: e.message, mismatches: [] } };
          throw e;
        }
      }
    }
  }
  // embedded recalculation straight from the XML (compared cells and their dependencies)
  const r = await judge(1, gold, goldPath, output, answerPosition, scorer, recalc && scorer.mode === "embedded");
  const pass = r.pass ? 1 : 0;
  return {
    reward: pass,
    rewards: { pass, soft: pass },
    metadata: { message: r.message, mismatches: r.mismatches },
  };
}
