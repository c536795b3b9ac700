import type { z } from "zod/v4";
import { UsageError } from "./errors.js";
import type { EnvOptionsSpec } from "./options.js";
import type { Policy } from "./policy.js";
import type { StateViewCapability } from "./state-view.js";
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

/** What the caller of `computeReward` tells the env about the call. */
export interface RewardCallOptions {
  /** The time limit the caller puts on this reward (ms), counted from the call. */
  timeoutMs?: number;
}

/**
 * The contract every environment implements; runners, servers and trainers only talk to this.
 *
 * DESIGN: a small core plus capabilities. The core (eight members and `capabilities`) is what every env has: a name,
 * a system prompt, its tools, per-rollout `init` / `runTool` / `computeReward` / `release`, and `close`. Everything
 * else is an optional capability (`EnvCapabilities`): a small interface of its own, named by one key, in the spirit
 * of the MCP SDK's capabilities object. A driver detects a capability by its key (`env.capabilities?.fork`, or
 * `capabilityOf(env, "fork")`); a proxy passes a capability on as a whole object, or not at all, so a capability added
 * here reaches every proxy without each re-declaring its members. All per-rollout state is keyed by `rolloutId`.
 *
 * Most envs are written with `defineEnv`, which maps its flat options onto the core and the capabilities.
 */
export interface Env<T extends Task = Task> {
  readonly name: string;
  /** The system prompt, or a function of the task. The runner appends the tool section in Hermes mode. */
  systemPrompt: string | SystemPromptOf<T>;
  /** The tools the model may call, in the OpenAI function shape. */
  listTools(): ToolSpec[];
  /** Create per-rollout state. Must be cheap. */
  init(rolloutId: string, task: T): Promise<void>;
  /**
   * Run a tool. Unknown tools, bad arguments, timeouts and oversized output come back as `isError: true`.
   * Throwing means the env itself is broken (→ env_error), or throwing an InfraError → infra_error.
   */
  runTool(rolloutId: string, call: ToolCallRequest): Promise<ToolResult>;
  /**
   * Score a finished rollout: named finite components. They combine into one reward with the weights of the
   * `reward` capability (without weights: the mean of the components). `options.timeoutMs` is the time the caller
   * gives it (its `rewardTimeoutMs`): past it the rollout ends env_error, so an env whose reward runs what the model
   * asked for (replayed calls) can stop that work in time and score it as the model's failure instead.
   */
  computeReward(
    rolloutId: string,
    messages: Message[],
    task: T,
    options?: RewardCallOptions,
  ): Promise<RewardComponents>;
  /** Free per-rollout state. Idempotent. */
  release(rolloutId: string): Promise<void>;
  /** Free everything (servers, pools, temp dirs). */
  close(): Promise<void>;
  /** What this env offers beyond the core; an absent key is a capability the env does not have. */
  readonly capabilities?: EnvCapabilities<T>;
}

/**
 * The optional capabilities of an env, each a small interface under one key. Drivers detect them by key; a proxy
 * passes each on whole (`capabilities: { tasks: inner.capabilities?.tasks }`) or builds its own.
 */
export interface EnvCapabilities<T extends Task = Task> {
  /** Its tasks: the embedded fixtures or a dataset (load), one raw row (parse). */
  tasks?: TaskCapability<T>;
  /** Copy an initialised rollout's state to children (GRPO groups set up once, `POST /fork`). */
  fork?: ForkCapability;
  /** Group-relative reward components over G rollouts of one task. */
  groupReward?: GroupRewardCapability<T>;
  /** How the reward is read: weights, pass threshold, component range, what it reads. */
  reward?: RewardCapability;
  /** Score one case of `benchmax score` its own way. */
  scoring?: ScoringCapability;
  /** Explain a scored rollout's reward to a person (reports only). */
  explain?: ExplainCapability<T>;
  /** A scripted policy that solves the fixture tasks (`--policy reference`). */
  reference?: ReferenceCapability;
  /** The final-state artifacts the reward reads, kept so `benchmax rescore` can restore them. */
  artifacts?: ArtifactsCapability;
  /** What the env says about itself and about each rollout beyond the reward. */
  metadata?: MetadataCapability;
  /** How an episode runs on this env: default limits, its own action parsing. */
  episode?: EpisodeCapability;
  /** The rollout's state as a person would see it (`benchmax play`). */
  stateView?: StateViewCapability;
}

/** The names of the capabilities (`capabilityOf(env, name)`). */
export type CapabilityName = keyof EnvCapabilities;

/** Capability `tasks`: an env's own tasks and its dataset row parser. */
export interface TaskCapability<T extends Task = Task> {
  /** The env's tasks: its embedded fixtures when `source` is undefined, else a dataset file or folder. */
  loadTasks?(source?: string, options?: LoadTasksOptions): Promise<T[]>;
  /** Validate and convert one raw dataset row (any shape the env accepts); throws DatasetError naming the field. */
  parseTask?(row: unknown, where?: string): T;
}

/** Capability `fork`: copy one initialised rollout's state to each child. */
export interface ForkCapability {
  fork(rolloutId: string, childIds: string[]): Promise<void>;
}

/** Capability `groupReward`: extra components for each member of a group of one task, in order. */
export interface GroupRewardCapability<T extends Task = Task> {
  computeGroupReward(group: GroupMember<T>[]): Promise<RewardComponents[]>;
}

/** Capability `reward`: how `computeReward`'s components are read. Every field has a default. */
export interface RewardCapability {
  /** Weights combining components into `reward`; components without a weight are reported only (default: the mean). */
  readonly weights?: Record<string, number>;
  /** A rollout passes when its reward is at least this (default 1). */
  readonly passThreshold?: number;
  /**
   * The range every reward component lies in (default [0, 1]). `--resume` refuses stored rows whose components, or
   * whose reward (given `weights`), fall outside it.
   */
  readonly componentRange?: readonly [number, number];
  /**
   * What `computeReward` reads: `"conversation"` — the messages (and task) only, so a stored rollout can be re-scored
   * on a fresh state (`benchmax rescore`); `"state"` — the rollout's final state too (files, a database). Undefined:
   * not declared (rescore refuses the run).
   */
  readonly reads?: RewardReads;
}

/** Capability `scoring`: score one case of `benchmax score` (without it, `completion` goes to computeReward). */
export interface ScoringCapability {
  scoreCase(c: ScoreCase, ctx: ScoreContext): Promise<ScoreResult>;
}

/**
 * Capability `explain`: explain a scored rollout's reward to a person (the extracted answer beside the gold, the
 * differing cells). Called on the harness side after `computeReward`; the result goes into results.jsonl and reports
 * only, never to a policy. Best effort: a throw is ignored.
 */
export interface ExplainCapability<T extends Task = Task> {
  explainReward(
    rolloutId: string,
    messages: Message[],
    task: T,
  ): RewardExplanation | undefined | Promise<RewardExplanation | undefined>;
}

/** Capability `reference`: a scripted policy that solves the fixture tasks through the tools. */
export interface ReferenceCapability {
  referencePolicy(): Policy;
}

/** One final-state artifact as an env hands it over: its bytes, or a file the env owns (read before release). */
export type ArtifactData = Uint8Array | { path: string };

/**
 * Capability `artifacts`: the final-state artifacts `computeReward` reads (e.g. excel's output workbook), by name, as
 * bytes or a path the env owns. Taken after scoring and before `release` when the driver keeps a run (eval, serve
 * --record), stored content-addressed in the run dir, so `benchmax rescore` can restore the state and score again.
 */
export interface ArtifactsCapability {
  artifacts(
    rolloutId: string,
  ): Record<string, ArtifactData> | undefined | Promise<Record<string, ArtifactData> | undefined>;
  /**
   * Put stored artifacts back into a freshly initialised rollout's state, so that `computeReward` reads the state
   * the rollout ended in (`benchmax rescore`). Throws when they don't fit.
   */
  restoreArtifacts?(rolloutId: string, artifacts: Record<string, Uint8Array>): Promise<void>;
}

/** Capability `metadata`: what the env says about itself and each rollout, beside the reward. */
export interface MetadataCapability {
  /** A short description for `benchmax list` / server metadata. */
  readonly description?: string;
  /** Per-rollout metadata to attach to the result (e.g. which judge scored it, per-case detail). */
  rolloutMetadata?(rolloutId: string): Record<string, unknown> | undefined;
}

/** Capability `episode`: how the harness runs an episode on this env. */
export interface EpisodeCapability {
  /** Episode limits this env wants when the driver sets none (e.g. a default deadline). */
  readonly defaults?: EpisodeDefaults;
  /**
   * Env-specific action parsing tried before the standard tool-call formats, e.g. CRMArena's `<execute>SOQL</execute>`
   * mapped to a tool call. Return undefined (or []) to fall back to the standard parsing.
   */
  parseActions?(
    message: AssistantMessage,
    turn: number,
  ): ToolCallItem[] | undefined | Promise<ToolCallItem[] | undefined>;
}

/** What a driver that reads no rollout needs of an env: its name and capabilities (a task source, a recorder). */
export type EnvShape = Pick<Env<any>, "name" | "capabilities">;

/** One capability of an env, by name (`capabilityOf(env, "fork")?.fork(...)`); undefined when it has none. */
export function capabilityOf<T extends Task, K extends CapabilityName>(
  env: Env<T>,
  name: K,
): EnvCapabilities<T>[K] | undefined {
  return env.capabilities?.[name];
}

/** The weights combining an env's reward components (`capabilities.reward.weights`; default none: the mean). */
export function rewardWeightsOf(env: EnvShape): Record<string, number> {
  return env.capabilities?.reward?.weights ?? {};
}

/**
 * A reward capability from settings any of which may be absent (an author's config, a remote env's metadata):
 * `weights` default to none (the mean), and only the fields given are set.
 */
export function rewardCapability(settings: {
  weights?: Record<string, number> | undefined;
  passThreshold?: number | undefined;
  componentRange?: readonly [number, number] | undefined;
  reads?: RewardReads | undefined;
}): RewardCapability {
  const { weights, passThreshold, componentRange, reads } = settings;
  return {
    weights: weights ?? {},
    ...(passThreshold !== undefined ? { passThreshold } : {}),
    ...(componentRange ? { componentRange } : {}),
    ...(reads ? { reads } : {}),
  };
}

/** The reward at which an env's rollout passes (`capabilities.reward.passThreshold`; default 1). */
export function passThresholdOf(env: EnvShape): number {
  return env.capabilities?.reward?.passThreshold ?? 1;
}

/** An env's description (`capabilities.metadata.description`; default empty). */
export function descriptionOf(env: EnvShape): string {
  return env.capabilities?.metadata?.description ?? "";
}

/**
 * An env's tasks (capability `tasks.loadTasks`): its fixtures when `source` is undefined, else that dataset. Throws a
 * UsageError when the env has no task loader.
 */
export function tasksOf<T extends Task>(env: Env<T>, source?: string, options?: LoadTasksOptions): Promise<T[]> {
  const own = env.capabilities?.tasks;
  if (!own?.loadTasks) return Promise.reject(new UsageError(`env ${env.name} has no task loader (capabilities.tasks)`));
  return own.loadTasks(source, options);
}

/** An env's reference policy (capability `reference`). Throws a UsageError when it has none. */
export function referencePolicyOf(env: Env<any>): Policy {
  const own = env.capabilities?.reference;
  if (!own) throw new UsageError(`env ${env.name} has no reference policy (capabilities.reference)`);
  return own.referencePolicy();
}

/** Where each member of the earlier, flat `Env` now lives (for `assertEnvShape`'s message). */
const MOVED: Record<string, string> = {
  loadTasks: "capabilities.tasks.loadTasks",
  parseTask: "capabilities.tasks.parseTask",
  fork: "capabilities.fork.fork",
  computeGroupReward: "capabilities.groupReward.computeGroupReward",
  rewardWeights: "capabilities.reward.weights",
  passThreshold: "capabilities.reward.passThreshold",
  rewardComponentRange: "capabilities.reward.componentRange",
  rewardReads: "capabilities.reward.reads",
  scoreCase: "capabilities.scoring.scoreCase",
  explainReward: "capabilities.explain.explainReward",
  referencePolicy: "capabilities.reference.referencePolicy",
  artifacts: "capabilities.artifacts.artifacts",
  restoreArtifacts: "capabilities.artifacts.restoreArtifacts",
  description: "capabilities.metadata.description",
  rolloutMetadata: "capabilities.metadata.rolloutMetadata",
  episodeDefaults: "capabilities.episode.defaults",
  parseActions: "capabilities.episode.parseActions",
  renderState: "capabilities.stateView.renderState",
};

/**
 * Members an object has at the top level that belong in `capabilities` now (an Env written for the flat contract):
 * e.g. `["loadTasks → capabilities.tasks.loadTasks"]`. Empty for a well-formed env.
 */
export function misplacedEnvMembers(env: object): string[] {
  const out: string[] = [];
  for (const [k, to] of Object.entries(MOVED)) {
    if (k in env && (env as Record<string, unknown>)[k] !== undefined) out.push(`${k} → ${to}`);
  }
  return out;
}

/**
 * Refuse an env that still declares capability members at the top level: those would be ignored without an error
 * (a feature lost). Drivers call it where they take an env (the rollout service, the CLI's env loader).
 */
export function assertEnvShape(env: Env<any>): void {
  const bad = misplacedEnvMembers(env);
  if (bad.length)
    throw new UsageError(
      `env ${env.name}: ${bad.join(", ")}: these members belong in \`capabilities\` (see @benchmax/core's Env; defineEnv maps them for you)`,
    );
}

/** Env objects `assertEnvShapeOnce` has passed (an episode start costs a lookup, not a walk of the members). */
const wellFormed = new WeakSet<object>();

/** `assertEnvShape` once per env object: what every episode start calls (`Episode.start`), so no driver skips it. */
export function assertEnvShapeOnce(env: Env<any>): void {
  if (wellFormed.has(env)) return;
  assertEnvShape(env);
  wellFormed.add(env);
}

/** What an env's reward reads (see `RewardCapability.reads`). */
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
 * (no `await` needed, `env.capabilities?.tasks` is typed by the task).
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
