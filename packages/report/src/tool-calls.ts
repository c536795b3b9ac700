import type { AssistantMessage } from "@benchmax/core";

const HERMES_CALL = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

/** The tools an assistant message calls: OpenAI `tool_calls`, or Hermes `<tool_call>` blocks in its text. */
export function toolCallNames(m: AssistantMessage): string[] {
  if (m.tool_calls?.length) return m.tool_calls.map((c) => c.function?.name ?? "?");
  if (typeof m.content !== "string" || !m.content.includes("<tool_call>")) return [];
  const names: string[] = [];
  for (const match of m.content.matchAll(HERMES_CALL)) {
    try {
      const call = JSON.parse(match[1]!) as { name?: unknown };
      names.push(typeof call.name === "string" ? call.name : "?");
    } catch {
      names.push("(malformed call)");
    }
  }
  return names;
}
