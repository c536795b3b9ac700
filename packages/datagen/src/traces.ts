import { createHash } from "node:crypto";
import { readFile, writeFile } from "node:fs/promises";
import {
  extractAnswer,
  jsonlLines,
  type Message,
  type TurnTokens,
  textOf,
  tokenDriftTurns,
  UsageError,
  validTurnTokens,
} from "@benchmax/core";
import { type PiiCounts, PiiScrubber } from "./pii.js";
import { stableSplit } from "./stable-split.js";

/** A training row in the plain shape every env accepts: `{id, prompt | messages, ground_truth}`. */
export interface TraceRow {
  id: string;
  prompt?: string;
  messages?: Message[];
  ground_truth: string;
  meta: {
    source: string;
    line: number;
    turns: number;
    tool_calls: number;
    tools: string[];
    success?: boolean;
    /** The trace's token record was dropped: PII scrubbing changed the text, and the ids would still hold it. */
    tokens_dropped?: "pii";
  };
  /** The trace's token ids and logprobs per assistant turn (a benchmax results.jsonl line's `tokens`), kept as is. */
  tokens?: TurnTokens[];
  /** Turns of `tokens` whose prompt ids do not extend the previous prompt + completion (re-tokenization drift). */
  token_drift?: number[];
}

export interface TraceError {
  line: number;
  field?: string;
  message: string;
}

export interface TracesOptions {
  /** Keep only traces flagged successful (`success`, `metadata.success`, or `status`/`outcome`). */
  requireSuccess?: boolean;
  /** Keep traces with at least / at most this many assistant turns. */
  minTurns?: number;
  maxTurns?: number;
  /** Replace emails, phone numbers, API keys and card numbers. Default true. */
  scrubPii?: boolean;
  /** Share of rows sent to the eval split by a stable hash of the row id. Default 0. */
  evalFraction?: number;
  /** Salt of the split hash (change it to draw another split). */
  seed?: string;
  /** Keep the trace's own system messages in `messages` (default: dropped, the env brings its own). */
  keepSystem?: boolean;
  /** The file name used in error messages and row metadata. */
  source?: string;
}

export interface TracesStats {
  lines: number;
  converted: number;
  train: number;
  eval: number;
  bad: number;
  filtered: { success: number; turns: number; no_answer: number; duplicate: number };
  pii: PiiCounts;
}

export interface TracesResult {
  train: TraceRow[];
  eval: TraceRow[];
  errors: TraceError[];
  stats: TracesStats;
}

class LineError extends Error {
  constructor(
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

const ROLES = new Set(["system", "user", "assistant", "tool", "developer", "function"]);

function isObj(x: unknown): x is Record<string, unknown> {
  return !!x && typeof x === "object" && !Array.isArray(x);
}

/** Check one chat message in the OpenAI shape; `field` names its path in the error. */
function checkMessage(m: unknown, field: string): Message {
  if (!isObj(m)) throw new LineError("a message must be an object", field);
  if (typeof m.role !== "string" || !ROLES.has(m.role)) {
    throw new LineError(
      `role must be one of system, user, assistant, tool (got ${JSON.stringify(m.role)})`,
      `${field}.role`,
    );
  }
  const c = m.content;
  if (!(c === null || c === undefined || typeof c === "string" || Array.isArray(c))) {
    throw new LineError("content must be a string, an array of parts or null", `${field}.content`);
  }
  if (m.tool_calls !== undefined) {
    if (!Array.isArray(m.tool_calls)) throw new LineError("tool_calls must be an array", `${field}.tool_calls`);
    m.tool_calls.forEach((tc, j) => {
      const f = `${field}.tool_calls[${j}]`;
      if (!isObj(tc) || !isObj(tc.function))
        throw new LineError("a tool call needs a function object", `${f}.function`);
      if (typeof tc.function.name !== "string" || !tc.function.name) {
        throw new LineError("a tool call needs a function name", `${f}.function.name`);
      }
      const args = tc.function.arguments;
      if (typeof args !== "string" && !isObj(args)) {
        throw new LineError("arguments must be a JSON string or an object", `${f}.function.arguments`);
      }
    });
  }
  const role = m.role === "developer" ? "system" : m.role === "function" ? "tool" : m.role;
  const out: Record<string, unknown> = { ...m, role, content: c ?? (role === "assistant" ? null : "") };
  if (Array.isArray(m.tool_calls)) {
    out.tool_calls = m.tool_calls.map((tc: Record<string, any>, j: number) => ({
      id: typeof tc.id === "string" ? tc.id : `call_${j}`,
      type: "function",
      function: {
        name: tc.function.name,
        arguments:
          typeof tc.function.arguments === "string" ? tc.function.arguments : JSON.stringify(tc.function.arguments),
      },
    }));
  }
  return out as unknown as Message;
}

function checkMessages(x: unknown, field: string): Message[] {
  if (!Array.isArray(x)) throw new LineError("must be an array of chat messages", field);
  if (x.length === 0) throw new LineError("must not be empty", field);
  return x.map((m, i) => checkMessage(m, `${field}[${i}]`));
}

/** A prompt-side value: a string, chat messages, or `{messages}`. */
function promptSide(x: unknown, field: string): Message[] {
  if (typeof x === "string") {
    if (!x.trim()) throw new LineError("must not be empty", field);
    return [{ role: "user", content: x }];
  }
  if (isObj(x) && x.messages !== undefined) return checkMessages(x.messages, `${field}.messages`);
  if (isObj(x) && typeof x.input === "string") return promptSide(x.input, `${field}.input`);
  return checkMessages(x, field);
}

/** A completion-side value: a string, one assistant message, `{content}`, or chat messages. */
function completionSide(x: unknown, field: string): Message[] {
  if (typeof x === "string") return [{ role: "assistant", content: x }];
  if (isObj(x) && x.messages !== undefined) return checkMessages(x.messages, `${field}.messages`);
  if (isObj(x) && typeof x.output === "string") return [{ role: "assistant", content: x.output }];
  if (isObj(x) && !("role" in x) && (typeof x.content === "string" || x.content === null)) {
    return [{ role: "assistant", content: (x.content as string | null) ?? null }];
  }
  if (isObj(x)) return [checkMessage(x, field)];
  if (x === null || x === undefined) throw new LineError("is missing", field);
  return checkMessages(x, field);
}

function successFlag(row: Record<string, unknown>): boolean | undefined {
  if (typeof row.success === "boolean") return row.success;
  const meta = row.metadata;
  if (isObj(meta) && typeof meta.success === "boolean") return meta.success;
  for (const k of ["status", "outcome"]) {
    const v = row[k] ?? (isObj(meta) ? meta[k] : undefined);
    if (typeof v === "string")
      return /^(success|succeeded|successful|completed|complete|ok|pass|passed|resolved)$/i.test(v);
  }
  return undefined;
}

function traceId(row: Record<string, unknown>, line: string): string {
  for (const k of ["id", "trace_id", "traceId", "_id", "run_id"]) {
    const v = row[k];
    if (typeof v === "string" || typeof v === "number") return String(v);
  }
  return `trace-${createHash("sha256").update(line).digest("hex").slice(0, 16)}`;
}

interface ParsedTrace {
  id: string;
  conversation: Message[];
  success?: boolean;
  tokens?: TurnTokens[];
}

/** A results.jsonl line's `tokens`: each entry checked (integer ids, a turn index); a malformed one is a line error. */
function parseTokens(x: unknown): TurnTokens[] | undefined {
  if (x === undefined) return undefined;
  if (!Array.isArray(x)) throw new LineError("tokens must be an array of per-turn token records", "tokens");
  return x.map((t, i) => {
    const ok = validTurnTokens(t);
    const turn = isObj(t) ? t.turn : undefined;
    if (!ok || typeof turn !== "number" || !Number.isInteger(turn) || turn < 0) {
      throw new LineError(
        "a token record needs a turn index and integer prompt_token_ids and completion_token_ids",
        `tokens[${i}]`,
      );
    }
    return { turn, ...ok };
  });
}

function parseTrace(row: unknown, line: string): ParsedTrace {
  if (!isObj(row)) throw new LineError("a trace must be a JSON object");
  const id = traceId(row, line);
  const success = successFlag(row);
  if (row.messages !== undefined) {
    const tokens = parseTokens(row.tokens);
    return { id, success, conversation: checkMessages(row.messages, "messages"), ...(tokens ? { tokens } : {}) };
  }
  if (row.input !== undefined || row.output !== undefined) {
    if (row.input === undefined) throw new LineError('an {input, output} trace needs "input"', "input");
    if (row.output === undefined) throw new LineError('an {input, output} trace needs "output"', "output");
    return { id, success, conversation: [...promptSide(row.input, "input"), ...completionSide(row.output, "output")] };
  }
  if (row.prompt !== undefined || row.completion !== undefined) {
    if (row.prompt === undefined) throw new LineError('a {prompt, completion} trace needs "prompt"', "prompt");
    if (row.completion === undefined)
      throw new LineError('a {prompt, completion} trace needs "completion"', "completion");
    return {
      id,
      success,
      conversation: [...promptSide(row.prompt, "prompt"), ...completionSide(row.completion, "completion")],
    };
  }
  throw new LineError('unknown trace shape: expected "messages", {input, output} or {prompt, completion}');
}

/** Convert the text of a traces JSONL file into training rows (pure; see `generateFromTraces` for files). */
export function convertTraces(text: string, options: TracesOptions = {}): TracesResult {
  const source = options.source ?? "traces.jsonl";
  const scrubber = options.scrubPii === false ? undefined : new PiiScrubber();
  const fraction = options.evalFraction ?? 0;
  if (!(fraction >= 0 && fraction <= 1)) throw new UsageError(`eval fraction must be in [0, 1], got ${fraction}`);
  const stats: TracesStats = {
    lines: 0,
    converted: 0,
    train: 0,
    eval: 0,
    bad: 0,
    filtered: { success: 0, turns: 0, no_answer: 0, duplicate: 0 },
    pii: scrubber ? scrubber.counts : { email: 0, phone: 0, api_key: 0, card: 0 },
  };
  const out: TracesResult = { train: [], eval: [], errors: [], stats };
  const seen = new Set<string>();
  for (const l of jsonlLines(text)) {
    stats.lines++;
    const lineNo = l.line;
    let parsed: ParsedTrace;
    try {
      if (l.error) throw new LineError(`not valid JSON (${l.error.message})`);
      parsed = parseTrace(l.value, l.text);
    } catch (e) {
      if (!(e instanceof LineError)) throw e;
      stats.bad++;
      out.errors.push({ line: lineNo, ...(e.field ? { field: e.field } : {}), message: e.message });
      continue;
    }
    if (options.requireSuccess && parsed.success !== true) {
      stats.filtered.success++;
      continue;
    }
    const conv = parsed.conversation;
    const firstAssistant = conv.findIndex((m) => m.role === "assistant");
    const context = (firstAssistant === -1 ? conv : conv.slice(0, firstAssistant)).filter(
      (m) => options.keepSystem || m.role !== "system",
    );
    if (!context.some((m) => m.role === "user")) {
      stats.bad++;
      out.errors.push({ line: lineNo, message: "the trace has no user message before the first assistant turn" });
      continue;
    }
    const assistants = conv.filter((m) => m.role === "assistant");
    const last = assistants[assistants.length - 1];
    const finalText = last && !last.tool_calls?.length ? textOf(last.content).trim() : "";
    if (!finalText) {
      stats.filtered.no_answer++;
      continue;
    }
    const turns = assistants.length;
    if (
      (options.minTurns !== undefined && turns < options.minTurns) ||
      (options.maxTurns !== undefined && turns > options.maxTurns)
    ) {
      stats.filtered.turns++;
      continue;
    }
    const toolNames = assistants.flatMap((m) => (m.tool_calls ?? []).map((tc) => tc.function.name));
    const groundTruth = extractAnswer(finalText) ?? finalText;
    let row: TraceRow = {
      id: parsed.id,
      ...(context.length === 1 && typeof context[0]!.content === "string"
        ? { prompt: context[0]!.content as string }
        : { messages: context }),
      ground_truth: groundTruth,
      meta: {
        source,
        line: lineNo,
        turns,
        tool_calls: toolNames.length,
        tools: [...new Set(toolNames)],
        ...(parsed.success !== undefined ? { success: parsed.success } : {}),
      },
    };
    let tokens = parsed.tokens;
    if (scrubber) {
      const before = tokens ? JSON.stringify(parsed.conversation) : "";
      row = {
        ...row,
        ...scrubber.scrubDeep({ prompt: row.prompt, messages: row.messages, ground_truth: row.ground_truth }),
      };
      if (row.prompt === undefined) delete row.prompt;
      if (row.messages === undefined) delete row.messages;
      // the ids encode the whole conversation's text: keep them only when scrubbing it would change nothing
      if (tokens && JSON.stringify(new PiiScrubber().scrubDeep(parsed.conversation)) !== before) {
        tokens = undefined;
        row.meta.tokens_dropped = "pii";
      }
    }
    if (tokens) {
      row.tokens = tokens;
      row.token_drift = tokenDriftTurns(tokens);
    }
    const key = JSON.stringify([row.prompt ?? row.messages, row.ground_truth]);
    if (seen.has(key)) {
      stats.filtered.duplicate++;
      continue;
    }
    seen.add(key);
    stats.converted++;
    if (stableSplit(row.id, fraction, options.seed) === "eval") {
      out.eval.push(row);
      stats.eval++;
    } else {
      out.train.push(row);
      stats.train++;
    }
  }
  return out;
}

export interface GenerateTracesOptions extends TracesOptions {
  in: string;
  out: string;
  /** Where the eval split goes (default: `<out>` with `.eval.jsonl`); only written when evalFraction > 0. */
  evalOut?: string;
}

export function defaultEvalPath(out: string): string {
  return out.endsWith(".jsonl") ? `${out.slice(0, -".jsonl".length)}.eval.jsonl` : `${out}.eval.jsonl`;
}

const toJsonl = (rows: unknown[]) => rows.map((r) => `${JSON.stringify(r)}\n`).join("");

/** Read a traces file, convert it, write the train rows (and the eval split). Bad lines are returned, not thrown. */
export async function generateFromTraces(options: GenerateTracesOptions): Promise<TracesResult & { evalOut?: string }> {
  let text: string;
  try {
    text = await readFile(options.in, "utf8");
  } catch (e) {
    throw new UsageError(`cannot read traces file ${options.in}: ${(e as Error).message}`);
  }
  const result = convertTraces(text, { ...options, source: options.source ?? options.in });
  await writeFile(options.out, toJsonl(result.train));
  if ((options.evalFraction ?? 0) > 0) {
    const evalOut = options.evalOut ?? defaultEvalPath(options.out);
    await writeFile(evalOut, toJsonl(result.eval));
    return { ...result, evalOut };
  }
  return result;
}
