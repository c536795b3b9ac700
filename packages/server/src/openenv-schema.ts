import type { Env } from "@benchmax/core";

/** OpenEnv `/schema`: JSON Schemas of the action, observation and state. */
export function schemaOf(env: Env): Record<string, unknown> {
  const toolNames = env.listTools().map((t) => t.name);
  return {
    action: {
      oneOf: [
        {
          type: "object",
          description: "The model's reply: Hermes <tool_call> blocks are run; a reply without one ends the episode",
          properties: { type: { const: "message" }, content: { type: "string" } },
          required: ["content"],
        },
        {
          type: "object",
          properties: {
            type: { const: "call_tool" },
            tool_name: { type: "string", enum: toolNames },
            arguments: { type: "object" },
          },
          required: ["type", "tool_name"],
        },
        { type: "object", properties: { type: { const: "list_tools" } }, required: ["type"] },
      ],
    },
    observation: {
      type: "object",
      properties: {
        messages: { type: "array" },
        tools: { type: "array" },
        tool_name: { type: "string" },
        result: { type: "string" },
        error: { type: "object" },
        tool_results: { type: "array" },
        rewards: { type: "object", additionalProperties: { type: "number" } },
      },
    },
    state: {
      type: "object",
      properties: {
        episode_id: { type: "string" },
        step_count: { type: "integer" },
        task_id: { type: "string" },
        tool_calls: { type: "integer" },
        done: { type: "boolean" },
        reward: { type: ["number", "null"] },
      },
      required: ["episode_id", "step_count"],
    },
  };
}
