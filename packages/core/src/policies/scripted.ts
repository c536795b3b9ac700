import { InfraError } from "../errors.js";
import { renderHermesCall } from "../hermes.js";
import type { Policy, PolicyInput, ToolFormat } from "../policy.js";
import type { AssistantMessage, Message, Task } from "../types.js";
import { textOf } from "../types.js";

export interface PlannedCall {
  name: string;
  arguments: Record<string, unknown>;
}

/** An assistant message calling tools, in the rollout's tool format. */
export function toolCallMessage(calls: PlannedCall[], format: ToolFormat, turn = 0, text = ""): AssistantMessage {
  if (format === "openai") {
    return {
      role: "assistant",
      content: text || null,
      tool_calls: calls.map((c, i) => ({
        id: `call_${turn}_${i}`,
        type: "function",
        function: { name: c.name, arguments: JSON.stringify(c.arguments) },
      })),
    };
  }
  const body = calls.map(renderHermesCall).join("\n");
  return { role: "assistant", content: text ? `${text}\n${body}` : body };
}

/** A final assistant message (no tool call). */
export function answerMessage(text: string): AssistantMessage {
  return { role: "assistant", content: text };
}

/** The tool results that answered the last assistant message, in order. */
export function lastToolResults(messages: Message[]): string[] {
  const out: string[] = [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== "tool") break;
    out.unshift(textOf(m.content));
  }
  return out;
}

export type ScriptStep<T extends Task> = (
  input: PolicyInput & { task: T },
) =>
  | { calls: PlannedCall[]; text?: string }
  | { answer: string }
  | Promise<{ calls: PlannedCall[]; text?: string } | { answer: string }>;

/**
 * A scripted policy: each turn, `step` decides the next tool calls or the final answer from the conversation.
 * Reference policies are written with it; `oracle: true` marks one that reads the gold answer.
 */
export function scriptedPolicy<T extends Task>(
  name: string,
  step: ScriptStep<T>,
  options: { oracle?: boolean } = {},
): Policy {
  return {
    name,
    ...(options.oracle ? { oracle: true } : {}),
    async act(input) {
      let next: Awaited<ReturnType<ScriptStep<T>>>;
      try {
        next = await step(input as PolicyInput & { task: T });
      } catch (e) {
        throw new InfraError(`${name} policy failed on task ${input.task.id}: ${(e as Error).message}`, {
          cause: e,
          retryable: false,
        });
      }
      if ("answer" in next) return { message: answerMessage(next.answer) };
      return { message: toolCallMessage(next.calls, input.toolFormat, input.turn, next.text) };
    },
  };
}
