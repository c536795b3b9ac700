import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { type AssistantMessage, type Message, type RolloutResult, summarize, UsageError } from "@benchmax/core";
import type { GateSummary, RunIdentity } from "./compare-runs.js";
import { toolCallNames } from "./tool-calls.js";
import type { TranscriptRef, TranscriptStore } from "./transcripts.js";

/** A run directory read back: its rollouts and its summary (with the run identity when the run dir has one). */
export interface LoadedRun {
  dir: string;
  /**
   * The rollouts, the last result of each rollout id. Read with `dropMessages`, their messages are cut down to the
   * tool calls (names only).
   */
  results: RolloutResult[];
  summary: GateSummary;
  /** Where each rollout's transcript is, when the run was read with a transcript store. */
  transcripts?: { store: TranscriptStore; refs: Map<string, TranscriptRef> };
}

export interface LoadRunOptions {
  /** Stream each rollout's conversation into this store (call its `finish()` after). */
  transcripts?: TranscriptStore;
  /** Keep only the tool calls' names of each conversation (the report's rows need no more). */
  dropMessages?: boolean;
}

function readIdentity(dir: string): RunIdentity | undefined {
  const p = join(dir, "run.json");
  if (!existsSync(p)) return undefined;
  try {
    return JSON.parse(readFileSync(p, "utf8")) as RunIdentity;
  } catch (e) {
    throw new UsageError(`${p}: malformed run identity (${(e as Error).message})`);
  }
}

/**
 * Call `fn` with each parsed line of a JSONL file, reading it a MiB at a time (a 20,000-rollout results file is never
 * one string). Blank lines are skipped; a torn last line (a crash mid-write) is skipped; any other malformed line is
 * a UsageError naming `path:line`.
 */
export function forEachJsonLine(path: string, fn: (value: unknown, line: number) => void): void {
  const fd = openSync(path, "r");
  const buf = Buffer.allocUnsafe(1 << 20);
  const decoder = new StringDecoder("utf8");
  let carry = "";
  let lineNo = 0;
  let pendingError: { line: number; message: string } | undefined;
  const handle = (text: string) => {
    lineNo++;
    const line = text.trim();
    if (!line) return;
    if (pendingError)
      throw new UsageError(`${path}:${pendingError.line}: malformed results line: ${pendingError.message}`);
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (e) {
      pendingError = { line: lineNo, message: (e as Error).message }; // fatal unless it is the last line
      return;
    }
    fn(value, lineNo);
  };
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      const text = carry + decoder.write(buf.subarray(0, n));
      let start = 0;
      for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
        handle(text.slice(start, nl));
        start = nl + 1;
      }
      carry = text.slice(start);
    }
    carry += decoder.end();
    if (carry) handle(carry);
  } finally {
    closeSync(fd);
  }
}

/** What the report keeps of a message once its transcript is stored: the tool calls' names. */
function skeleton(messages: Message[]): Message[] {
  const out: Message[] = [];
  for (const m of messages) {
    if (m?.role !== "assistant") continue;
    const names = toolCallNames(m as AssistantMessage);
    if (names.length === 0) continue;
    out.push({
      role: "assistant",
      content: null,
      tool_calls: names.map((name, i) => ({ id: String(i), type: "function", function: { name, arguments: "" } })),
    });
  }
  return out;
}

/** A result's rollout id (runs from before rollout ids get `task#sample`). */
export const rolloutIdOf = (r: RolloutResult): string => String(r.rolloutId ?? `${r.taskId}#${r.sample ?? 0}`);

/**
 * Read a run dir (`results.jsonl`, `summary.json`, `run.json`) the way `benchmax compare` reads it, so the report
 * judges the same numbers: the last result of each rollout id counts (a retried rollout once); without summary.json
 * (a killed run) the summary is recomputed from the results and the run is marked incomplete; the run identity comes
 * from run.json when the summary lacks it. A dir without results is a UsageError naming the path.
 */
export function loadRun(dir: string, options: LoadRunOptions = {}): LoadedRun {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`${dir}: no such run directory`);
  const resultsPath = join(dir, "results.jsonl");
  if (!existsSync(resultsPath)) {
    throw new UsageError(`${dir} is not a run dir: no results.jsonl (run \`benchmax eval <env> --out ${dir}\` first)`);
  }
  const store = options.transcripts;
  const refs = new Map<string, TranscriptRef>();
  const last = new Map<string, RolloutResult>();
  forEachJsonLine(resultsPath, (value, line) => {
    const r = value as RolloutResult;
    if (typeof r !== "object" || r === null || typeof r.taskId !== "string" || typeof r.outcome !== "string") {
      throw new UsageError(`${resultsPath}:${line}: not a rollout result (needs taskId and outcome)`);
    }
    const id = rolloutIdOf(r);
    last.delete(id); // a retry takes the place of the earlier attempt, at the end
    if (store) refs.set(id, store.add(r));
    last.set(id, options.dropMessages ? { ...r, messages: skeleton(Array.isArray(r.messages) ? r.messages : []) } : r);
  });
  if (last.size === 0) throw new UsageError(`${resultsPath} holds no results`);
  const results = [...last.values()];
  const identity = readIdentity(dir);
  const summaryPath = join(dir, "summary.json");
  let summary: GateSummary;
  if (existsSync(summaryPath)) {
    try {
      summary = JSON.parse(readFileSync(summaryPath, "utf8")) as GateSummary;
    } catch (e) {
      throw new UsageError(`${summaryPath}: malformed summary (${(e as Error).message})`);
    }
  } else {
    summary = summarize(results, { env: identity?.env ?? "?", policy: identity?.policy ?? "?" });
    // no summary.json: the run never finished
    if (identity) summary.run = { ...identity, completed: false };
  }
  if (!summary.run && identity) summary.run = identity;
  return { dir, results, summary, ...(store ? { transcripts: { store, refs } } : {}) };
}
