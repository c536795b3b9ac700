import { createReadStream } from "node:fs";
import { open, readFile, stat } from "node:fs/promises";
import { createInterface } from "node:readline";
import { z } from "zod/v4";
import { DatasetError } from "./errors.js";
import { jsonlLines } from "./run-dir/jsonl.js";
import type { Message, Task } from "./types.js";

/** One raw row with where it came from (`file:line` for JSONL, `file[index]` for a JSON array). */
export interface RawRow {
  row: unknown;
  where: string;
  /** 1-based line (JSONL) or 0-based index (JSON array). */
  line: number;
}

/** Read rows from a .jsonl file (one JSON value a line) or a .json file (an array, or {data: [...]}). */
export async function readRows(path: string): Promise<RawRow[]> {
  await assertRegularFile(path);
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    throw new DatasetError(
      `cannot read dataset file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      path,
    );
  }
  return parseRowsText(text, path);
}

export function parseRowsText(text: string, path: string): RawRow[] {
  const trimmed = text.replace(/^\uFEFF/, "").trimStart();
  const looksLikeArray = trimmed.startsWith("[");
  if (path.endsWith(".json") || looksLikeArray) {
    let value: unknown;
    try {
      value = JSON.parse(trimmed);
    } catch (e) {
      if (!path.endsWith(".json")) return parseJsonl(text, path);
      throw new DatasetError(`malformed JSON: ${(e as Error).message}`, path);
    }
    const arr = Array.isArray(value)
      ? value
      : value && typeof value === "object" && Array.isArray((value as { data?: unknown }).data)
        ? (value as { data: unknown[] }).data
        : undefined;
    if (!arr) {
      // a single object in a .json file is one row
      return [{ row: value, where: `${path}[0]`, line: 0 }];
    }
    return arr.map((row, i) => ({ row, where: `${path}[${i}]`, line: i }));
  }
  return parseJsonl(text, path);
}

/**
 * JSONL rows, a line each (blank lines skipped). A malformed line throws a DatasetError naming it, or, given
 * `onBad`, is reported there and skipped.
 */
function parseJsonl(
  text: string,
  path: string,
  onBad?: (where: string, line: number, message: string) => void,
): RawRow[] {
  const out: RawRow[] = [];
  for (const l of jsonlLines(text)) {
    const where = `${path}:${l.line}`;
    if (!l.error) {
      out.push({ row: l.value, where, line: l.line });
      continue;
    }
    const message = `malformed JSON line: ${l.error.message}`;
    if (!onBad) throw new DatasetError(message, where);
    onBad(where, l.line, message);
  }
  return out;
}

/** Validate a row against a zod schema; the error names where and the first bad field. */
export function parseWithSchema<S extends z.ZodType>(schema: S, row: unknown, where?: string): z.infer<S> {
  const res = schema.safeParse(row);
  if (res.success) return res.data;
  const issue = res.error.issues[0]!;
  const field = issue.path.length ? issue.path.map(String).join(".") : "(row)";
  const more = res.error.issues.length > 1 ? ` (+${res.error.issues.length - 1} more)` : "";
  throw new DatasetError(`${issue.message}${more}`, where, field);
}

const messageSchema = z
  .object({
    role: z.enum(["system", "user", "assistant", "tool"]),
    content: z.union([z.string(), z.array(z.any()), z.null()]),
  })
  .passthrough();

/** The plain rows users bring: `{prompt, ground_truth}` or `{messages, ground_truth}` (an optional `id`). */
export const plainRowSchema = z
  .object({
    id: z.union([z.string(), z.number()]).optional(),
    prompt: z.string().min(1).optional(),
    messages: z.array(messageSchema).min(1).optional(),
    ground_truth: z.unknown(),
  })
  .passthrough()
  .refine((r) => r.prompt !== undefined || r.messages !== undefined, {
    message: 'a row needs "prompt" (a string) or "messages" (chat messages)',
    path: ["prompt"],
  })
  .refine((r) => r.ground_truth !== undefined, { message: 'a row needs "ground_truth"', path: ["ground_truth"] });

export function isPlainRow(row: unknown): boolean {
  return !!row && typeof row === "object" && "ground_truth" in row && ("prompt" in row || "messages" in row);
}

/** Convert a plain row to a Task. */
export function parsePlainRow(row: unknown, where?: string, fallbackId?: string): Task {
  const r = parseWithSchema(plainRowSchema, row, where);
  const id = r.id !== undefined ? String(r.id) : (fallbackId ?? where ?? "row");
  const { id: _i, prompt, messages, ground_truth, ...rest } = r as Record<string, unknown>;
  return {
    id,
    ...(prompt !== undefined ? { prompt: prompt as string } : {}),
    ...(messages !== undefined ? { messages: messages as Message[] } : {}),
    groundTruth: ground_truth,
    meta: rest,
  };
}

/** Load a dataset file with a row parser (e.g. `env.parseTask`); rows without an id get `file:line`. */
export async function loadTasksFromFile<T extends Task>(
  path: string,
  parse: (row: unknown, where: string) => T,
  options: { limit?: number } = {},
): Promise<T[]> {
  const rows = await readRows(path);
  const limited = options.limit !== undefined ? rows.slice(0, options.limit) : rows;
  return limited.map((r) => parse(r.row, r.where));
}

export interface ValidationReport {
  file: string;
  total: number;
  valid: number;
  invalid: number;
  errors: Array<{ where: string; line: number; field?: string; message: string }>;
}

/**
 * Check every row of a dataset file: malformed JSON lines and rows `parse` rejects alike, each with its file:line,
 * the whole file read (never stopping at the first bad line); duplicate task ids are errors too. Errors are collected,
 * not thrown, sorted by line; `maxErrors` 0 keeps them all. An unreadable file is a DatasetError.
 */
export async function validateRows(
  path: string,
  parse: (row: unknown, where: string) => unknown,
  maxErrors = 20,
): Promise<ValidationReport> {
  await assertRegularFile(path);
  const report: ValidationReport = { file: path, total: 0, valid: 0, invalid: 0, errors: [] };
  const fail = (where: string, line: number, message: string, field?: string) => {
    report.invalid++;
    if (maxErrors === 0 || report.errors.length < maxErrors) {
      report.errors.push({ where, line, ...(field ? { field } : {}), message });
    }
  };
  // first line of each task id, to name both rows of a duplicate
  const ids = new Map<string, number>();
  const check = (r: RawRow) => {
    report.total++;
    try {
      const task = parse(r.row, r.where) as Partial<Task> | undefined;
      const id = task && typeof task === "object" && typeof task.id === "string" ? task.id : undefined;
      if (id !== undefined) {
        const first = ids.get(id);
        if (first !== undefined) {
          throw new DatasetError(`duplicate task id "${id}" (first at ${whereOf(path, first, isJson)})`, r.where, "id");
        }
        ids.set(id, r.line);
      }
      report.valid++;
    } catch (e) {
      const field = (e as Partial<DatasetError>).field;
      fail(r.where, r.line, e instanceof Error ? e.message : String(e), typeof field === "string" ? field : undefined);
    }
  };
  const isJson = path.endsWith(".json") || (await firstChar(path)) === "[";
  if (isJson) {
    // a JSON document is parsed whole (its rows are one value); rows are checked one by one, never spread
    let rows: RawRow[];
    try {
      rows = parseRowsText(await readFile(path, "utf8"), path);
    } catch (e) {
      report.total = 1;
      fail(path, 0, e instanceof Error ? e.message : String(e));
      return report;
    }
    for (const r of rows) check(r);
  } else {
    // JSONL, streamed a line at a time (memory: one line, plus the set of ids); every malformed line is reported
    const lines = createInterface({ input: createReadStream(path, { encoding: "utf8" }), crlfDelay: Infinity });
    let n = 0;
    for await (const raw of lines) {
      n++;
      const line = (n === 1 ? raw.replace(/^\uFEFF/, "") : raw).trim();
      if (!line) continue;
      const where = `${path}:${n}`;
      let row: unknown;
      try {
        row = JSON.parse(line);
      } catch (e) {
        report.total++;
        fail(where, n, `malformed JSON line: ${(e as Error).message}`);
        continue;
      }
      check({ row, where, line: n });
    }
  }
  report.errors.sort((a, b) => a.line - b.line);
  return report;
}

function whereOf(path: string, line: number, json: boolean): string {
  return json ? `${path}[${line}]` : `${path}:${line}`;
}

/**
 * A dataset must be a regular file: a FIFO with no writer would block the read forever, a device never ends, and a
 * folder is no file. Unreadable and missing files are DatasetErrors too.
 */
export async function assertRegularFile(path: string): Promise<void> {
  let st: Awaited<ReturnType<typeof stat>>;
  try {
    st = await stat(path);
  } catch (e) {
    throw new DatasetError(
      `cannot read dataset file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      path,
    );
  }
  if (!st.isFile()) {
    const kind = st.isFIFO()
      ? "a named pipe (FIFO)"
      : st.isDirectory()
        ? "a folder"
        : st.isSocket()
          ? "a socket"
          : "a device or special file";
    throw new DatasetError(`cannot read dataset file: it is ${kind}, not a regular file`, path);
  }
}

/** The first non-blank character of a file (after a BOM), read from its first 64 KiB. */
async function firstChar(path: string): Promise<string> {
  const fh = await open(path, "r");
  try {
    const buf = Buffer.alloc(65536);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf
      .subarray(0, bytesRead)
      .toString("utf8")
      .replace(/^\uFEFF/, "")
      .trimStart()
      .charAt(0);
  } finally {
    await fh.close();
  }
}
