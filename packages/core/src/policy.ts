import type { TurnTokens } from "./rollout-result.js";
import type { AssistantMessage, Message, Task, ToolSpec, Usage } from "./types.js";

export type ToolFormat = "openai" | "hermes";

export interface PolicyInput {
  messages: Message[];
  tools: ToolSpec[];
  task: Task;
  rolloutId: string;
  /** How tool calls travel: native `tool_calls`, or Hermes `<tool_call>` text in `content`. */
  toolFormat: ToolFormat;
  /** Zero-based turn index. */
  turn: number;
  signal?: AbortSignal;
}

export interface PolicyReply {
  message: AssistantMessage;
  usage?: Usage;
  finishReason?: string;
  /** The turn's prompt and completion token ids (and logprobs), when the endpoint returned them. */
  tokens?: Omit<TurnTokens, "turn">;
}

/** A policy maps a conversation to the next assistant message. Throw InfraError for endpoint failures. */
export interface Policy {
  readonly name: string;
  /** Reads the gold answer; the CLI refuses it on non-fixture data without --allow-oracle. */
  readonly oracle?: boolean;
  act(input: PolicyInput): Promise<PolicyReply>;
  close?(): Promise<void>;
}
