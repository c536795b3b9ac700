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
