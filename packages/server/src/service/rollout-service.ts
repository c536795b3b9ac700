import {
  type ArtifactStore,
  type AssistantMessage,
  assertEnvShape,
  combineRewards,
  computeGroupRewards,
  type Env,
  Episode,
  type EpisodeEnd,
  type EpisodeOptions,
  type GroupMember,
  isInfraError,
  type Message,
  MessageSchema,
  passThresholdOf,
  type RewardComponents,
  type RolloutResult,
  randomBase64url,
  randomRolloutId,
  resolveSystemPrompt,
  rewardWeightsOf,
  type StepResult,
  type Task,
  type ToolCallRequest,
  type ToolFormat,
  type ToolResult,
  UsageError,
} from "@benchmax/core";
import { Admission } from "../admission.js";
import { equalsBytes } from "../auth.js";
import { ServerMetrics } from "../metrics.js";
import { RolloutTable } from "./rollout-table.js";
import { badRequest, conflict, notFound, RolloutServiceError } from "./service-error.js";
import { type TaskRef, TaskSource } from "./task-source.js";

/** What a client may tag a rollout with at creation: the trainer step, and its own group id. Forks inherit them. */
export interface RolloutTags {
  step?: number;
  group?: string;
}

/** One live rollout of the service, as transports read it. Change it only through the service. */
export interface ServedRollout {
  readonly id: string;
  /** The per-rollout capability token: whoever holds it may act on this rollout (and only on it). */
  readonly token: string;
  readonly task: Task;
  /** The client that created it (its remote address, or a transport's own key), for per-client admission. */
  readonly client?: string;
  readonly tags?: RolloutTags;
  /** Which transport made it ("v1", "reset", "ws", "mcp", "fork", …): OpenEnv's `/state` falls back to "reset" ones. */
  readonly origin: string;
  readonly toolFormat: ToolFormat;
  /** The client's own turn limit (SkyRL's `max_turns`), when it set one. */
  readonly maxTurns?: number;
  readonly createdAt: number;
  /** Steps and direct tool calls taken (OpenEnv's `step_count`). */
  readonly steps: number;
  /** Tool calls run, from replies and direct. */
  readonly toolCalls: number;
  /** No more steps or tool calls: the episode ended (scored, failed or truncated). */
  readonly done: boolean;
  readonly released: boolean;
  readonly reward?: number;
  readonly rewards?: RewardComponents;
  /** The conversation so far: the initial messages (system prompt with the tool section, task prompt) and steps. */
  readonly messages: readonly Message[];
  /** Requests in flight on it (an idle rollout has none). */
  readonly busy: number;
  readonly lastUsed: number;
}

/**
 * What stays of a released rollout whose episode ended, so its final state can be read back (OpenEnv's `/state` after
 * done): a few fields, not the rollout. Keeping the rollout itself kept its episode and whole conversation alive
 * until 1,024 later ones had finished, long enough for every episode's objects to be promoted to the old generation
 * and collected there.
 */
export interface FinalState {
  readonly id: string;
  readonly origin: string;
  readonly task: { readonly id: string };
  readonly steps: number;
  readonly toolCalls: number;
  readonly done: boolean;
  readonly reward?: number;
}

/** A final state with the rollout's token, checked like a live rollout's. */
interface Finished extends FinalState {
  readonly tokenBytes: Buffer;
}

/** A score: the combined reward, its named components, and whether it reaches the env's pass threshold. */
export interface ScoreOutcome {
  reward: number;
  rewards: RewardComponents;
  passed: boolean;
}

/** What to score: the conversation a client kept, or the model's final text (see `conversationFor`). */
export type ScoreInput = { messages: Message[] } | { completion: string };

/** A step of a rollout: core's step result, with `passed` when the step ended and scored it. */
export interface ServiceStep extends StepResult {
  passed?: boolean;
}

export interface CreateOptions {
  /** The task by reference (id, inline row, seed, or none: the next task). Ignored when `task` is given. */
  from?: TaskRef;
  /** A task already resolved with `resolveTask`. */
  task?: Task;
  /** A client-chosen rollout id (OpenEnv `reset(episode_id=…)`): checked, and refused while one with it is live. */
  id?: string;
  /** The client's turn limit (1..10000): the last reply's tool calls are then not run (SkyRL's rule). */
  maxTurns?: number;
  /** How tools reach the model: "hermes" (a `<tools>` section in the system prompt, the default) or "openai". */
  toolFormat?: ToolFormat;
  client?: string;
  tags?: RolloutTags;
  /** Which transport made it (default "api"). */
  origin?: string;
}

/** Limits of every rollout, enforced by core's Episode timers. Defaults: core's (`DEFAULT_TIMEOUTS`). */
export interface ServiceLimits {
  initTimeoutMs?: number;
  toolTimeoutMs?: number;
  rewardTimeoutMs?: number;
  releaseTimeoutMs?: number;
  /** Wall-clock budget of one episode from its creation (default: the env's `episodeDefaults`, else none). */
  deadlineMs?: number;
}

export interface RolloutServiceOptions extends ServiceLimits {
  /** Live rollouts at most (default 1024); beyond it creation fails with `capacity`. */
  maxRollouts?: number;
  /** Live rollouts one client may hold (default: maxRollouts); beyond it `client_limit`. */
  maxRolloutsPerClient?: number;
  /** At capacity, a client under its fair share takes the place of other clients' rollouts idle this long (30 s). */
  reclaimIdleMs?: number;
  /** A rollout unused this long is released (default 10 min; 0 or Infinity: never). */
  idleTimeoutMs?: number;
  /** The dataset a rollout draws from (default: `env.loadTasks()`). */
  tasks?: Task[];
  /** Client-built tasks may name host files only under this directory; without it, none. */
  dataRoot?: string;
  /** Turns an episode may take when the client sets no limit (default 1000). */
  maxTurns?: number;
  /** Counters (shared with the transports' request counters). */
  metrics?: ServerMetrics;
  /**
   * Called once per rollout whose episode ended (scored, failed or truncated), when it is released, with its record
   * (a results.jsonl line: messages scored, outcome, reward, `groupId` and `trainerStep` from its tags). Recording
   * and outcome metrics hang here, once for every transport. Exceptions are swallowed.
   */
  onFinished?: (result: RolloutResult, rollout: ServedRollout) => void;
  /** Keep each scored rollout's final-state artifacts (`env.artifacts`) here, so `rescore` can re-score it. */
  artifacts?: ArtifactStore;
}

/** The service's own record of a rollout. */
class Rollout implements ServedRollout {
  readonly tokenBytes: Buffer;
  readonly createdAt = Date.now();
  lastUsed = this.createdAt;
  busy = 0;
  steps = 0;
  toolCalls = 0;
  released = false;
  reward?: number;
  rewards?: RewardComponents;
  tags?: RolloutTags;
  maxTurns?: number;
  client?: string;
  /** What was scored ("episode" when a step ended it), and the one outcome (a failure rejects). */
  scoreKey?: string;
  scored?: Promise<ScoreOutcome>;
  /** The conversation scored, when the client sent its own. */
  scoredMessages?: Message[];
  episode!: Episode;

  constructor(
    readonly id: string,
    readonly token: string,
    readonly task: Task,
    readonly origin: string,
    readonly toolFormat: ToolFormat,
    /** Its slot in the service's table (its token ends in `~N`; a minted id in `.N`). */
    readonly slot: number,
  ) {
    this.tokenBytes = Buffer.from(token);
  }

  get done(): boolean {
    return this.episode.done;
  }
  get messages(): readonly Message[] {
    return this.episode.messages;
  }
}

const EPISODE_KEY = "\u0000episode";
/** Client-chosen ids become rollout ids, so no path characters. */
const CLIENT_ID = /^[A-Za-z0-9_-][A-Za-z0-9._:-]{0,254}$/;
const MessagesSchema = MessageSchema.array();
/** Finished rollouts whose final state stays readable (OpenEnv reads `/state` after done). */
const KEEP_FINISHED = 1024;

/** An array of chat messages in the OpenAI shape, as core's schema defines it. */
export function isMessages(v: unknown): v is Message[] {
  return MessagesSchema.safeParse(v).success;
}

/** The error of an episode that ended without a reward: `infra_error` for infrastructure, else `env_error`. */
export function failureOf(end: EpisodeEnd, what: string): RolloutServiceError {
  const message = `${what} ended ${end.outcome} without a reward${end.error ? `: ${end.error}` : ""}`;
  return new RolloutServiceError(end.outcome === "infra_error" ? "infra_error" : "env_error", message, {
    reason: end.outcome === "infra_error" ? "INFRA_ERROR" : "EXECUTION_ERROR",
  });
}

const startStep = (r: Rollout, reply: AssistantMessage | string): Promise<StepResult> => r.episode.step(reply);
const startToolCall = (r: Rollout, call: ToolCallRequest): Promise<ToolResult> => r.episode.callTool(call);
const callError = (e: unknown): unknown => failed(e, "");

/**
 * The rollout service: a rollout's whole life, transport-neutral, on core's Episode. HTTP `/v1`, OpenEnv HTTP and
 * WebSocket, and MCP are adapters over it that map `RolloutServiceError` codes once.
 *
 * It owns per-rollout capability tokens, capacity with per-client admission, the idle sweep, score-once, and every
 * time limit (init, tool, reward, release, episode deadline: Episode's own timers). Scoring always goes through
 * `Episode.finish`. A `{completion}` is scored against the conversation the model saw (`conversationFor`).
 */
export class RolloutService {
  readonly admission: Admission<Rollout>;
  readonly metrics: ServerMetrics;
  readonly maxRollouts: number;
  readonly idleTimeoutMs: number;
  readonly maxTurns: number;
  /** The live rollouts by id and by token (minted ids and tokens name a slot: no Map insert and delete per rollout). */
  private readonly live = new RolloutTable<Rollout>();
  /**
   * The last KEEP_FINISHED final states, a ring written once per release and searched newest first (only `/state`
   * after done reads it). Not a Map: a long-lived Map with an insert and two deletes per episode costs a microsecond
   * or more per episode on Node 20, where a ring slot costs nanoseconds.
   */
  private readonly finished: Array<Finished | undefined> = new Array(KEEP_FINISHED).fill(undefined);
  /** Where the next final state goes in `finished`. */
  private finishedAt = 0;
  /** The last final state put in `finished` (the newest). */
  private lastFinished?: Finished;
  private readonly source: TaskSource;
  private readonly sweeper?: NodeJS.Timeout;
  private readonly limits: ServiceLimits;
  private readonly onFinished?: RolloutServiceOptions["onFinished"];
  private readonly artifacts?: ArtifactStore;
  private closed = false;
  /** Ids of the last KEEP_FINISHED rollouts admission reclaimed, with why (insertion order: oldest first). */
  private readonly reclaimedIds = new Map<string, string>();

  constructor(
    readonly env: Env,
    options: RolloutServiceOptions = {},
  ) {
    // an env written for the flat contract would lose its capabilities here without a word
    assertEnvShape(env);
    this.maxRollouts = options.maxRollouts ?? 1024;
    this.admission = new Admission({
      max: this.maxRollouts,
      maxPerClient: options.maxRolloutsPerClient,
      reclaimIdleMs: options.reclaimIdleMs,
    });
    this.metrics = options.metrics ?? new ServerMetrics();
    this.idleTimeoutMs = options.idleTimeoutMs ?? 10 * 60_000;
    this.maxTurns = options.maxTurns ?? 1000;
    this.source = new TaskSource(env, options.tasks, options.dataRoot);
    this.onFinished = options.onFinished;
    this.artifacts = options.artifacts;
    this.limits = {
      initTimeoutMs: options.initTimeoutMs,
      toolTimeoutMs: options.toolTimeoutMs,
      rewardTimeoutMs: options.rewardTimeoutMs,
      releaseTimeoutMs: options.releaseTimeoutMs,
      deadlineMs: options.deadlineMs,
    };
    if (Number.isFinite(this.idleTimeoutMs) && this.idleTimeoutMs > 0) {
      const every = Math.max(10, Math.min(this.idleTimeoutMs / 2, 30_000));
      this.sweeper = setInterval(() => void this.sweep(), every);
      this.sweeper.unref();
    }
  }

  /** Live rollouts. */
  get active(): number {
    return this.live.size;
  }

  /** The live rollouts (read-only view, e.g. OpenEnv's "the one live episode" fallback). */
  rollouts(): IterableIterator<ServedRollout> {
    return this.live.values();
  }

  /** The dataset rollouts draw from (task ids and prompts; never send `groundTruth` to a client). */
  tasks(): Promise<Task[]> {
    return this.source.all();
  }

  /** The task a reference names (`bad_request`, `not_found` UNKNOWN_TASK, `forbidden` HOST_PATH). */
  resolveTask(ref: TaskRef = {}): Promise<Task> {
    return this.source.resolve(ref);
  }

  /** `resolveTask` without a promise where no wait is needed: undefined while the dataset has not loaded. */
  resolveTaskLoaded(ref: TaskRef = {}): Task | undefined {
    return this.source.resolveLoaded(ref);
  }

  /** The env's system prompt for a task (without the tool section). */
  systemPrompt(task: Task): string {
    return resolveSystemPrompt(this.env, task);
  }

  /** Check a client-chosen rollout id: its shape (`bad_request`), and that no live rollout has it (`conflict`). */
  checkId(id: unknown): string | undefined {
    if (id === undefined || id === null) return undefined;
    if (typeof id !== "string" || !CLIENT_ID.test(id)) {
      throw badRequest(
        `"episode_id" must be 1-255 characters of letters, digits, "_", "-", ".", ":" (not starting with "." or ":")`,
        "VALIDATION_ERROR",
        ["body", "episode_id"],
        id,
      );
    }
    if (this.live.get(id) !== undefined)
      throw conflict(`episode "${id}" is already live; pick another episode_id`, "EPISODE_EXISTS");
    return id;
  }

  /** A client's turn limit: undefined when absent, else an integer in 1..10000 (`bad_request` otherwise). */
  static checkMaxTurns(v: unknown): number | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > 10_000) {
      throw badRequest(
        `"maxTurns" must be an integer in 1..10000, got ${JSON.stringify(v)}`,
        "VALIDATION_ERROR",
        ["body", "maxTurns"],
        v,
      );
    }
    return v;
  }

  private episodeOptions(r: Rollout): EpisodeOptions {
    const o: EpisodeOptions = { rolloutId: r.id, toolFormat: r.toolFormat };
    if (this.artifacts) o.artifacts = this.artifacts;
    // a client's own limit follows SkyRL's rule: the last reply's tool calls are not run
    if (r.maxTurns !== undefined) {
      o.maxTurns = r.maxTurns;
      o.lastTurnTools = "skip";
    } else o.maxTurns = this.maxTurns;
    const l = this.limits;
    if (l.initTimeoutMs !== undefined) o.initTimeoutMs = l.initTimeoutMs;
    if (l.toolTimeoutMs !== undefined) o.toolTimeoutMs = l.toolTimeoutMs;
    if (l.rewardTimeoutMs !== undefined) o.rewardTimeoutMs = l.rewardTimeoutMs;
    if (l.releaseTimeoutMs !== undefined) o.releaseTimeoutMs = l.releaseTimeoutMs;
    if (l.deadlineMs !== undefined) o.deadlineMs = l.deadlineMs;
    return o;
  }

  /**
   * Room for `n` more rollouts of `client`: rollouts of clients over their fair share may be released for it (see
   * `Admission.admit`). Each one's id is remembered with why, so its holder's next request on it answers 404
   * ROLLOUT_RECLAIMED (an infrastructure outcome its client moves or retries; never a reward).
   */
  private admit(n: number, client: string | undefined): void {
    if (this.closed) throw new RolloutServiceError("capacity", "server is shutting down", { reason: "DRAINING" });
    for (const v of this.admission.admit(client, n, this.live)) {
      this.metrics.rolloutsReclaimed++;
      if (this.reclaimedIds.size >= KEEP_FINISHED) this.reclaimedIds.delete(this.reclaimedIds.keys().next().value!);
      this.reclaimedIds.set(
        v.id,
        `rollout "${v.id}" was reclaimed: the server was full (${this.maxRollouts} rollouts) and another client ` +
          `within its fair share needed a slot, so this one, the least recently used of its client (which held ` +
          `${this.admission.held(v.client)} rollouts, over its share), was released before it was scored (not a reward; ` +
          "start it again here or elsewhere)",
      );
      void this.release(v);
    }
  }

  /** A 404 for a rollout that is not live: ROLLOUT_RECLAIMED with why when admission reclaimed it, else UNKNOWN_ROLLOUT. */
  private gone(id: string, otherwise: string): RolloutServiceError {
    const why = this.reclaimedIds.get(id);
    return why ? notFound(why, "ROLLOUT_RECLAIMED") : notFound(otherwise, "UNKNOWN_ROLLOUT");
  }

  /** Why a rollout is gone, when admission reclaimed it (for a transport that held it, such as an MCP session). */
  reclaimedWhy(id: string): string | undefined {
    return this.reclaimedIds.get(id);
  }

  /** A new rollout in a slot of its own: its token ends in `~${slot}`, and its id (unless a client chose it) in `.${slot}`. */
  private mint(id: string | undefined, task: Task, origin: string, toolFormat: ToolFormat): Rollout {
    const slot = this.live.claim();
    return new Rollout(
      id ?? `${randomRolloutId()}.${slot}`,
      `${randomBase64url(24)}~${slot}`,
      task,
      origin,
      toolFormat,
      slot,
    );
  }

  private register(r: Rollout): void {
    this.live.add(r);
    this.admission.add(r);
    this.metrics.rolloutsCreated++;
  }

  private unregister(r: Rollout): void {
    if (this.live.remove(r)) this.admission.remove(r);
  }

  /**
   * Start a rollout: its task, a capability token, and core's Episode (env.init under the init limit; the initial
   * conversation). Fails with `bad_request` (a bad reference, or an env that rejects a client's own task:
   * TASK_REJECTED), `not_found`, `forbidden`, `conflict` (id live), `client_limit`, `capacity`, `env_error`,
   * `infra_error`.
   */
  async create(options: CreateOptions = {}): Promise<ServedRollout> {
    const id = this.checkId(options.id);
    const maxTurns = RolloutService.checkMaxTurns(options.maxTurns);
    // no await when the task resolves at once (the dataset is loaded): one promise less per rollout
    const task = options.task ?? this.source.resolveLoaded(options.from) ?? (await this.source.resolve(options.from));
    // an id may have been taken while the task loaded
    if (id !== undefined) this.checkId(id);
    this.admit(1, options.client);
    const r = this.mint(id, task, options.origin ?? "api", options.toolFormat ?? "hermes");
    if (maxTurns !== undefined) r.maxTurns = maxTurns;
    if (options.client !== undefined) r.client = options.client;
    if (options.tags) r.tags = options.tags;
    this.register(r);
    const t0 = performance.now();
    r.episode = await this.use(r, () => Episode.start(this.env, task, this.episodeOptions(r)));
    this.metrics.prom?.phase("init", performance.now() - t0);
    const failed = r.episode.outcome === "env_error" || r.episode.outcome === "infra_error";
    if (failed || r.released) {
      this.unregister(r);
      await r.episode.close();
      if (r.released) throw this.gone(r.id, `rollout "${r.id}" was released while it started`);
      const infra = r.episode.outcome === "infra_error";
      const why = r.episode.error ?? r.episode.outcome;
      if (this.source.isInline(task) && !infra) {
        throw badRequest(`task rejected by ${this.env.name}: ${why}`, "TASK_REJECTED");
      }
      throw new RolloutServiceError(infra ? "infra_error" : "env_error", `could not start task ${task.id}: ${why}`, {
        reason: infra ? "INFRA_ERROR" : "EXECUTION_ERROR",
      });
    }
    return r;
  }

  /**
   * A live rollout for a call: `not_found` when unknown (never created, released or expired), `unauthorized` without
   * its token, `forbidden` with another one (compared in constant time).
   */
  get(id: string, token: string | undefined): ServedRollout {
    const r = this.live.get(id);
    if (!r) throw this.gone(id, `unknown rollout "${id}" (never created, released, or expired)`);
    checkToken(r, token, "rollout");
    return r;
  }

  /** The live rollout a capability token opens (an MCP session's), or undefined. */
  byToken(token: string): ServedRollout | undefined {
    return this.live.byToken(token);
  }

  private own(r: ServedRollout): Rollout {
    if (!(r instanceof Rollout) || !this.live.holds(r)) {
      throw this.gone(r.id, `unknown rollout "${r.id}" (released or expired)`);
    }
    return r;
  }

  /** Run `fn` marked busy, so the idle sweep leaves the rollout alone; the idle clock restarts when it ends. */
  private use<R>(r: Rollout, fn: () => Promise<R>): Promise<R> {
    r.busy++;
    let p: Promise<R>;
    try {
      p = fn();
    } catch (e) {
      this.idle(r);
      return Promise.reject(e);
    }
    return p.then(
      (v) => {
        this.idle(r);
        return v;
      },
      (e: unknown) => {
        this.idle(r);
        throw e;
      },
    );
  }

  private idle(r: Rollout): void {
    r.busy--;
    r.lastUsed = Date.now();
  }

  /**
   * Copy an initialised rollout into `n` children (the env's fork capability + Episode.fork: conversation and counters), each with its
   * own token; they inherit the client, turn limit, tool format and tags (group: the parent's group, else its id).
   */
  async fork(parent: ServedRollout, n: number): Promise<ServedRollout[]> {
    const p = this.own(parent);
    if (!this.env.capabilities?.fork) {
      throw new RolloutServiceError("not_supported", `${this.env.name} does not support fork`, {
        reason: "NOT_SUPPORTED",
      });
    }
    if (!Number.isInteger(n) || n < 1 || n > 1024) throw badRequest(`"n" must be an integer in 1..1024, got ${n}`);
    if (p.done) throw conflict(`rollout "${p.id}" is done; fork before it ends`, "EPISODE_DONE");
    this.admit(n, p.client);
    const kids = Array.from({ length: n }, () => {
      const c = this.mint(undefined, p.task, "fork", p.toolFormat);
      if (p.maxTurns !== undefined) c.maxTurns = p.maxTurns;
      if (p.client !== undefined) c.client = p.client;
      c.tags = Object.assign({}, p.tags, { group: p.tags?.group ?? p.id });
      this.register(c);
      return c;
    });
    try {
      const eps = await this.use(p, () => p.episode.fork(kids.map((c) => c.id)));
      kids.forEach((c, i) => {
        c.episode = eps[i]!;
      });
    } catch (e) {
      for (const c of kids) {
        this.unregister(c);
        await Promise.resolve(this.env.release(c.id)).catch(() => {});
      }
      throw failed(e, "fork failed: ");
    }
    return kids;
  }

  /**
   * Take the model's reply (core's Episode.step: every tool call in it runs, the turn and deadline limits apply; a
   * reply without a call ends and scores the episode). `conflict` when done or while another step runs.
   */
  step(rollout: ServedRollout, reply: AssistantMessage | string): Promise<ServiceStep> {
    let r: Rollout;
    try {
      r = this.own(rollout);
      if (r.done) throw conflict(`rollout "${r.id}" is done (${r.episode.outcome}); create a new one`, "EPISODE_DONE");
      if (r.scoreKey !== undefined) {
        throw conflict(`rollout "${r.id}" was already scored; a rollout is scored once`, "ALREADY_SCORED");
      }
    } catch (e) {
      return Promise.reject(e);
    }
    // every OpenEnv step comes through here
    return this.busyWith(r, startStep, reply, this.afterStep, stepError);
  }

  /**
   * `r` marked busy (like `use`) while `start(r, arg)` runs, and idle again when it settles, with one `then` and no
   * async frame or closure per call: this is every transport's hot path (steps and direct tool calls). `done` takes
   * the result and the milliseconds it took; `error` maps a failure, thrown or rejected.
   */
  private busyWith<A, R, O>(
    r: Rollout,
    start: (r: Rollout, arg: A) => Promise<R>,
    arg: A,
    done: (r: Rollout, result: R, ms: number, arg: A) => O,
    error: (e: unknown) => unknown,
  ): Promise<O> {
    r.steps++;
    const t0 = performance.now();
    r.busy++;
    let p: Promise<R>;
    try {
      p = start(r, arg);
    } catch (e) {
      this.idle(r);
      return Promise.reject(error(e));
    }
    return p.then(
      (v) => {
        this.idle(r);
        return done(r, v, performance.now() - t0, arg);
      },
      (e: unknown) => {
        this.idle(r);
        throw error(e);
      },
    );
  }

  private readonly afterStep = (r: Rollout, s: StepResult, ms: number): ServiceStep => this.stepped(r, s, ms);

  private readonly afterToolCall = (r: Rollout, res: ToolResult, ms: number, call: ToolCallRequest): ToolResult => {
    this.metrics.observeToolCall(ms, res.isError, call.name);
    r.toolCalls++;
    return res;
  };

  /** A step's result: counted, and when it ended the episode, scored once (or failed). */
  private stepped(r: Rollout, s: StepResult, ms: number): ServiceStep {
    this.metrics.prom?.phase("step", ms);
    for (const t of s.tools) this.metrics.observeToolCall(ms / s.tools.length, t.result.isError, t.name);
    r.toolCalls += s.tools.length;
    if (!s.done) return s;
    r.scoreKey = EPISODE_KEY;
    if (s.reward === undefined || s.rewards === undefined) {
      r.scored = Promise.reject(failureOf(s as EpisodeEnd, `rollout "${r.id}"`));
      r.scored.catch(() => {});
      return s;
    }
    const out = this.scoredAs(r, s.reward, s.rewards);
    r.scored = Promise.resolve(out);
    return Object.assign({}, s, { passed: out.passed });
  }

  private scoredAs(r: Rollout, reward: number, rewards: RewardComponents): ScoreOutcome {
    this.metrics.rewards++;
    r.reward = reward;
    r.rewards = rewards;
    return { reward, rewards, passed: reward >= passThresholdOf(this.env) };
  }

  /**
   * One direct tool call (rollout API `/call`, OpenEnv `call_tool`, MCP `tools/call`): counted, timed and bound by
   * the tool limit and the episode deadline; no turn is added. `conflict` once the episode is done; an env failure
   * ends the episode and is thrown as `env_error` / `infra_error`.
   */
  callTool(rollout: ServedRollout, call: ToolCallRequest): Promise<ToolResult> {
    let r: Rollout;
    try {
      r = this.own(rollout);
    } catch (e) {
      return Promise.reject(e);
    }
    if (r.done) {
      return Promise.reject(
        conflict(`rollout "${r.id}" is done (${r.episode.outcome}); create a new one`, "EPISODE_DONE"),
      );
    }
    return this.busyWith(r, startToolCall, call, this.afterToolCall, callError);
  }

  /**
   * The conversation a `{completion}` is scored against: the one the model saw — the rollout's conversation (its
   * system prompt WITH the tool section of its tool format, the task prompt, and any steps taken through the
   * service) — then the completion as the final assistant message.
   */
  conversationFor(rollout: ServedRollout, completion: string): Message[] {
    return [...rollout.messages, { role: "assistant", content: completion }];
  }

  /**
   * Score a rollout ONCE, through `Episode.finish` (the reward time limit, finite components, the env's weights).
   * The same input again returns the stored outcome (a retry is safe); another input is `conflict` ALREADY_SCORED,
   * so no one can probe answers. A failed score is `env_error` / `infra_error`, never a reward 0.
   */
  score(rollout: ServedRollout, input: ScoreInput): Promise<ScoreOutcome> {
    let r: Rollout;
    let key: string;
    try {
      r = this.own(rollout);
      if ("messages" in input) {
        if (!isMessages(input.messages)) {
          throw badRequest(`"messages" must be an array of {role, content} messages`, "VALIDATION_ERROR", [
            "body",
            "messages",
          ]);
        }
        key = `m${JSON.stringify(input.messages)}`;
      } else {
        if (typeof input.completion !== "string") throw badRequest(`"completion" must be a string`);
        key = `c${input.completion}`;
      }
    } catch (e) {
      return Promise.reject(e);
    }
    if (r.scoreKey !== undefined) {
      if (r.scoreKey === key && r.scored) return r.scored;
      return Promise.reject(
        conflict(`rollout "${r.id}" was already scored; a rollout is scored once`, "ALREADY_SCORED"),
      );
    }
    const messages = "messages" in input ? input.messages : this.conversationFor(r, input.completion);
    r.scoreKey = key;
    if ("messages" in input) r.scoredMessages = messages;
    const t0 = performance.now();
    r.scored = this.use(r, () => r.episode.finish(messages)).then((end) => {
      this.metrics.prom?.phase("reward", performance.now() - t0);
      if (end.reward === undefined || end.rewards === undefined) throw failureOf(end, `scoring rollout "${r.id}"`);
      return this.scoredAs(r, end.reward, end.rewards);
    });
    return r.scored;
  }

  /**
   * Group-relative rewards for G scored members of one task (`env.computeGroupReward` through core's
   * `computeGroupRewards`: the reward time limit, one object of finite components per member), and each member's
   * combined reward (its own components with the group's, the env's weights). `not_supported` without a group reward;
   * a failure is `env_error` / `infra_error`, never a reward 0.
   */
  async groupReward(
    task: Task,
    members: Array<{ rolloutId: string; messages: Message[]; rewards: RewardComponents }>,
  ): Promise<{ rewards: RewardComponents[]; combined: number[] }> {
    if (!this.env.capabilities?.groupReward) {
      throw new RolloutServiceError("not_supported", `${this.env.name} has no group reward`, {
        reason: "NOT_SUPPORTED",
      });
    }
    const group: GroupMember[] = members.map((m) => Object.assign({}, m, { task }));
    let extra: RewardComponents[];
    try {
      const o = this.limits.rewardTimeoutMs === undefined ? {} : { rewardTimeoutMs: this.limits.rewardTimeoutMs };
      extra = await computeGroupRewards(this.env, group, o);
    } catch (e) {
      throw failed(e, "group reward failed: ");
    }
    return {
      rewards: extra,
      combined: extra.map((e, i) => combineRewards({ ...members[i]!.rewards, ...e }, rewardWeightsOf(this.env))),
    };
  }

  /**
   * Release a rollout: its episode closes (env.release under the release limit; never throws), its final state stays
   * readable (`finalState`), and `onFinished` gets its record when its episode ended. Idempotent.
   */
  async release(rollout: ServedRollout): Promise<void> {
    const r = rollout as Rollout;
    if (r.released || !(r instanceof Rollout)) return;
    r.released = true;
    this.unregister(r);
    if (!r.episode) return; // released while it started: `create` closes it
    const ended = r.episode.done;
    await r.episode.close();
    this.metrics.rolloutsReleased++;
    if (!ended) return;
    const final: Finished = {
      id: r.id,
      origin: r.origin,
      task: { id: r.task.id },
      steps: r.steps,
      toolCalls: r.toolCalls,
      done: r.done,
      // always the field (undefined when not scored): one shape, where a spread of `{ reward }` made two and cost
      // about a microsecond per release
      reward: r.reward,
      tokenBytes: r.tokenBytes,
    };
    this.finished[this.finishedAt] = final;
    this.finishedAt = (this.finishedAt + 1) % KEEP_FINISHED;
    this.lastFinished = final;
    if (this.onFinished) {
      try {
        this.onFinished(this.recordOf(r), r);
      } catch {
        /* a hook never breaks a release */
      }
    }
  }

  /** A finished rollout's record: the episode's result, with the conversation scored and the tags. */
  private recordOf(r: Rollout): RolloutResult {
    const out = r.episode.result();
    if (r.scoredMessages) {
      out.messages = r.scoredMessages;
      out.turns = r.scoredMessages.filter((m) => m.role === "assistant").length;
    }
    const tags = r.tags;
    out.groupId = tags?.group ?? (tags?.step !== undefined ? `${r.task.id}@${tags.step}` : r.task.id);
    if (tags?.step !== undefined) out.trainerStep = tags.step;
    return out;
  }

  /**
   * A finished (released) rollout, so its final state can be read back after done: by id (with its token, checked
   * like a live one), or with no id the last one `origin` made. Undefined when none is kept.
   */
  finalState(id: string | undefined, token: string | undefined, origin = "reset"): FinalState | undefined {
    if (id === undefined) {
      const last = this.lastFinished;
      return last?.origin === origin ? last : undefined;
    }
    // newest first: a client-chosen id used again reads its latest episode
    for (let k = 1; k <= KEEP_FINISHED; k++) {
      const r = this.finished[(this.finishedAt - k + KEEP_FINISHED) % KEEP_FINISHED];
      if (r === undefined) return undefined;
      if (r.id !== id) continue;
      checkToken(r, token, "episode");
      return r;
    }
    return undefined;
  }

  /** Release rollouts idle longer than the idle timeout; returns how many. */
  async sweep(now = Date.now()): Promise<number> {
    let n = 0;
    for (const r of [...this.live.values()]) {
      if (r.busy === 0 && now - r.lastUsed > this.idleTimeoutMs) {
        n++;
        this.metrics.rolloutsExpired++;
        await this.release(r);
      }
    }
    return n;
  }

  /** Refuse new rollouts, stop the sweep and release every live rollout. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.sweeper) clearInterval(this.sweeper);
    for (const r of [...this.live.values()]) await this.release(r);
  }
}

function checkToken(r: { id: string; tokenBytes: Buffer }, token: string | undefined, what: string): void {
  if (!token) {
    throw new RolloutServiceError("unauthorized", `${what} "${r.id}" needs its token (X-Rollout-Token header)`, {
      reason: "UNAUTHORIZED",
    });
  }
  if (!equalsBytes(token, r.tokenBytes)) {
    throw new RolloutServiceError("forbidden", `wrong token for ${what} "${r.id}"`, { reason: "FORBIDDEN" });
  }
}

/** Two steps at once on one episode (core's UsageError) is the client's `conflict`; anything else as it is. */
function stepError(e: unknown): unknown {
  return e instanceof UsageError ? conflict(e.message, "STEP_IN_PROGRESS") : e;
}

/** An env call's failure as the service's error: `infra_error` for infrastructure, else `env_error`. */
function failed(e: unknown, prefix: string): RolloutServiceError {
  const infra = isInfra(e);
  return new RolloutServiceError(infra ? "infra_error" : "env_error", `${prefix}${errorText(e)}`, {
    reason: infra ? "INFRA_ERROR" : "EXECUTION_ERROR",
    cause: e,
  });
}

function isInfra(e: unknown): boolean {
  return e instanceof RolloutServiceError ? e.code === "infra_error" : isInfraError(e);
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message || e.name : String(e);
}
