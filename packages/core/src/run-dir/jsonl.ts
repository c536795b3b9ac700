import { closeSync, createReadStream, openSync, readSync } from "node:fs";
import { createInterface } from "node:readline";
import { UsageError } from "../errors.js";

/** A non-blank line of a JSONL text: where it stands, its text, and its value or why it is not JSON. */
export type JsonlLine = {
  /** 1-based line number in the text. */
  line: number;
  /** The line, trimmed. */
  text: string;
  /** True on the last non-blank line: where a writer that crashed mid-line leaves a torn one. */
  last: boolean;
} & ({ value: unknown; error?: undefined } | { value?: undefined; error: Error });

/**
 * The non-blank lines of a JSONL text, each parsed, in order (blank lines are skipped). A line that is not JSON
 * comes with its parse error instead of a throw: whether that is fatal, reported or (as a torn last line) skipped is
 * the caller's to say.
 */
export function* jsonlLines(text: string): Generator<JsonlLine> {
  const lines = text.split("\n");
  let end = lines.length - 1;
  while (end >= 0 && !lines[end]!.trim()) end--;
  for (let i = 0; i <= end; i++) {
    const raw = lines[i]!.trim();
    if (!raw) continue;
    const at = { line: i + 1, text: raw, last: i === end };
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (e) {
      yield { ...at, error: e as Error };
      continue;
    }
    yield { ...at, value };
  }
}

/**
 * The line rule both readers share: blank lines skipped, a malformed line held back, fatal (a UsageError naming
 * `path:line`) only when another non-blank line follows it (a torn last line, a crash mid-write, is skipped).
 */
function jsonLineParser(path: string): (text: string) => { value: unknown; line: number } | undefined {
  let lineNo = 0;
  let pendingError: { line: number; message: string } | undefined;
  return (text) => {
    lineNo++;
    const line = text.trim();
    if (!line) return undefined;
    if (pendingError)
      throw new UsageError(`${path}:${pendingError.line}: malformed results line: ${pendingError.message}`);
    try {
      return { value: JSON.parse(line), line: lineNo };
    } catch (e) {
      pendingError = { line: lineNo, message: (e as Error).message };
      return undefined;
    }
  };
}

/** Options of {@link forEachJsonLine}. */
export interface JsonLinesOptions {
  /**
   * The most bytes one line may hold. A longer line is never decoded or parsed: its bytes are skipped as they are
   * read, and `onTooLarge` is told (without it, the line is a UsageError naming `path:line`). Default: no limit.
   */
  maxLineBytes?: number;
  /** Told of each line over `maxLineBytes` (its number and size in bytes), instead of failing. */
  onTooLarge?: (line: number, bytes: number) => void;
}

/**
 * Call `fn` with each parsed line of a JSONL file, reading it a MiB at a time (a 20,000-rollout results file is never
 * one string, and a line is scanned once however long it is). Blank lines are skipped; a torn last line (a crash
 * mid-write) is skipped; any other malformed line is a UsageError naming `path:line`. With `maxLineBytes`, a longer
 * line is skipped unread (see {@link JsonLinesOptions}).
 */
export function forEachJsonLine(
  path: string,
  fn: (value: unknown, line: number) => void,
  options: JsonLinesOptions = {},
): void {
  const max = options.maxLineBytes ?? Number.POSITIVE_INFINITY;
  const fd = openSync(path, "r");
  const buf = Buffer.allocUnsafe(1 << 20);
  const parse = jsonLineParser(path);
  // the current line's bytes so far, kept as pieces (joined once, at its end); dropped once it is over the limit
  let parts: Buffer[] = [];
  let bytes = 0;
  let lineNo = 0;
  const endLine = () => {
    lineNo++;
    if (bytes > max) {
      parse(""); // keep the parser's line count in step
      if (options.onTooLarge) options.onTooLarge(lineNo, bytes);
      else
        throw new UsageError(
          `${path}:${lineNo}: line of ${bytes.toLocaleString("en-US")} bytes, over the ${max.toLocaleString("en-US")}-byte limit a line may hold: not read`,
        );
    } else {
      const got = parse(parts.length === 1 ? parts[0]!.toString("utf8") : Buffer.concat(parts, bytes).toString("utf8"));
      if (got) fn(got.value, got.line);
    }
    parts = [];
    bytes = 0;
  };
  const take = (piece: Buffer) => {
    bytes += piece.length;
    if (bytes <= max) parts.push(Buffer.from(piece));
    else parts = [];
  };
  try {
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      let start = 0;
      for (let nl = buf.indexOf(10, start); nl >= 0 && nl < n; nl = buf.indexOf(10, start)) {
        take(buf.subarray(start, nl));
        endLine();
        start = nl + 1;
      }
      if (start < n) take(buf.subarray(start, n));
    }
    if (bytes > 0) endLine();
  } finally {
    closeSync(fd);
  }
}

/**
 * The parsed lines of a JSONL file, streamed (for a consumer that awaits between lines); the same rules as
 * `forEachJsonLine`: blank lines and a torn last line skipped, any other malformed line a UsageError naming it.
 */
export async function* readJsonLines(path: string): AsyncGenerator<{ value: unknown; line: number }> {
  const rl = createInterface({ input: createReadStream(path, { encoding: "utf8" }), crlfDelay: Infinity });
  const parse = jsonLineParser(path);
  try {
    for await (const text of rl) {
      const got = parse(text);
      if (got) yield got;
    }
  } finally {
    rl.close();
  }
}
