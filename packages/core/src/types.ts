/** Chat messages in the OpenAI chat.completions shape, tools, tasks. */
import type { z } from "zod/v4";
import type {
  AssistantMessageSchema,
  ContentPartSchema,
  ImagePartSchema,
  JsonSchemaSchema,
  MessageSchema,
  RewardComponentsSchema,
  RewardExplanationSchema,
  SystemMessageSchema,
  TaskSchema,
  TextPartSchema,
  ToolCallRequestSchema,
  ToolCallSchema,
  ToolMessageSchema,
  ToolResultSchema,
  ToolSpecSchema,
  UsageSchema,
  UserMessageSchema,
} from "./schemas.js";

// The types come from the zod schemas in schemas.ts (the single source of truth for wire shapes).

export type TextPart = z.infer<typeof TextPartSchema>;
export type ImagePart = z.infer<typeof ImagePartSchema>;
export type ContentPart = z.infer<typeof ContentPartSchema>;
export type ToolCall = z.infer<typeof ToolCallSchema>;
export type SystemMessage = z.infer<typeof SystemMessageSchema>;
export type UserMessage = z.infer<typeof UserMessageSchema>;
export type AssistantMessage = z.infer<typeof AssistantMessageSchema>;
export type ToolMessage = z.infer<typeof ToolMessageSchema>;
export type Message = z.infer<typeof MessageSchema>;

/** A JSON Schema object (draft 2020-12 / OpenAI function parameters). */
export type JsonSchema = z.infer<typeof JsonSchemaSchema>;
/** A tool as the model sees it: the OpenAI function shape. */
export type ToolSpec = z.infer<typeof ToolSpecSchema>;
/** A parsed request to run a tool. `arguments` is already decoded JSON. */
export type ToolCallRequest = z.infer<typeof ToolCallRequestSchema>;
/** What a tool returns. Errors the model should see are `isError: true`, never a throw. */
export type ToolResult = z.infer<typeof ToolResultSchema>;

/** One dataset row after preprocessing (`TaskSchema`), with a typed `groundTruth`. It never reaches the model. */
export type Task<G = unknown> = Omit<z.infer<typeof TaskSchema>, "groundTruth"> & { groundTruth: G };

/** Named reward components, e.g. `{ exact_match: 1, f1: 0.8 }`. Every value must be finite. */
export type RewardComponents = z.infer<typeof RewardComponentsSchema>;
export type Usage = z.infer<typeof UsageSchema>;
/** An env's explanation of a reward: the extracted answer, the gold, what differed (reports only). */
export type RewardExplanation = z.infer<typeof RewardExplanationSchema>;

export function textOf(content: string | ContentPart[] | null | undefined): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content
    .filter((p): p is TextPart => p.type === "text")
    .map((p) => p.text)
    .join("");
}
