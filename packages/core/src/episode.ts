import { assertEnvShapeOnce, type Env, rewardWeightsOf } from "./env.js";
import { EnvError, errorMessage, InfraError, isInfraError, UsageError } from "./errors.js";
import { explainBestEffort, scalarMeta } from "./explain.js";
import { buildInitialMessages } from "./initial-messages.js";
import type { PolicyInput, PolicyReply, ToolFormat } from "./policy.js";
import { assertFiniteRewards, combineRewards } from "./reward.js";
import type { Outcome, RolloutResult, TurnTokens } from "./rollout-result.js";
import { type ArtifactStore, captureArtifacts, capturesArtifacts } from "./run-dir/artifacts.js";
import { DEFAULT_TIMEOUTS, DeadlineExceeded, isLimit, startLimit, stopLimit, withTimeout } from "./timeout.js";
import { tokenDriftTurns, validTurnTokens } from "./token-drift.js";
import { extractToolCalls, type ToolCallItem } from "./tool-calls.js";
import type {
  AssistantMessage,
  Message,
  RewardComponents,
  Task,
  ToolCallRequest,
  ToolMessage,
  ToolResult,
  Usage,
} from "./types.js";

/** Most latency values `toolLatencyMs` keeps per tool (past it, thinned: see `timeTool`). */
const MAX_LATENCY_SAMPLES = 1024;

export type TruncatedBy = NonNullable<RolloutResult["truncatedBy"]>;

export interface EpisodeOptions {
  rolloutId?: string;
  groupId?: string;
  sample?: number;
  attempt?: number;
  /** Maximum assistant turns (replies). Default 10. */
  maxTurns?: number;
  /** Maximum completion tokens over the whole episode (needs replies that report usage). */
  maxTokens?: number;
  /** Wall-clock budget for the episode (ms), from `start`; it covers tool calls too. Default: the env's `episodeDefaults`. */
  deadlineMs?: number;
  /**
   * Most tool calls run from one reply (default: the env's `episodeDefaults`, else 32). Calls past it are not run:
   * each gets a tool error the model can read.
   */
  maxToolCallsPerReply?: number;
  /** How tools reach the model. Default "hermes". */
  toolFormat?: ToolFormat;
  /** Hard limit on one `env.runTool` call (ms); past it the env is broken → env_error. Default 120 s. */
  toolTimeoutMs?: number;
  /** Limit on `env.init` (ms); past it → env_error. Default 120 s. */
  initTimeoutMs?: number;
  /** Limit on `env.computeReward` (ms); past it → env_error. Default 600 s. */
  rewardTimeoutMs?: number;
  /** Limit on `env.release` (ms); past it the failure is recorded in `metadata.releaseError`. Default 30 s. */
  releaseTimeoutMs?: number;
  /** The env state already exists (created by `fork`): `start` does not call `env.init`. */
  initialized?: boolean;
  /** Release the env state on `close` (default true). */
  release?: boolean;
  /** Keep the conversation in `result()` (default true). */
  keepMessages?: boolean;
  /**
   * A reply with tool calls on the last allowed turn: "run" its calls, then end truncated (the runner's way,
   * default), or "skip" them and end truncated at once (SkyRL's `turns >= max_turns → done`).
   */
  lastTurnTools?: "run" | "skip";
  /** Keep the env's final-state artifacts (`env.artifacts`) of a scored rollout here, before release (a run dir). */
  artifacts?: ArtifactStore;
}

/** The model's reply as a step takes it: an assistant message, a policy reply (with usage), or plain text. */
export type StepInput = AssistantMessage | PolicyReply | string;

/** One tool call a step ran (or refused: a malformed call is an error result the model sees). */
export interface ToolOutcome {
  /** The `tool_call_id` the observation answers. */
  id: string;
  name?: string;
  result: ToolResult;
}

/** How an episode ended. Error outcomes carry `error` and never a reward. */
export interface EpisodeEnd {
  outcome: Outcome;
  truncatedBy?: TruncatedBy;
  reward?: number;
  rewards?: RewardComponents;
  error?: string;
}

/** Options of one `Episode.step`. */
export interface StepOptions {
  /** Fill the result's `observations` and `tools` (default true); false leaves both empty. */
  lists?: boolean;
}

/** The empty lists of a step run with `{ lists: false }` (frozen: shared by every such step). */
const NO_OBSERVATIONS = Object.freeze([]) as unknown as ToolMessage[];
const NO_TOOLS = Object.freeze([]) as unknown as ToolOutcome[];

/** How `finish` ends an episode that is still running (see `Episode.finish`). */
export interface FinishOptions {
  /** Score this conversation rather than the episode's own. */
  messages?: Message[];
  /** End as truncated by this limit, then score. */
  truncatedBy?: TruncatedBy;
  /** End with an error outcome and no reward: infra_error for an InfraError, else env_error. */
  error?: unknown;
}

/** One step's result. On the final step every `EpisodeEnd` key is present (undefined where it does not apply). */
export interface StepResult extends Partial<EpisodeEnd> {
  /** The tool messages this step appended to the conversation, in call order. */
  observations: ToolMessage[];
  /** The same calls with their full results (metadata included). */
  tools: ToolOutcome[];
  /** The episode ended with this step; `outcome` (and `reward` when scored) are set. */
  done: boolean;
}

let counter = 0;

function addUsage(a: Usage | undefined, b: Usage | undefined): Usage | undefined {
  if (!b) return a;
  if (!a) return { ...b };
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  };
}

function toReply(input: StepInput): PolicyReply {
  if (typeof input === "string") return { message: { role: "assistant", content: input } };
  if (input && typeof input === "object") {
    if ("message" in input && input.message && input.message.role === "assistant") return input;
    if ("role" in input && input.role === "assistant") return { message: input };
  }
  throw new UsageError(
    "a step takes the model's reply: an assistant message, {message, usage?, finishReason?}, or its text",
  );
}

function errorText(e: unknown): string {
  return `${e instanceof Error ? e.name : "Error"}: ${errorMessage(e)}`;
}

/**
 * One episode as a state machine: the conversation, turn counting, tool-call parsing (the env's `episode.parseActions`, then
 * native `tool_calls` or Hermes `<tool_call>` text), limits (turns, tokens, a deadline that covers tool calls),
 * the outcome and the reward. A transport feeds it the model's replies with `step`; the runner's policy loop
 * (`runRollout`) is one such driver.
 *
 * Lifecycle: `await Episode.start(env, task, options)` → `step(reply)` until `done` → `finish()` (scores; `step`
 * already did when it ended the episode) → `close()` (releases the env state; always call it, it is idempotent
 * and never throws) → `result()`. Env failures never throw out of `start`, `step` or `finish`: they end the episode
 * with outcome env_error (or infra_error for an InfraError) and no reward. Misuse (a step after the end, two steps
 * at once) throws UsageError.
 */
export class Episode<T extends Task = Task> {
  /** The conversation so far (live: steps append to it). */
  messages: Message[] = [];
  private readonly r: RolloutResult;
  private readonly started = performance.now();
  private readonly deadline: number | undefined;
  private readonly toolTimeoutMs: number;
  /** Per tool past MAX_LATENCY_SAMPLES: calls seen and the stride of the ones kept (see `timeTool`). */
  private latencyThinning?: Map<string, { seen: number; stride: number }>;
  private usageSum: Usage | undefined;
  /** Token ids per assistant turn, when the policy's replies carried them. */
  private tokens: TurnTokens[] | undefined;
  private initialised: boolean;
  private initAttempted: boolean;
  private ended = false;
  private stepping = false;
  private finishing: Promise<EpisodeEnd> | undefined;
  private closing: Promise<void> | undefined;

  private constructor(
    readonly env: Env<T>,
    readonly task: T,
    private readonly options: EpisodeOptions,
  ) {
    this.toolTimeoutMs = options.toolTimeoutMs ?? DEFAULT_TIMEOUTS.toolMs;
    const deadlineMs = options.deadlineMs ?? env.capabilities?.episode?.defaults?.deadlineMs;
    this.deadline = deadlineMs ? this.started + deadlineMs : undefined;
    this.initialised = options.initialized ?? false;
    this.initAttempted = this.initialised;
    this.r = {
      taskId: task.id,
      rolloutId: options.rolloutId ?? `${task.id}#${counter++}`,
      groupId: options.groupId ?? task.id,
      sample: options.sample ?? 0,
      attempt: options.attempt ?? 0,
      outcome: "completed",
      turns: 0,
      toolCalls: 0,
      toolErrors: 0,
      durationMs: 0,
      messages: [],
    };
    const taskMeta = scalarMeta(task.meta);
    if (taskMeta) this.r.taskMeta = taskMeta;
  }

  /**
   * Create the env state (unless `initialized`) and the initial conversation. Never throws for env failures:
   * an init that throws or passes `initTimeoutMs` gives an episode that is already `done` with env_error.
   * A zero turn budget or a passed deadline gives one already done as truncated (call `finish` to score it).
   */
  static start<T extends Task>(env: Env<T>, task: T, options: EpisodeOptions = {}): Promise<Episode<T>> {
    // an env written for the flat contract is refused here, whichever driver runs it (its capabilities would be lost)
    try {
      assertEnvShapeOnce(env);
    } catch (e) {
      return Promise.reject(e);
    }
    return new Episode(env, task, options).begin();
  }

  // no async frame: with 100k episodes starting at once, every frame held across an await is promoted garbage
  private begin(): Promise<this> {
    if (this.initialised) {
      this.afterInit();
      return Promise.resolve(this);
    }
    this.initAttempted = true;
    const ms = this.options.initTimeoutMs ?? DEFAULT_TIMEOUTS.initMs;
    let init: Promise<void>;
    try {
      // Promise.resolve: a (non-conforming) env that returns no promise still works
      init = Promise.resolve(this.env.init(this.rolloutId, this.task));
    } catch (e) {
      this.failWith(e);
      return Promise.resolve(this);
    }
    // the init limit is armed here rather than through withTimeout: one promise less per episode
    return new Promise<this>((resolve) => {
      let settled = false;
      const settle = (e?: unknown, failed = false) => {
        if (settled) return;
        settled = true;
        if (limit) stopLimit(limit);
        if (failed) this.failWith(e);
        else {
          this.initialised = true;
          this.afterInit();
        }
        resolve(this);
      };
      const limit = isLimit(ms)
        ? startLimit(ms, () => settle(new EnvError(`${this.env.name}.init did not return within ${ms} ms`), true))
        : undefined;
      init.then(
        () => settle(),
        (e: unknown) => settle(e, true),
      );
    });
  }

  private afterInit(): void {
    try {
      this.messages = buildInitialMessages(this.env, this.task, this.toolFormat);
      this.checkLimits();
    } catch (e) {
      this.failWith(e);
    }
  }

  // read from the result and the options, not copied: 100,000 episodes alive at once is the design point
  get rolloutId(): string {
    return this.r.rolloutId;
  }
  get toolFormat(): ToolFormat {
    return this.options.toolFormat ?? "hermes";
  }
  /** Maximum assistant turns (default 10). */
  get maxTurns(): number {
    return this.options.maxTurns ?? 10;
  }

  /** No more steps: the episode ended (scored or not yet). */
  get done(): boolean {
    return this.ended;
  }
  /** Set once the episode is done. */
  get outcome(): Outcome | undefined {
    return this.ended ? this.r.outcome : undefined;
  }
  get truncatedBy(): TruncatedBy | undefined {
    return this.r.truncatedBy;
  }
  get reward(): number | undefined {
    return this.r.reward;
  }
  get rewards(): RewardComponents | undefined {
    return this.r.rewards;
  }
  get error(): string | undefined {
    return this.r.error;
  }
  /** Assistant turns taken so far. */
  get turns(): number {
    return this.r.turns;
  }
  get toolCalls(): number {
    return this.r.toolCalls;
  }
  get toolErrors(): number {
    return this.r.toolErrors;
  }
  get usage(): Usage | undefined {
    return this.usageSum;
  }
  /** Time left before the deadline (ms); undefined without one. */
  remainingMs(): number | undefined {
    return this.deadline === undefined ? undefined : this.deadline - performance.now();
  }

  /** What a policy needs to produce the next reply. */
  policyInput(signal?: AbortSignal): PolicyInput {
    return {
      messages: this.messages,
      tools: this.env.listTools(),
      task: this.task,
      rolloutId: this.rolloutId,
      toolFormat: this.toolFormat,
      turn: this.r.turns,
      signal,
    };
  }

  /**
   * Take the model's reply: append it, run each of its tool calls in order (malformed ones become error
   * observations), then check the limits. A reply without a tool call, or a limit, ends the episode and scores it;
   * the result then carries `done`, `outcome` and (when scored) `reward`/`rewards`. With `{ lists: false }` the
   * result's `observations` and `tools` are left empty: a driver that reads `messages` (as `runRollout` does) saves
   * their allocation.
   */
  step(input: StepInput, options?: StepOptions): Promise<StepResult> {
    if (this.ended) {
      return Promise.reject(new UsageError(`episode ${this.rolloutId} is done (${this.r.outcome}); start a new one`));
    }
    if (this.stepping) {
      return Promise.reject(new UsageError(`episode ${this.rolloutId}: a step is already in progress`));
    }
    let reply: PolicyReply;
    try {
      reply = toReply(input);
    } catch (e) {
      return Promise.reject(e);
    }
    this.stepping = true;
    return this.advance(reply, options?.lists !== false);
  }

  /** The body of a step: env action parsing, the reply taken, its calls run in order, then the limits. */
  private async advance(reply: PolicyReply, lists: boolean): Promise<StepResult> {
    const observations: ToolMessage[] = lists ? [] : NO_OBSERVATIONS;
    const tools: ToolOutcome[] = lists ? [] : NO_TOOLS;
    let goesOn = false;
    try {
      const actions = this.actions(reply);
      const turn = this.takeReply(reply, actions instanceof Promise ? await actions : actions);
      if (turn) {
        const items = turn.items;
        let i = 0;
        for (; i < items.length; i++) {
          const ran = lists ? this.runCall(items[i]!, observations, tools) : this.runCall(items[i]!);
          if (ran !== true && !(await ran)) break;
        }
        goesOn = i === items.length && this.endTurn(turn.overTokens);
      }
    } catch (e) {
      this.failWith(e);
      goesOn = false;
    } finally {
      this.stepping = false;
    }
    if (goesOn) return { observations, tools, done: false };
    const end = await this.finish();
    // one object shape for every final step (fields added one by one cost the runner ~15% of its throughput)
    const out: StepResult = {
      observations,
      tools,
      done: true,
      outcome: end.outcome,
      truncatedBy: end.truncatedBy,
      reward: end.reward,
      rewards: end.rewards,
      error: end.error,
    };
    return out;
  }

  /** The env's own action parsing of a reply (capability `episode.parseActions`), before the reply is taken. */
  private actions(reply: PolicyReply): ToolCallItem[] | undefined | Promise<ToolCallItem[] | undefined> {
    return this.env.capabilities?.episode?.parseActions?.(reply.message, this.r.turns);
  }

  /**
   * Append the reply, count the turn and its usage, find its tool calls (`actions` from `actions()`, else native or
   * Hermes calls). Returns the calls to run, or undefined when the episode ended (no call: completed, or truncated
   * by max_tokens; lastTurnTools "skip" on the last turn: truncated).
   */
  private takeReply(
    reply: PolicyReply,
    actions: ToolCallItem[] | undefined,
  ): { items: ToolCallItem[]; overTokens: boolean } | undefined {
    const message = reply.message;
    const r = this.r;
    const turn = r.turns;
    this.messages.push(message);
    r.turns++;
    this.usageSum = addUsage(this.usageSum, reply.usage);
    const tokens = reply.tokens && validTurnTokens(reply.tokens);
    if (tokens) (this.tokens ??= []).push({ turn, ...tokens });
    const items = actions?.length ? actions : extractToolCalls(message, this.toolFormat, turn);
    const maxTokens = this.options.maxTokens;
    const overTokens = maxTokens !== undefined && (this.usageSum?.completion_tokens ?? 0) >= maxTokens;
    if (items.length === 0) {
      if (reply.finishReason === "length" || overTokens) this.truncate("max_tokens");
      this.ended = true;
      return undefined;
    }
    if (this.options.lastTurnTools === "skip" && r.turns >= this.maxTurns) {
      this.truncate("max_turns");
      return undefined;
    }
    return { items: this.capCalls(items), overTokens };
  }

  /** Most tool calls run from one reply. */
  get maxToolCallsPerReply(): number {
    return this.options.maxToolCallsPerReply ?? this.env.capabilities?.episode?.defaults?.maxToolCallsPerReply ?? 32;
  }

  /** Calls past the per-reply cap become error results (not run), so one reply cannot hold the env for hours. */
  private capCalls(items: ToolCallItem[]): ToolCallItem[] {
    const cap = this.maxToolCallsPerReply;
    if (items.length <= cap) return items;
    const message = `not run: this reply made ${items.length} tool calls and at most ${cap} run per reply; send fewer calls per reply`;
    return items.map((it, i) => {
      if (i < cap) return it;
      const id = "call" in it ? it.call.id : it.error.id;
      const name = "call" in it ? it.call.name : it.error.name;
      return { error: { id, ...(name ? { name } : {}), message } };
    });
  }

  /**
   * Run one call of the reply (a malformed one becomes an error observation) and append its observation. False when the deadline ran out during the call (the episode ended truncated). Env failures
   * are thrown (the driver fails the episode with them).
   */
  private runCall(item: ToolCallItem, observations?: ToolMessage[], tools?: ToolOutcome[]): true | Promise<boolean> {
    if ("error" in item) {
      const { id, name, message } = item.error;
      this.observe(id, name, { content: `Error: ${message}`, isError: true }, observations, tools);
      return true;
    }
    const call = item.call;
    const { id, name } = call;
    return this.bounded(
      { id, name, arguments: call.arguments },
      (res) => {
        this.observe(id, name, res, observations, tools);
        return true;
      },
      () => {
        this.observe(id, name, this.outOfTime(name), observations, tools);
        return false;
      },
      (e) => {
        throw e; // the driver fails the episode with it
      },
    );
  }

  /**
   * One tool call under the tool's time limit and the episode's deadline, whichever ends first: counted and timed.
   * `done` takes its result; `late` answers a deadline that passed first (the call is not counted when it had
   * passed already); `failed` takes the tool's failure or an EnvError when the tool's own limit ran out, and may
   * throw (then the promise rejects). The limit is armed here, one promise per call: every step and every
   * transport's direct call runs through it.
   */
  private bounded<T>(
    req: ToolCallRequest & { id: string },
    done: (res: ToolResult) => T,
    late: () => T,
    failed: (e: unknown) => T,
  ): Promise<T> {
    const name = req.name;
    const toolMs = this.toolTimeoutMs;
    let ms = toolMs;
    let byDeadline = false;
    if (this.deadline !== undefined) {
      const left = this.deadline - performance.now();
      if (left <= 0) return Promise.resolve(late());
      if (!isLimit(toolMs) || left < toolMs) {
        ms = left;
        byDeadline = true;
      }
    }
    this.r.toolCalls++;
    const t0 = performance.now();
    return new Promise<T>((resolve, reject) => {
      const fail = (e: unknown) => {
        try {
          resolve(failed(e));
        } catch (thrown) {
          reject(thrown);
        }
      };
      let p: Promise<ToolResult>;
      try {
        p = Promise.resolve(this.env.runTool(this.rolloutId, req));
      } catch (e) {
        fail(e);
        return;
      }
      let settled = false;
      const limit = isLimit(ms)
        ? startLimit(ms, () => {
            if (settled) return;
            settled = true;
            if (byDeadline) resolve(late());
            else fail(new EnvError(`tool "${name}" did not return within ${toolMs} ms`));
          })
        : undefined;
      p.then(
        (res) => {
          if (settled) return;
          settled = true;
          if (limit) stopLimit(limit);
          this.timeTool(name, t0);
          resolve(done(res));
        },
        (e: unknown) => {
          if (settled) return;
          settled = true;
          if (limit) stopLimit(limit);
          fail(e);
        },
      );
    });
  }

  /** After a reply's calls: the token, turn and deadline limits. True while the episode goes on. */
  private endTurn(overTokens: boolean): boolean {
    if (overTokens) {
      this.truncate("max_tokens");
      return false;
    }
    return !this.checkLimits();
  }

  private observe(
    id: string,
    name: string | undefined,
    res: ToolResult,
    observations: ToolMessage[] | undefined,
    tools: ToolOutcome[] | undefined,
  ): void {
    if (res.isError) this.r.toolErrors++;
    const tm: ToolMessage = { role: "tool", tool_call_id: id, content: res.content };
    if (name) tm.name = name;
    this.messages.push(tm);
    observations?.push(tm);
    tools?.push({ id, name, result: res });
  }

  /**
   * A returned tool call's latency under its tool's name (`toolLatencyMs`; past 32 names, under "other"). Each
   * tool keeps at most MAX_LATENCY_SAMPLES values: when full, every other value is dropped and from then on only
   * every second (fourth, …) call is kept, so a long rollout's memory stays bounded and its samples stay spread
   * over the whole rollout. Below the cap every call is kept, in order.
   */
  private timeTool(name: string | undefined, t0: number): void {
    const ms = Math.round((performance.now() - t0) * 100) / 100;
    const lat = (this.r.toolLatencyMs ??= Object.create(null) as Record<string, number[]>);
    let key = name || "unknown";
    let times = lat[key];
    if (times === undefined) {
      if (Object.keys(lat).length >= 32) {
        key = "other";
        times = lat.other;
      }
      if (times === undefined) times = lat[key] = [];
    }
    const thin = this.latencyThinning?.get(key);
    if (thin === undefined && times.length < MAX_LATENCY_SAMPLES) {
      times.push(ms);
      return;
    }
    // past the cap: keep call number `seen` only when it falls on the stride
    const t = thin ?? { seen: times.length, stride: 1 };
    if (thin === undefined) (this.latencyThinning ??= new Map()).set(key, t);
    if (t.seen % t.stride === 0) {
      if (times.length >= MAX_LATENCY_SAMPLES) {
        let j = 0;
        for (let i = 0; i < times.length; i += 2) times[j++] = times[i]!;
        times.length = j;
        t.stride *= 2;
      }
      if (t.seen % t.stride === 0) times.push(ms);
    }
    t.seen++;
  }

  /** A call's result when the episode's deadline passes first: the episode ends truncated. */
  private outOfTime(name: string): ToolResult {
    this.truncate("deadline");
    return { content: `Error: the episode's time limit ran out before tool "${name}" returned`, isError: true };
  }

  /**
   * Run one tool call outside a reply (an OpenEnv `call_tool` action, an MCP `tools/call`): counted, timed and
   * deadline-bound like a reply's calls, but no turn and no message is added. An env failure ends the episode
   * (env_error) and is thrown; a passed deadline ends it truncated and returns an error result. The limit is armed
   * here, one promise per call (this is every transport's hot path).
   */
  callTool(call: ToolCallRequest): Promise<ToolResult> {
    if (this.ended) {
      return Promise.reject(new UsageError(`episode ${this.rolloutId} is done (${this.r.outcome}); start a new one`));
    }
    const name = call.name;
    const id = call.id ?? `call_${this.r.turns}_${this.r.toolCalls}`;
    return this.bounded(
      { id, name, arguments: call.arguments ?? {} },
      (res) => {
        if (res.isError) this.r.toolErrors++;
        return res;
      },
      () => this.outOfTime(name),
      (e) => {
        if (e instanceof DeadlineExceeded) return this.outOfTime(name);
        this.failWith(e);
        throw e;
      },
    );
  }

  /** Before the next turn: end the episode when a limit is reached. True when it ended. */
  private checkLimits(): boolean {
    if (this.r.turns >= this.maxTurns) this.truncate("max_turns");
    else if (this.deadline !== undefined && this.deadline - performance.now() <= 0) this.truncate("deadline");
    return this.ended;
  }

  /** End the episode as truncated. No-op once it ended. */
  private truncate(by: TruncatedBy): void {
    if (this.ended) return;
    this.r.outcome = "truncated";
    this.r.truncatedBy = by;
    this.ended = true;
  }

  private failWith(e: unknown): void {
    const r = this.r;
    r.outcome = isInfraError(e) ? "infra_error" : "env_error";
    r.error = errorText(e);
    delete r.reward;
    delete r.rewards;
    delete r.truncatedBy;
    this.ended = true;
  }

  /**
   * End the episode (if still running, as completed) and score it once: `env.computeReward` under
   * `rewardTimeoutMs`, every component finite, combined with the env's weights. Idempotent: once finishing, later
   * calls return the same end and their options are ignored. `messages` (or `{messages}`) scores another
   * conversation than the episode's own (a client that keeps its own); `{truncatedBy}` ends a running episode as
   * truncated (a policy that answered past the deadline) before scoring; `{error}` ends it with an error outcome
   * and no reward (infra_error for an InfraError, such as a failed policy; else env_error).
   */
  finish(how?: Message[] | FinishOptions): Promise<EpisodeEnd> {
    if (this.finishing) return this.finishing;
    const o: FinishOptions | undefined = Array.isArray(how) ? { messages: how } : how;
    if (o?.error !== undefined) this.failWith(o.error);
    else if (o?.truncatedBy) this.truncate(o.truncatedBy);
    this.finishing = this.score(o?.messages);
    return this.finishing;
  }

  private async score(messages: Message[] | undefined): Promise<EpisodeEnd> {
    this.ended = true;
    const r = this.r;
    if (r.outcome === "completed" || r.outcome === "truncated") {
      try {
        const ms = this.options.rewardTimeoutMs ?? DEFAULT_TIMEOUTS.rewardMs;
        const raw = await withTimeout(
          this.env.computeReward(this.rolloutId, messages ?? this.messages, this.task, { timeoutMs: ms }),
          ms,
          () => new EnvError(`${this.env.name}.computeReward did not return within ${ms} ms`),
        );
        const checked = assertFiniteRewards(raw, `${this.env.name}.computeReward`);
        const reward = combineRewards(checked, rewardWeightsOf(this.env));
        if (!Number.isFinite(reward)) throw new EnvError(`combined reward is not finite (${reward})`);
        if (this.usageSum) r.usage = this.usageSum;
        r.rewards = checked;
        r.reward = reward;
      } catch (e) {
        this.failWith(e);
      }
      if (r.reward !== undefined && this.env.capabilities?.explain) {
        r.explain = await explainBestEffort(this.env, this.rolloutId, messages ?? this.messages, this.task);
        if (!r.explain) delete r.explain;
      }
    }
    return this.endOf();
  }

  /** How the episode ended: set once it is done (before scoring, the reward is not in it yet). */
  get ending(): EpisodeEnd | undefined {
    return this.ended ? this.endOf() : undefined;
  }

  private endOf(): EpisodeEnd {
    const r = this.r;
    const out: EpisodeEnd = { outcome: r.outcome };
    if (r.truncatedBy) out.truncatedBy = r.truncatedBy;
    if (r.reward !== undefined) out.reward = r.reward;
    if (r.rewards) out.rewards = r.rewards;
    if (r.error) out.error = r.error;
    return out;
  }

  /**
   * Copy this episode's env state (capability `fork`, under `initTimeoutMs`) and engine state (conversation, turns,
   * counters, usage) to new episodes, one per child id; `options` apply to every child, or one set per child.
   * Env failures are thrown (no episode is created; the env may hold some children's state: release their ids).
   */
  async fork(childIds: string[], options: EpisodeOptions | EpisodeOptions[] = {}): Promise<Episode<T>[]> {
    const fork = this.env.capabilities?.fork;
    if (!fork) throw new UsageError(`${this.env.name} does not support fork`);
    if (this.ended) throw new UsageError(`episode ${this.rolloutId} is done; fork before it ends`);
    if (Array.isArray(options) && options.length !== childIds.length) {
      throw new UsageError(`fork of ${childIds.length} children got ${options.length} option sets`);
    }
    const ms = this.options.initTimeoutMs ?? DEFAULT_TIMEOUTS.initMs;
    await withTimeout(
      Promise.resolve(fork.fork(this.rolloutId, childIds)),
      ms,
      () => new EnvError(`${this.env.name}.fork did not return within ${ms} ms`),
    );
    return childIds.map((id, i) => {
      const own = Array.isArray(options) ? options[i] : options;
      const c = new Episode(
        this.env,
        this.task,
        Object.assign({}, this.options, own, { rolloutId: id, initialized: true }),
      );
      c.messages = [...this.messages];
      c.r.turns = this.r.turns;
      c.r.toolCalls = this.r.toolCalls;
      c.r.toolErrors = this.r.toolErrors;
      c.usageSum = this.usageSum && { ...this.usageSum };
      c.tokens = this.tokens && [...this.tokens];
      return c;
    });
  }

  /**
   * Free the env state: per-rollout metadata is taken first, then `env.release` runs under `releaseTimeoutMs`
   * (a failure or timeout is recorded in `metadata.releaseError`, never thrown). Idempotent. Closing an episode
   * that was not finished ends it as infra_error ("closed before it was scored"); an unfinished `finish` is
   * awaited first.
   */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    if (this.finishing) await this.finishing;
    else if (!this.ended || this.r.outcome === "completed" || this.r.outcome === "truncated") {
      this.failWith(new InfraError("episode closed before it was scored", { retryable: false }));
      this.finishing = Promise.resolve(this.endOf());
    }
    const r = this.r;
    if (this.initialised) {
      try {
        const meta = this.env.capabilities?.metadata?.rolloutMetadata?.(this.rolloutId);
        if (meta) r.metadata = meta;
      } catch {
        /* metadata is best effort */
      }
    }
    // only where there is something to keep: an awaited call that returns at once still costs promise hops per episode
    if (this.initialised && capturesArtifacts(this.env, r, this.options.artifacts))
      await captureArtifacts(this.env, this.rolloutId, r, this.options.artifacts, this.options.releaseTimeoutMs);
    if (this.initAttempted && this.options.release !== false) {
      const ms = this.options.releaseTimeoutMs ?? DEFAULT_TIMEOUTS.releaseMs;
      try {
        await withTimeout(
          this.env.release(this.rolloutId),
          ms,
          () => new EnvError(`${this.env.name}.release did not return within ${ms} ms`),
        );
      } catch (e) {
        r.metadata = { ...r.metadata, releaseError: errorMessage(e) };
      }
    }
  }

  /** The episode as one results.jsonl line (call after `close` for metadata and release errors). */
  result(): RolloutResult {
    const r = this.r;
    r.messages = this.options.keepMessages === false ? [] : this.messages;
    r.durationMs = performance.now() - this.started;
    if (this.tokens) {
      r.tokens = this.tokens;
      r.tokenDrift = tokenDriftTurns(this.tokens);
    }
    return r;
  }
}
