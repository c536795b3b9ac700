import { z } from "zod/v4";

/**
 * The wire types of benchmax as zod schemas: the single source of truth. The TypeScript types (`Message`, `Task`,
 * `RolloutResult`, `RunSummary`, …) are `z.infer` of these; servers validate requests and replies with them and
 * dataset/results readers check rows against them.
 */

export const TextPartSchema = z.object({ type: z.literal("text"), text: z.string() });
export const ImagePartSchema = z.object({ type: z.literal("image_url"), image_url: z.object({ url: z.string() }) });
export const ContentPartSchema = z.discriminatedUnion("type", [TextPartSchema, ImagePartSchema]);
const Content = z.union([z.string(), z.array(ContentPartSchema)]);

/** A native (OpenAI) tool call: `arguments` is the JSON text the model wrote. */
export const ToolCallSchema = z.object({
  id: z.string(),
  type: z.literal("function"),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

export const SystemMessageSchema = z.object({ role: z.literal("system"), content: z.string() });
export const UserMessageSchema = z.object({ role: z.literal("user"), content: Content });
export const AssistantMessageSchema = z.object({
  role: z.literal("assistant"),
  content: z.string().nullable(),
  tool_calls: z.array(ToolCallSchema).optional(),
});
export const ToolMessageSchema = z.object({
  role: z.literal("tool"),
  tool_call_id: z.string(),
  content: Content,
  /** The tool's name (informational; Hermes templates ignore it). */
  name: z.string().optional(),
});
/** A chat message in the OpenAI chat.completions shape. */
export const MessageSchema = z.discriminatedUnion("role", [
  SystemMessageSchema,
  UserMessageSchema,
  AssistantMessageSchema,
  ToolMessageSchema,
]);

/** A JSON Schema object (draft 2020-12 / OpenAI function parameters). */
export const JsonSchemaSchema = z.record(z.string(), z.unknown());

/** A tool as the model sees it: the OpenAI function shape. */
export const ToolSpecSchema = z.object({
  name: z.string(),
  description: z.string(),
  parameters: JsonSchemaSchema,
});

/** A parsed request to run a tool; `arguments` is already decoded JSON. */
export const ToolCallRequestSchema = z.object({
  id: z.string().optional(),
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
});

/** What a tool returns. Errors the model should see are `isError: true`, never a throw. */
export const ToolResultSchema = z.object({
  content: Content,
  isError: z.boolean(),
  /** Host-side detail (never shown to the model). */
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/** One dataset row after preprocessing. `groundTruth` never reaches the model. */
export const TaskSchema = z.object({
  id: z.string().min(1),
  /** The user prompt (single-turn). */
  prompt: z.string().optional(),
  /** Or a full conversation prefix (multi-turn); a system message here overrides the env's. */
  messages: z.array(MessageSchema).optional(),
  groundTruth: z.unknown(),
  /** Env-specific setup data (e.g. which workbook to copy). */
  init: z.unknown().optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
});

/** Named reward components, e.g. `{ exact_match: 1, f1: 0.8 }`; every value finite. */
export const RewardComponentsSchema = z.record(z.string(), z.number());

export const UsageSchema = z.object({
  prompt_tokens: z.number(),
  completion_tokens: z.number(),
  total_tokens: z.number(),
});

/**
 * One assistant turn at the token level, as the endpoint returned it (vLLM's `prompt_token_ids`, the choice's
 * `token_ids` and `logprobs.content[].logprob`), so that training data is never re-tokenized.
 */
export const TurnTokensSchema = z.object({
  /** Zero-based assistant turn index. */
  turn: z.number().int(),
  prompt_token_ids: z.array(z.number().int()),
  completion_token_ids: z.array(z.number().int()),
  /** One logprob per completion token, when the endpoint returned them. */
  logprobs: z.array(z.number()).optional(),
});

/**
 * How an env explains a reward to a person reading a report (harness side only; never shown to a policy): what it
 * extracted from the model's answer, the gold it compared with, and lines on what differed.
 */
export const RewardExplanationSchema = z.object({
  extracted: z.string().optional(),
  gold: z.string().optional(),
  diff: z.array(z.string()).optional(),
});

/** A task's scalar metadata fields (split, level, type…), copied onto its results for breakdowns. */
export const TaskMetaSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

export const OutcomeSchema = z.enum(["completed", "truncated", "env_error", "infra_error"]);
export const TruncatedBySchema = z.enum(["max_turns", "max_tokens", "deadline"]);

/** One rollout, as written to a line of results.jsonl. Error outcomes carry no reward. */
export const RolloutResultSchema = z.object({
  taskId: z.string(),
  rolloutId: z.string(),
  groupId: z.string(),
  /** Index within the task's group (0..G-1). */
  sample: z.number().int(),
  /** 0 for the first try; retries of infra errors count up. */
  attempt: z.number().int(),
  outcome: OutcomeSchema,
  reward: z.number().optional(),
  rewards: RewardComponentsSchema.optional(),
  /** Why a rollout was truncated. */
  truncatedBy: TruncatedBySchema.optional(),
  turns: z.number().int(),
  toolCalls: z.number().int(),
  toolErrors: z.number().int(),
  usage: UsageSchema.optional(),
  durationMs: z.number(),
  messages: z.array(MessageSchema),
  error: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  /** The task's scalar metadata (split, level, type…), for breakdowns. */
  taskMeta: TaskMetaSchema.optional(),
  /** The env's explanation of the reward (extracted answer beside the gold); harness side only. */
  explain: RewardExplanationSchema.optional(),
  /** The trainer step the client sent (recorded served rollouts). */
  trainerStep: z.number().optional(),
  /** Milliseconds each returned tool call took, by tool name (the dashboard's per-tool latency). */
  toolLatencyMs: z.record(z.string(), z.array(z.number())).optional(),
  /** Token ids (and logprobs) per assistant turn, when the endpoint returned them. */
  tokens: z.array(TurnTokensSchema).optional(),
  /**
   * Turns whose prompt ids do not extend the previous turn's prompt + completion ids (re-tokenization drift);
   * absent when `tokens` is.
   */
  tokenDrift: z.array(z.number().int()).optional(),
  /** The final-state artifacts the reward read, by name: content address (run dir `artifacts/<sha256>`) and size. */
  artifacts: z.record(z.string(), z.object({ sha256: z.string(), bytes: z.number().int() })).optional(),
});

export const StatsSchema = z.object({
  mean: z.number(),
  std: z.number(),
  min: z.number(),
  max: z.number(),
  p50: z.number(),
  p95: z.number(),
});

export const TaskSummarySchema = z.object({
  n: z.number().int(),
  scored: z.number().int(),
  meanReward: z.number().nullable(),
  passRate: z.number().nullable(),
});

/** Pass rate and mean reward of a slice of the run (one value of a task metadata field). */
export const SliceSummarySchema = z.object({
  n: z.number().int(),
  scored: z.number().int(),
  meanReward: z.number().nullable(),
  passRate: z.number().nullable(),
});

/** The numbers an RL engineer reads first, for runs with several samples per task. */
export const RlSummarySchema = z.object({
  /** Unbiased pass@k (Chen et al. 2021) per task, averaged over tasks with at least k scored samples. */
  passAtK: z.record(z.string(), z.number()),
  /** Unbiased expected best reward of k samples per task, averaged the same way. */
  maxAtK: z.record(z.string(), z.number()),
  /** Groups with at least two scored rollouts. */
  groups: z.number().int(),
  /** Mean over those groups of each group's reward std (population). */
  groupRewardStd: z.number().nullable(),
  /** Share of those groups whose rewards are all equal (no GRPO signal). */
  zeroVarianceShare: z.number().nullable(),
});

/** summary.json of a run. */
export const RunSummarySchema = z.object({
  env: z.string(),
  policy: z.string(),
  /** Rollouts in the run (every outcome). */
  n: z.number().int(),
  outcomes: z.record(OutcomeSchema, z.number().int()),
  /** Over scored rollouts (completed + truncated); null when none was scored. */
  reward: z.object({ mean: z.number().nullable(), std: z.number().nullable() }),
  components: z.record(z.string(), z.number()),
  passRate: z.number().nullable(),
  passThreshold: z.number(),
  tasks: z.record(z.string(), TaskSummarySchema),
  turns: z.object({ mean: z.number() }),
  toolCalls: z.object({ mean: z.number() }),
  rolloutMs: StatsSchema.nullable(),
  /** Group statistics (pass@k, max@k, per-group std); absent when no task has two scored samples. */
  rl: RlSummarySchema.optional(),
  /** Tokens per rollout from the endpoint's usage (absent when no rollout reported usage). */
  tokens: z
    .object({ prompt: StatsSchema.nullable(), completion: StatsSchema.nullable(), total: StatsSchema.nullable() })
    .optional(),
  /** Token-level records: assistant turns with token ids, and those flagged by the drift (prefix) check. */
  tokenDrift: z.object({ turns: z.number().int(), flagged: z.number().int() }).optional(),
  /** Characters the model wrote per rollout (every assistant message). */
  responseChars: StatsSchema.nullable().optional(),
  /** Per task metadata field (split, level, type…), per value: counts, mean reward and pass rate. */
  breakdown: z.record(z.string(), z.record(z.string(), SliceSummarySchema)).optional(),
  /** Wall-clock time of the run. */
  durationMs: z.number(),
  startedAt: z.string(),
  finishedAt: z.string(),
  versions: z.record(z.string(), z.string()),
  config: z.record(z.string(), z.unknown()).optional(),
});
