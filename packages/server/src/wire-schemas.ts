import { MessageSchema } from "@benchmax/core";
import { z } from "zod";

/**
 * The wire shapes of `benchmax serve`'s HTTP routes, as zod schemas: `/openapi.json` is generated from them
 * (`z.toJSONSchema`), route by route (routes.ts). The handlers check the same fields with error messages that name
 * the field (and OpenEnv's 422 `{detail}` items).
 */

const taskRef = {
  taskId: z.string().optional().describe("a dataset task by id"),
  task_id: z.string().optional().describe("the same, OpenEnv / SkyRL spelling"),
  task: z.unknown().optional().describe("an inline task: {id, prompt | messages, groundTruth} or a raw dataset row"),
  seed: z.number().int().min(0).nullable().optional().describe("picks the dataset task deterministically"),
};
const tags = {
  trainer_step: z.number().optional().describe("the trainer step (recorded with the rollout)"),
  group_id: z.string().optional().describe("the client's group id (recorded with the rollout)"),
  metadata: z.record(z.string(), z.unknown()).optional(),
};

export const CreateRolloutBody = z
  .object({
    ...taskRef,
    ...tags,
    maxTurns: z.number().int().min(1).max(10_000).optional(),
    session: z.string().optional().describe("an open MCP session (Mcp-Session-Id) to move onto the new rollout"),
  })
  .describe("{taskId} | {task} | {seed} | {} (the next task)");
export const CreatedRollout = z.object({
  rolloutId: z.string(),
  token: z.string().describe("the rollout's capability token: send it as X-Rollout-Token"),
  taskId: z.string(),
  systemPrompt: z.string(),
  idleTimeoutMs: z.number(),
  customActions: z.boolean(),
  maxTurns: z.number().optional(),
});
export const CallBody = z.object({
  name: z.string().min(1).describe("the tool name"),
  arguments: z.record(z.string(), z.unknown()).optional(),
  id: z.string().optional(),
});
export const ToolResultBody = z.object({
  content: z.union([z.string(), z.array(z.unknown())]),
  isError: z.boolean(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
export const RewardBody = z
  .union([
    z.object({ messages: z.array(MessageSchema).describe("the conversation the client kept") }),
    z.object({
      completion: z
        .string()
        .describe("the model's final text, scored after the conversation the model saw (system prompt with tools)"),
    }),
  ])
  .describe("what to score, once");
export const ScoreBody = z.object({
  reward: z.number(),
  rewards: z.record(z.string(), z.number()),
  passed: z.boolean(),
});
export const ForkBody = z.object({ n: z.number().int().min(1).max(1024).optional() });
export const ForkResult = z.object({ children: z.array(CreatedRollout) });
export const Released = z.object({ released: z.literal(true) });
export const GroupRewardBody = z.object({
  ...taskRef,
  members: z.array(
    z.object({
      rolloutId: z.string().optional(),
      messages: z.array(MessageSchema).optional(),
      rewards: z.record(z.string(), z.number()).optional(),
    }),
  ),
});
export const GroupRewardResult = z.object({
  rewards: z.array(z.record(z.string(), z.number())),
  combined: z.array(z.number()),
});

export const ResetBody = z.object({
  ...taskRef,
  ...tags,
  episode_id: z.string().max(255).nullable().optional().describe("the episode (rollout) id to use"),
});
export const StepBody = z.object({
  action: z.record(z.string(), z.unknown()).describe("message | call_tool | list_tools (see /schema)"),
  episode_id: z.string().optional(),
  rollout_token: z.string().optional(),
  timeout_s: z.number().nullable().optional(),
  request_id: z.string().nullable().optional(),
});
export const StepResultBody = z.object({
  observation: z.record(z.string(), z.unknown()),
  reward: z.number().nullable(),
  done: z.boolean(),
});
export const StateBody = z.object({
  episode_id: z.string().nullable(),
  step_count: z.number().int(),
  task_id: z.string().optional(),
  tool_calls: z.number().int().optional(),
  done: z.boolean().optional(),
  reward: z.number().nullable().optional(),
});
export const JsonRpcBody = z.object({
  jsonrpc: z.literal("2.0"),
  method: z.string(),
  params: z.record(z.string(), z.unknown()).optional(),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
});
export const HealthBody = z.object({
  status: z.enum(["healthy", "draining"]),
  activeRollouts: z.number(),
  /** Open MCP sessions (streamable HTTP on `/mcp`). */
  sessions: z.number(),
  instance: z.string(),
});
export const MetadataBody = z.looseObject({
  name: z.string(),
  description: z.string(),
  tools: z.array(z.unknown()),
});
export const SchemaBody = z.object({
  action: z.record(z.string(), z.unknown()),
  observation: z.record(z.string(), z.unknown()),
  state: z.record(z.string(), z.unknown()),
});
export const ToolsBody = z.object({ tools: z.array(z.unknown()), openenv: z.array(z.unknown()) });
export const TasksBody = z.object({
  tasks: z.array(
    z.object({
      id: z.string(),
      prompt: z.string().optional(),
      messages: z.array(z.unknown()).optional(),
      systemPrompt: z.string().optional(),
    }),
  ),
});
export const AnyObject = z.record(z.string(), z.unknown());
export const ErrorBody = z.object({
  error: z.object({ message: z.string(), code: z.string(), type: z.string() }),
});
export const ValidationBody = z.object({
  detail: z.array(
    z.object({
      type: z.string(),
      loc: z.array(z.union([z.string(), z.number().int()])),
      msg: z.string(),
      input: z.unknown(),
    }),
  ),
});
