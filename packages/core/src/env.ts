import type { z } from "zod/v4";
import type { EnvOptionsSpec } from "./options.js";
import type { Policy } from "./policy.js";
import type { ArtifactData } from "./run-dir/artifacts.js";
import type { ToolCallItem } from "./tool-calls.js";
import type {
  AssistantMessage,
  Message,
  RewardComponents,
  RewardExplanation,
  Task,
  ToolCallRequest,
  ToolResult,
  ToolSpec,
} from "./types.js";

/** One finished rollout of a group, as handed to `computeGroupReward`. */
export interface GroupMember<T extends Task = Task> {
  rolloutId: string;
  task: T;
  messages: Message[];
  rewards: RewardComponents;
}

/** Options for loading an env's tasks. */
export interface LoadTasksOptions {
  /** Only the first N tasks. */
  limit?: number;
  /** A split name where the dataset has several (e.g. "train", "test"). */
  split?: string;
}

/** One line of `benchmax score <env> cases.jsonl`, already parsed. */
export interface ScoreCase {
  id: string;
  /** The raw dataset row (in any shape the env accepts). */
  task?: unknown;
  /** The model's final text. */
  completion?: string;
  /** Other fields of the case line (e.g. excel's `outputFile`, `goldFile`). */
  [key: string]: unknown;
}

export interface ScoreContext {
  /** The folder of the cases file: relative paths in a case resolve against it. */
  baseDir: string;
  /** Env-specific flags from the command line (e.g. `{ recalc: false }`). */
  options: Record<string, unknown>;
}

export interface ScoreResult {
  reward: number;
  rewards: RewardComponents;
  metadata?: Record<string, unknown>;
}

/** A system prompt computed from the task (bivariant in T, so an `Env<MyTask>` is usable as an `Env`). */
export type SystemPromptOf<T> = { bivarianceHack(task: T): string }["bivarianceHack"];

/**
 * The contract every environment implements; runners, servers and trainers only talk to this.
 * All per-rollout state is keyed by `rolloutId`.
 */
/** What the caller of `computeReward` tells the env about the call. */
export interface RewardCallOptions {
  /** The time limit the caller puts on this reward (ms), counted from the call. */
  timeoutMs?: number;
}

export interface Env<T extends Task = Task> {
  readonly name: string;
  /** A short description for `benchmax list` / server metadata. */
  readonly description?: string;
  /** The system prompt, or a function of the task. The runner appends the tool section in Hermes mode. */
  systemPrompt: string | SystemPromptOf<T>;
  /** The tools the model may call, in the OpenAI function shape. */
  listTools(): ToolSpec[];
  /** Create per-rollout state. Must be cheap. */
  init(rolloutId: string, task: T): Promise<void>;
  /** Optional: copy one initialised rollout's state to each child (GRPO groups set up once). */
  fork?(rolloutId: string, childIds: string[]): Promise<void>;
  /**
   * Run a tool. Unknown tools, bad arguments, timeouts and oversized output come back as `isError: true`.
   * Throwing means the env itself is broken (→ env_error), or throwing an InfraError → infra_error.
   */
  runTool(rolloutId: string, call: ToolCallRequest): Promise<ToolResult>;
  /**
   * Score a finished rollout: named finite components. `options.timeoutMs` is the time the caller gives it (its
   * `rewardTimeoutMs`): past it the rollout ends env_error, so an env whose reward runs what the model asked for
   * (replayed calls) can stop that work in time and score it as the model's failure instead.
   */
  computeReward(
    rolloutId: string,
    messages: Message[],
    task: T,
    options?: RewardCallOptions,
  ): Promise<RewardComponents>;
  /** Optional group-relative scoring: extra components for each member, in order. */
  computeGroupReward?(group: GroupMember<T>[]): Promise<RewardComponents[]>;
  /** Weights combining components into `reward`. Components without a weight are reported only. */
  readonly rewardWeights: Record<string, number>;
  /** A rollout passes when its reward is at least this (default 1). */
  readonly passThreshold?: number;
  /**
   * The range every reward component lies in (default [0, 1]). `--resume` refuses stored rows whose components, or
   * whose reward (given `rewardWeights`), fall outside it.
   */
  readonly rewardComponentRange?: readonly [number, number];
  /** Free per-rollout state. Idempotent. */
  release(rolloutId: string): Promise<void>;
  /** Free everything (servers, pools, temp dirs). */
  close(): Promise<void>;

  /** The env's tasks: its embedded fixtures when `source` is undefined, else a dataset file or folder. */
  loadTasks?(source?: string, options?: LoadTasksOptions): Promise<T[]>;
  /** Validate and convert one raw dataset row (any shape the env accepts); throws DatasetError naming the field. */
  parseTask?(row: unknown, where?: string): T;
  /** A scripted policy that solves the fixture tasks through the tools. */
  referencePolicy?(): Policy;
  /** Score one case of `benchmax score`; the default feeds `completion` to computeReward. */
  scoreCase?(c: ScoreCase, ctx: ScoreContext): Promise<ScoreResult>;
  /**
   * Optional env-specific action parsing tried before the standard tool-call formats, e.g. CRMArena's
   * `<execute>SOQL</execute>` mapped to a tool call. Return undefined (or []) to fall back to the standard parsing.
   */
  parseActions?(
    message: AssistantMessage,
    turn: number,
  ): ToolCallItem[] | undefined | Promise<ToolCallItem[] | undefined>;
  /**
   * Optional: explain a scored rollout's reward to a person (the extracted answer beside the gold, the differing
   * cells). Called on the harness side after `computeReward`; the result goes into results.jsonl and reports only,
   * never to a policy. Best effort: a throw is ignored.
   */
  explainReward?(
    rolloutId: string,
    messages: Message[],
    task: T,
  ): RewardExplanation | undefined | Promise<RewardExplanation | undefined>;
  /** Per-rollout metadata to attach to the result (e.g. which judge scored it, per-case detail). */
  rolloutMetadata?(rolloutId: string): Record<string, unknown> | undefined;
  /** Episode limits this env wants when the driver sets none (e.g. a default deadline). */
  readonly episodeDefaults?: EpisodeDefaults;
  /**
   * What `computeReward` reads: `"conversation"` — the messages (and task) only, so a stored rollout can be re-scored
   * on a fresh state (`benchmax rescore`); `"state"` — the rollout's final state too (files, a database). Undefined:
   * not declared (rescore refuses the run).
   */
  readonly rewardReads?: RewardReads;
  /**
   * Optional: the final-state artifacts `computeReward` reads (e.g. excel's output workbook), by name, as bytes or
   * a path the env owns. Taken after scoring and before `release` when the driver keeps a run (eval, serve
   * --record), stored content-addressed in the run dir, so `benchmax rescore` can restore the state and score again.
   */
  artifacts?(
    rolloutId: string,
  ): Record<string, ArtifactData> | undefined | Promise<Record<string, ArtifactData> | undefined>;
  /**
   * Optional, with `artifacts`: put stored artifacts back into a freshly initialised rollout's state, so that
   * `computeReward` reads the state the rollout ended in (`benchmax rescore`). Throws when they don't fit.
   */
  restoreArtifacts?(rolloutId: string, artifacts: Record<string, Uint8Array>): Promise<void>;
}

/** What an env's reward reads (see `Env.rewardReads`). */
export type RewardReads = "conversation" | "state";

/** Episode limits an env may default (the driver's own options win). */
export interface EpisodeDefaults {
  /** Wall-clock budget of an episode (ms). */
  deadlineMs?: number;
  /** Most tool calls run per reply. */
  maxToolCallsPerReply?: number;
}

/** Options passed to an env factory (from `--env-opt key=value` or code). */
export type EnvOptions = Record<string, unknown>;

/** What `createEnv` returns: an env, or a promise of one. */
export type EnvOrPromise<T extends Task = Task> = Env<T> | Promise<Env<T>>;

/**
 * What an env package exports as `default`: found by the CLI and the server by name. `R` is what `createEnv`
 * returns; `defineEnvModule` infers it, so `createEnv()` of an env that builds synchronously is typed `Env<MyTask>`
 * (no `await` needed, `env.loadTasks` type-checks).
 */
export interface EnvModule<T extends Task = Task, O = EnvOptions, R extends EnvOrPromise<T> = EnvOrPromise<T>> {
  name: string;
  description: string;
  /** The env's typed options (`defineOptions`): `createEnv` checks what it gets against them; the CLI lists them. */
  options?: EnvOptionsSpec;
  createEnv(options?: O): R;
}

/**
 * Declare an env package's default export; `createEnv`'s return type is kept as written. With `options` (from
 * `defineOptions`), `createEnv` receives parsed, typed options — an unknown name fails with a suggestion ("unknown
 * option datset; did you mean dataset?"), a string from `--env-opt` is converted to the option's type — and
 * callers in code get a typed parameter, so a misspelt option does not compile.
 */
export function defineEnvModule<
  T extends Task = Task,
  S extends z.ZodObject<z.ZodRawShape> = z.ZodObject<z.ZodRawShape>,
  R extends EnvOrPromise<T> = EnvOrPromise<T>,
>(m: {
  name: string;
  description: string;
  options: EnvOptionsSpec<S>;
  createEnv(options: z.output<S>): R;
}): EnvModule<T, z.input<S>, R>;
export function defineEnvModule<T extends Task = Task, R extends EnvOrPromise<T> = EnvOrPromise<T>>(
  m: EnvModule<T, EnvOptions, R>,
): EnvModule<T, EnvOptions, R>;
export function defineEnvModule(m: EnvModule<any, any, any>): EnvModule<any, any, any> {
  const spec = m.options;
  if (!spec) return m;
  const create = m.createEnv.bind(m);
  return { ...m, createEnv: (options?: unknown) => create(spec.parse((options ?? {}) as Record<string, unknown>)) };
}

export function resolveSystemPrompt<T extends Task>(env: Env<T>, task: T): string {
  return typeof env.systemPrompt === "function" ? env.systemPrompt(task) : env.systemPrompt;
}
