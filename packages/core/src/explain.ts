import type { Env } from "./env.js";
import { withTimeout } from "./timeout.js";
import type { Message, RewardExplanation, Task } from "./types.js";

/** Longest extracted/gold text kept in a result, and most diff lines. */
const MAX_TEXT = 2000;
const MAX_LINES = 20;
/** Most metadata fields copied onto a result, and the longest string value. */
const MAX_FIELDS = 16;
const MAX_VALUE = 200;
const EXPLAIN_MS = 10_000;

const cut = (s: string, n: number) => (s.length > n ? `${s.slice(0, n)}…` : s);

/** A task's scalar metadata (strings, finite numbers, booleans; bounded), or undefined when there is none. */
export function scalarMeta(
  meta: Record<string, unknown> | undefined,
): Record<string, string | number | boolean> | undefined {
  if (!meta || typeof meta !== "object") return undefined;
  const out: Record<string, string | number | boolean> = {};
  let n = 0;
  for (const [k, v] of Object.entries(meta)) {
    if (n >= MAX_FIELDS) break;
    if (typeof v === "string") out[k] = cut(v, MAX_VALUE);
    else if (typeof v === "boolean" || (typeof v === "number" && Number.isFinite(v))) out[k] = v;
    else continue;
    n++;
  }
  return n ? out : undefined;
}

/** Keep an explanation to its documented shape and size. */
export function boundExplanation(x: unknown): RewardExplanation | undefined {
  if (!x || typeof x !== "object") return undefined;
  const e = x as Record<string, unknown>;
  const out: RewardExplanation = {};
  if (e.extracted !== undefined && e.extracted !== null) out.extracted = cut(String(e.extracted), MAX_TEXT);
  if (e.gold !== undefined && e.gold !== null) out.gold = cut(String(e.gold), MAX_TEXT);
  if (Array.isArray(e.diff)) {
    const lines = e.diff.slice(0, MAX_LINES).map((l) => cut(String(l), MAX_VALUE));
    if (e.diff.length > MAX_LINES) lines.push(`… ${e.diff.length - MAX_LINES} more`);
    if (lines.length) out.diff = lines;
  }
  return Object.keys(out).length ? out : undefined;
}

/** The env's `explain` capability, bounded in time and size; undefined when the env has none or it fails. */
export async function explainBestEffort<T extends Task>(
  env: Env<T>,
  rolloutId: string,
  messages: Message[],
  task: T,
): Promise<RewardExplanation | undefined> {
  const explain = env.capabilities?.explain;
  if (!explain) return undefined;
  try {
    const raw = await withTimeout(
      Promise.resolve(explain.explainReward(rolloutId, messages, task)),
      EXPLAIN_MS,
      () => new Error("explainReward timed out"),
    );
    return boundExplanation(raw);
  } catch {
    return undefined;
  }
}
