import {
  type AssistantMessage,
  type Message,
  type RolloutResult,
  RunDir,
  resultRolloutId,
  UsageError,
} from "@benchmax/core";
import type { GateSummary } from "./compare-runs.js";
import { assertRunFilesInside, DEFAULT_MAX_LINE_BYTES } from "./run-files.js";
import { toolCallNames } from "./tool-calls.js";
import type { TranscriptRef, TranscriptStore } from "./transcripts.js";

export { forEachJsonLine } from "@benchmax/core";

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
  /** Lines of results.jsonl over `maxLineBytes`, skipped unread: their number and size. */
  tooLarge?: { file: string; line: number; bytes: number }[];
}

export interface LoadRunOptions {
  /** Stream each rollout's conversation into this store (call its `finish()` after). */
  transcripts?: TranscriptStore;
  /** Keep only the tool calls' names of each conversation (the report's rows need no more). */
  dropMessages?: boolean;
  /**
   * The most bytes one results line may hold (default 16 MiB). A longer line is skipped as it is read, never decoded
   * or parsed, and listed in `tooLarge`: one huge line can't hold the report for minutes or fill the memory.
   */
  maxLineBytes?: number;
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
export const rolloutIdOf = (r: RolloutResult): string => resultRolloutId(r);

/**
 * Read a run dir (`results.jsonl`, `summary.json`, `run.json`) through core's RunDir, the way `benchmax compare`
 * reads it, so the report judges the same numbers: the last result of each rollout id counts (a retried rollout
 * once); without summary.json (a killed run) the summary is recomputed from the results and the run is marked
 * incomplete. A dir without results is a UsageError naming the path.
 */
export function loadRun(dir: string, options: LoadRunOptions = {}): LoadedRun {
  const rd = RunDir.open(dir);
  if (!rd.hasResults()) {
    throw new UsageError(`${dir} is not a run dir: no results.jsonl (run \`benchmax eval <env> --out ${dir}\` first)`);
  }
  assertRunFilesInside(dir);
  const store = options.transcripts;
  const refs = new Map<string, TranscriptRef>();
  const tooLarge: { file: string; line: number; bytes: number }[] = [];
  const maxLineBytes = options.maxLineBytes ?? DEFAULT_MAX_LINE_BYTES;
  if (!(Number.isFinite(maxLineBytes) && maxLineBytes > 0))
    throw new UsageError(`maxLineBytes must be a number > 0, got ${maxLineBytes}`);
  const results = rd.results(
    (r) => {
      if (store) refs.set(rolloutIdOf(r), store.add(r));
      return options.dropMessages ? { ...r, messages: skeleton(Array.isArray(r.messages) ? r.messages : []) } : r;
    },
    { maxLineBytes, onTooLarge: (line, bytes) => tooLarge.push({ file: rd.resultsPath, line, bytes }) },
  );
  if (results.length === 0) {
    throw new UsageError(
      tooLarge.length
        ? `${rd.resultsPath} holds no result the report can read: ${tooLarge.map((t) => `line ${t.line} (${t.bytes.toLocaleString("en-US")} bytes)`).join(", ")} over the ${maxLineBytes.toLocaleString("en-US")}-byte limit a line may hold`
        : `${rd.resultsPath} holds no results`,
    );
  }
  const summary = rd.readSummary(results);
  return {
    dir,
    results,
    summary,
    ...(store ? { transcripts: { store, refs } } : {}),
    ...(tooLarge.length ? { tooLarge } : {}),
  };
}
