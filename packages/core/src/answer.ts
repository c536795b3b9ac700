/** Answer extraction helpers shared by envs. */
import { hasHermesCall, parseHermes } from "./hermes.js";
import type { Message } from "./types.js";
import { textOf } from "./types.js";

/**
 * A reply's text with its Hermes `<tool_call>…</tool_call>` blocks removed (an unclosed last block runs to the end):
 * text inside a tool call is never the final answer. OpenAI `tool_calls` never are in the text, so both formats agree.
 */
export function stripToolCallText(text: string): string {
  return hasHermesCall(text) ? parseHermes(text).content : text;
}

/**
 * The model's final answer text: the last assistant message's text, tool-call blocks removed ({@link stripToolCallText});
 * "" when there is no assistant message. Every reward reads the completion through this.
 */
export function finalAnswerText(messages: readonly Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "assistant") return stripToolCallText(textOf(m.content));
  }
  return "";
}

/** The text of the last `<answer>…</answer>` (or `<tag>…</tag>`) block, trimmed; undefined when there is none. */
export function extractTag(text: string, tag = "answer"): string | undefined {
  const open = `<${tag}>`;
  const close = `</${tag}>`;
  const end = text.lastIndexOf(close);
  if (end < 0) return undefined;
  const start = text.lastIndexOf(open, end);
  if (start < 0) return undefined;
  return text.slice(start + open.length, end).trim();
}

export const extractAnswer = (text: string): string | undefined => extractTag(text, "answer");

/**
 * The last `\boxed{…}` or `\fbox{…}` of a text including the command, with nested braces balanced
 * (`\boxed{\frac{1}{2}}`); undefined when there is none or its braces never close.
 */
export function lastBoxedString(text: string): string | undefined {
  let idx = text.lastIndexOf("\\boxed");
  if (idx < 0) idx = text.lastIndexOf("\\fbox");
  if (idx < 0) return undefined;
  let depth = 0;
  for (let i = idx; i < text.length; i++) {
    const ch = text[i];
    if (ch === "{") depth++;
    else if (ch === "}") {
      depth--;
      if (depth === 0) return text.slice(idx, i + 1);
    }
  }
  return undefined;
}

/** The content of the last `\boxed{…}` / `\fbox{…}`; undefined when there is none. */
export function lastBoxed(text: string): string | undefined {
  const s = lastBoxedString(text);
  if (s === undefined) return undefined;
  const open = s.indexOf("{");
  if (open < 0) return undefined;
  return s.slice(open + 1, -1);
}
