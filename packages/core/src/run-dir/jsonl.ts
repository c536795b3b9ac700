import { closeSync, createReadStream, openSync, readSync } from "node:fs";
import { createInterface } from "node:readline";
import { StringDecoder } from "node:string_decoder";
import { UsageError } from "../errors.js";

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

/**
 * Call `fn` with each parsed line of a JSONL file, reading it a MiB at a time (a 20,000-rollout results file is never
 * one string). Blank lines are skipped; a torn last line (a crash mid-write) is skipped; any other malformed line is
 * a UsageError naming `path:line`.
 */
export function forEachJsonLine(path: string, fn: (value: unknown, line: number) => void): void {
  const fd = openSync(path, "r");
  const buf = Buffer.allocUnsafe(1 << 20);
  const decoder = new StringDecoder("utf8");
  const parse = jsonLineParser(path);
  const handle = (text: string) => {
    const got = parse(text);
    if (got) fn(got.value, got.line);
  };
  let carry = "";
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
