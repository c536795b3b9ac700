/**
 * Where the structured tools' workbooks live: parsed, changed, recalculated and saved here — on a worker thread of
 * the book pool (book-pool.ts) in a served env, so no model-made workbook is parsed or evaluated on the server's
 * event loop. The rollout's file on disk stays the truth: a mutating call writes it back before it answers, so a
 * worker that dies (a job past its time limit, out of memory) loses nothing but its cache.
 *
 * The host keeps the last workbooks it parsed (by file path), valid while the caller's version of the file and the
 * file's own stamp (inode, size, mtime) are those it last saw: a code tool or another worker that rewrote the file
 * makes the next job parse it again.
 */
import { readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ToolError } from "@benchmax/core";
import { RecalcBudgetError } from "./formula-engine.js";
import { applyOp, listSheets, MUTATING, type OpName, readRange, schemas } from "./operations.js";
import { recalcWorkbook } from "./recalc.js";
import { loadWorkbook, saveWorkbook, type Workbook, WorkbookError } from "./workbook.js";
import { inspectXlsx } from "./xlsx-inspect.js";

/** One structured tool call on a rollout's workbook file. */
export interface BookJob {
  kind: "book";
  file: string;
  /** The caller's version of the file (it bumps it when something else rewrote the file). */
  version: number;
  op: OpName;
  args: Record<string, unknown>;
  /** The file was written by the model's code: inspect it (zip, sizes, cells, no DTD) before parsing it. */
  modelFile: boolean;
  /** Formulas may hold stale values: recalculate before reading (embedded mode only). */
  stale: boolean;
  /** Recalculate with the embedded engine (recalc mode "embedded"). */
  embedded: boolean;
}

/** Recorded structured calls applied to a workbook's bytes (replay on another test case). */
export interface ReplayJob {
  kind: "replay";
  bytes: Uint8Array;
  calls: Array<{ name: string; arguments: Record<string, unknown> }>;
  /** Index of the first call, for messages. */
  first: number;
  /** What the bytes are, for messages. */
  what: string;
  /** The bytes came from the model's code: inspect them before parsing. */
  modelFile: boolean;
}

export interface BookReply {
  text?: string;
  /** The file was rewritten (the caller records the call and bumps its version). */
  wrote?: boolean;
  /** The workbook's formulas were recalculated (the caller's `stale` may clear). */
  fresh?: boolean;
  /** Replay: the resulting workbook. */
  bytes?: Uint8Array;
  /** An error the model caused and reads (a ToolError on the caller's side). */
  toolError?: string;
  /** A replayed call failed (the case fails). */
  replayError?: string;
  /** Anything else: the env's fault. */
  error?: string;
}

/** The tools' recalculation bounds: past them the model gets a warning instead of values. */
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

interface Entry {
  wb: Workbook;
  version: number;
  stamp: string;
  /** Recalculated since it was parsed or last changed. */
  fresh: boolean;
}

function stampOf(file: string): string {
  const st = statSync(file);
  return `${st.ino}:${st.size}:${st.mtimeMs}`;
}

const MODEL_FILE = "the workbook file your code wrote";

export class BookHost {
  private readonly cache = new Map<string, Entry>();

  constructor(private readonly maxBooks = 64) {}

  /** Run one job; never throws (errors come back in the reply, by cause). */
  async run(job: BookJob | ReplayJob): Promise<BookReply> {
    try {
      return job.kind === "replay" ? await this.replay(job) : await this.book(job);
    } catch (e) {
      if (e instanceof ToolError || (e instanceof Error && e.name === "ToolError")) return { toolError: e.message };
      return { error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) };
    }
  }

  /** Forget a file's workbook (its rollout was released). */
  drop(file: string): void {
    this.cache.delete(file);
  }

  get size(): number {
    return this.cache.size;
  }

  private async open(job: BookJob): Promise<Entry> {
    const stamp = stampOf(job.file);
    const hit = this.cache.get(job.file);
    if (hit && hit.version === job.version && hit.stamp === stamp) {
      this.cache.delete(job.file); // most recently used last
      this.cache.set(job.file, hit);
      return hit;
    }
    this.cache.delete(job.file);
    const bytes = readFileSync(job.file);
    if (job.modelFile) {
      const why = inspectXlsx(bytes);
      if (why) throw new ToolError(`${MODEL_FILE} cannot be opened: ${why}`);
    }
    let wb: Workbook;
    try {
      wb = await loadWorkbook(bytes, job.modelFile ? MODEL_FILE : "the task workbook");
    } catch (e) {
      if (e instanceof WorkbookError && job.modelFile) throw new ToolError(e.message);
      throw e;
    }
    const entry: Entry = { wb, version: job.version, stamp, fresh: false };
    this.cache.set(job.file, entry);
    while (this.cache.size > this.maxBooks) this.cache.delete(this.cache.keys().next().value!);
    return entry;
  }

  private async book(job: BookJob): Promise<BookReply> {
    const entry = await this.open(job);
    const wb = entry.wb;
    if (job.op === "list_sheets") return { text: listSheets(wb) };
    if (job.op === "read_range") {
      let warn: string[] = [];
      if (job.embedded && job.stale && !entry.fresh) {
        warn = toolRecalc(wb).filter((e) => e.includes("budget"));
        entry.fresh = true;
      }
      const out = readRange(wb, job.args as never);
      return { text: warn.length ? `${out}\nwarning: ${warn.join("; ")}` : out, fresh: entry.fresh };
    }
    if (!MUTATING.has(job.op)) throw new Error(`book host: unknown operation ${job.op}`);
    // a call that fails leaves the cached workbook half-changed: parse the file again next time
    this.cache.delete(job.file);
    const out = applyOp(wb, job.op, job.args);
    let text = out.text;
    let fresh = false;
    if (out.wroteFormula && job.embedded) {
      const errors = toolRecalc(wb);
      fresh = true;
      if (errors.length) text += `\nwarning: ${errors.join("; ")}`;
    }
    const bytes = await saveWorkbook(wb);
    const tmp = join(dirname(job.file), `.workbook.${process.pid}.book`);
    writeFileSync(tmp, bytes);
    renameSync(tmp, job.file);
    this.cache.set(job.file, { wb, version: job.version + 1, stamp: stampOf(job.file), fresh });
    return { text, wrote: true, fresh };
  }

  private async replay(job: ReplayJob): Promise<BookReply> {
    const buf = Buffer.from(job.bytes.buffer, job.bytes.byteOffset, job.bytes.byteLength);
    if (job.modelFile) {
      const why = inspectXlsx(buf);
      if (why) return { replayError: `the workbook before call #${job.first + 1} cannot be opened: ${why}` };
    }
    let wb: Workbook;
    try {
      wb = await loadWorkbook(buf, job.what);
    } catch (e) {
      if (e instanceof WorkbookError) return { replayError: e.message };
      throw e;
    }
    for (const [i, call] of job.calls.entries()) {
      try {
        const schema = schemas[call.name as OpName];
        applyOp(wb, call.name, schema.parse(call.arguments) as Record<string, unknown>);
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        return { replayError: `replaying call #${job.first + i + 1} (${call.name}) failed: ${msg}` };
      }
    }
    // on a SharedArrayBuffer: the thread that asked for it gets the bytes without a copy on its side
    const saved = await saveWorkbook(wb);
    const bytes = new Uint8Array(new SharedArrayBuffer(saved.byteLength));
    bytes.set(saved);
    return { bytes };
  }
}
