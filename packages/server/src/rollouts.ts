import { timingSafeEqual } from "node:crypto";
import {
  type AssistantMessage,
  assertFiniteRewards,
  buildInitialMessages,
  combineRewards,
  type Env,
  Episode,
  isInfraError,
  type Message,
  MessageSchema,
  type RewardComponents,
  resolveSystemPrompt,
  type Task,
  TaskSchema,
  type ToolCallRequest,
  type ToolResult,
} from "@benchmax/core";
import { Admission } from "./admission.js";
import { checkHostPaths, resolveHostPaths } from "./host-paths.js";
import { HttpError } from "./http-error.js";
import type { ServerMetrics } from "./metrics.js";
import { stateOf } from "./openenv.js";
import { randomBase64url } from "./random-id.js";
import type { RolloutTags } from "./service/rollout-service.js";
import { badRequest, conflict, notFound } from "./service/service-error.js";

/** One live rollout on the server. */
export interface Rollout {
  id: string;
  token: string;
  /** `token` as bytes, for the constant-time check. */
  tokenBytes: Buffer;
  task: Task;
  createdAt: number;
  lastUsed: number;
  /** Requests in flight for this rollout (an idle rollout has none). */
  busy: number;
  steps: number;
  toolCalls: number;
  done: boolean;
  released: boolean;
  /** The conversation, kept for OpenEnv `/step` (the rollout API's clients send their own). */
  messages: Message[];
  reward?: number;
  rewards?: RewardComponents;
  /** Started by an HTTP OpenEnv `/reset` (the only kind a `/step` naming no episode may fall back to). */
  viaReset?: boolean;
  /** Set when scoring starts: a rollout is scored once. */
  scoring?: boolean;
  /** Core's episode engine, driving OpenEnv message actions on this rollout (started on the first one). */
  episode?: Episode;
  /**
   * The client's own turn limit (`POST /v1/rollouts {maxTurns}`, SkyRL's `max_turns`): the engine ends the episode
   * at that many replies and skips the last reply's tool calls, as SkyRL's generator does. Forks inherit it.
   */
  maxTurns?: number;
  /** The client that created it (its remote address), for per-client admission; forks inherit it. */
  client?: string;
  /** The trainer step and group the client tagged it with (`serve --record`); forks inherit them. */
  tags?: RolloutTags;
  /** The conversation `/reward` scored (kept for `serve --record`). */
  scoredMessages?: Message[];
}

export interface RewardOutcome {
  reward: number;
  rewards: RewardComponents;
  passed: boolean;
}

export interface RolloutManagerOptions {
  maxRollouts?: number;
  /** Live rollouts one client (remote address) may hold (default: maxRollouts). */
  maxRolloutsPerClient?: number;
  /** At capacity, a client under its fair share takes the place of rollouts idle this long (default 30 s). */
  reclaimIdleMs?: number;
  idleTimeoutMs?: number;
  tasks?: Task[];
  /**
   * Client-built tasks may name files on this host only under this directory (the operator's data root). Without
   * one, a client task naming a host path is refused.
   */
  dataRoot?: string;
  /** Turns an OpenEnv episode may take before it ends truncated (default 1000). */
  maxTurns?: number;
  /** Called once per released rollout, after its episode (if any) closed; `episodeEnded` is read before that. */
  onReleased?: (r: Rollout, episodeEnded: boolean) => void;
}

/** Client-chosen episode ids (OpenEnv `reset(episode_id=…)`): they become rollout ids, so no path characters. */
const EPISODE_ID = /^[A-Za-z0-9_-][A-Za-z0-9._:-]{0,254}$/;

const newId = (prefix: string, bytes: number) => `${prefix}${randomBase64url(bytes)}`;

/** The wire shape of a conversation: core's zod schema is the one definition (checked, the objects kept as sent). */
const MessagesSchema = MessageSchema.array();

/** An array of chat messages in the OpenAI shape (system / user / assistant / tool), as core's schema defines it. */
export function isMessages(v: unknown): v is Message[] {
  return MessagesSchema.safeParse(v).success;
}

/** A client-built task: core's `TaskSchema`, with a prompt or messages and a `groundTruth` field. */
function isTaskShape(v: unknown): v is Task {
  const r = TaskSchema.safeParse(v);
  return r.success && (r.data.prompt !== undefined || r.data.messages !== undefined) && "groundTruth" in (v as object);
}

/**
 * Rollout bookkeeping shared by the HTTP rollout API, the OpenEnv endpoints and the WebSocket sessions:
 * capability tokens, capacity, idle expiry, and the env calls themselves.
 */
export class RolloutManager {
  readonly rollouts = new Map<string, Rollout>();
  readonly maxRollouts: number;
  readonly idleTimeoutMs: number;
  private taskList?: Task[];
  private taskIndex?: Map<string, Task>;
  private loading?: Promise<Task[]>;
  private cursor = 0;
  private sweeper?: NodeJS.Timeout;
  /** Tasks a client supplied (not from the server's dataset): an env that rejects one is the client's fault. */
  private readonly inline = new WeakSet<Task>();
  private readonly dataRoot?: string;
  readonly maxTurns: number;
  readonly admission: Admission<Rollout>;
  private readonly onReleased?: (r: Rollout, episodeEnded: boolean) => void;
  /** Final states of finished episodes, kept so `/state` can read one back after done (bounded, oldest dropped). */
  private readonly finished = new Map<
    string,
    { tokenBytes: Buffer; state: Record<string, unknown>; viaReset: boolean }
  >();

  constructor(
    readonly env: Env,
    readonly metrics: ServerMetrics,
    options: RolloutManagerOptions = {},
  ) {
    this.maxRollouts = options.maxRollouts ?? 1024;
    this.admission = new Admission({
      max: this.maxRollouts,
      maxPerClient: options.maxRolloutsPerClient,
      reclaimIdleMs: options.reclaimIdleMs,
    });
    this.idleTimeoutMs = options.idleTimeoutMs ?? 10 * 60_000;
    if (options.tasks) this.setTasks(options.tasks);
    this.dataRoot = options.dataRoot;
    this.maxTurns = options.maxTurns ?? 1000;
    this.onReleased = options.onReleased;
    if (Number.isFinite(this.idleTimeoutMs) && this.idleTimeoutMs > 0) {
      const every = Math.max(10, Math.min(this.idleTimeoutMs / 2, 30_000));
      this.sweeper = setInterval(() => void this.sweep(), every);
      this.sweeper.unref();
    }
  }

  get active(): number {
    return this.rollouts.size;
  }

  private setTasks(tasks: Task[]): void {
    this.taskList = tasks;
    this.taskIndex = new Map(tasks.map((t) => [t.id, t]));
  }

  /** The env's default dataset (its fixtures unless the server was given tasks). */
  async tasks(): Promise<Task[]> {
    if (this.taskList) return this.taskList;
    if (!this.env.loadTasks) return [];
    this.loading ??= this.env.loadTasks().then((t) => {
      this.setTasks(t);
      return t;
    });
    return this.loading;
  }

  /**
   * A task from a request body: `{taskId}`, `{task}` (a Task or any raw row the env's parseTask accepts), `{seed}`
   * (OpenEnv's reset: the same seed always picks the same dataset task), or none of them (the next task).
   */
  async resolveTask(body: Record<string, unknown>): Promise<Task> {
    const seed = body.seed;
    if (seed !== undefined && seed !== null) {
      if (typeof seed !== "number" || !Number.isInteger(seed) || seed < 0) {
        throw badRequest(
          `"seed" must be an integer >= 0, got ${JSON.stringify(seed)}`,
          "VALIDATION_ERROR",
          ["body", "seed"],
          seed,
        );
      }
    }
    const taskId = body.taskId ?? body.task_id;
    if (taskId !== undefined && typeof taskId !== "string") throw badRequest(`"taskId" must be a string`);
    if (taskId !== undefined) {
      await this.tasks();
      const t = this.taskIndex?.get(taskId);
      if (t) return t;
      if (body.task === undefined)
        throw notFound(`unknown task id "${taskId}" in ${this.env.name}'s dataset`, "UNKNOWN_TASK");
    }
    if (body.task !== undefined) {
      checkHostPaths(body.task, this.dataRoot);
      // relative host paths count from the data root (H3: portable SkyRL exports)
      const raw = resolveHostPaths(body.task, this.dataRoot);
      if (isTaskShape(raw)) {
        this.inline.add(raw);
        return raw;
      }
      if (!this.env.parseTask) {
        throw badRequest(`"task" must be {id, prompt | messages, groundTruth} (${this.env.name} has no parseTask)`);
      }
      let task: Task;
      try {
        task = this.env.parseTask(raw, "task");
      } catch (e) {
        // whatever the parser chokes on is the row's fault
        throw badRequest(e instanceof Error ? e.message : String(e));
      }
      if (!isTaskShape(task)) throw badRequest(`"task" did not parse into {id, prompt | messages, groundTruth}`);
      checkHostPaths(task, this.dataRoot);
      this.inline.add(task);
      return task;
    }
    const all = await this.tasks();
    if (all.length === 0) throw badRequest(`${this.env.name} has no default dataset: name a "task"`, "NO_TASKS");
    if (typeof seed === "number") return all[seed % all.length]!;
    return all[this.cursor++ % all.length]!;
  }

  /** Room for `n` more rollouts of `client`: idle rollouts of clients over their share may be released for it. */
  private checkCapacity(n: number, client: string | undefined): void {
    for (const v of this.admission.admit(client, n, this.rollouts)) {
      this.metrics.rolloutsReclaimed++;
      void this.release(v).catch(() => {});
    }
  }

  private register(task: Task, id?: string, client?: string): Rollout {
    const now = Date.now();
    const token = newId("", 24);
    const r: Rollout = {
      id: id ?? newId("r_", 12),
      token,
      tokenBytes: Buffer.from(token),
      task,
      createdAt: now,
      lastUsed: now,
      busy: 0,
      steps: 0,
      toolCalls: 0,
      done: false,
      released: false,
      messages: [],
    };
    if (client !== undefined) r.client = client;
    this.rollouts.set(r.id, r);
    this.admission.add(r);
    this.metrics.rolloutsCreated++;
    return r;
  }

  /** Check a client-chosen episode id (OpenEnv `reset(episode_id=…)`): its shape, and that no live rollout has it. */
  checkEpisodeId(id: unknown): string | undefined {
    if (id === undefined || id === null) return undefined;
    if (typeof id !== "string" || !EPISODE_ID.test(id)) {
      throw badRequest(
        `"episode_id" must be 1-255 characters of letters, digits, "_", "-", ".", ":" (not starting with "." or ":")`,
        "VALIDATION_ERROR",
        ["body", "episode_id"],
        id,
      );
    }
    if (this.rollouts.has(id))
      throw conflict(`episode "${id}" is already live; pick another episode_id`, "EPISODE_EXISTS");
    return id;
  }

  /** A client's `maxTurns`: undefined when absent, else an integer in 1..10,000 (422 otherwise). */
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

  async create(task: Task, options: { id?: string; maxTurns?: number; client?: string } = {}): Promise<Rollout> {
    if (options.id !== undefined) this.checkEpisodeId(options.id);
    this.checkCapacity(1, options.client);
    const r = this.register(task, options.id, options.client);
    if (options.maxTurns !== undefined) r.maxTurns = options.maxTurns;
    try {
      const t0 = performance.now();
      await this.env.init(r.id, task);
      this.metrics.prom?.phase("init", performance.now() - t0);
      // a client's task must also render into a prompt (the env reads its fields there)
      if (this.inline.has(task)) buildInitialMessages(this.env, task);
    } catch (e) {
      this.rollouts.delete(r.id);
      this.admission.remove(r);
      await this.env.release(r.id).catch(() => {});
      if (this.inline.has(task) && !isInfraError(e)) {
        throw badRequest(
          `task rejected by ${this.env.name}: ${e instanceof Error ? e.message : String(e)}`,
          "TASK_REJECTED",
        );
      }
      throw e;
    }
    return r;
  }

  /**
   * Look up a rollout for a call: 404 when unknown (never created, released or expired),
   * 401 without its token, 403 with another token.
   */
  get(id: string, token: string | undefined): Rollout {
    const r = this.rollouts.get(id);
    if (!r) throw notFound(`unknown rollout "${id}" (never created, released, or expired)`, "UNKNOWN_ROLLOUT");
    if (!token) throw new HttpError(401, "UNAUTHORIZED", `rollout "${id}" needs its token (X-Rollout-Token header)`);
    if (Buffer.byteLength(token) !== r.tokenBytes.length || !timingSafeEqual(Buffer.from(token), r.tokenBytes))
      throw new HttpError(403, "FORBIDDEN", `wrong token for rollout "${id}"`);
    return r;
  }

  /**
   * Run `fn` marked busy so the idle sweep leaves the rollout alone (the sweep skips a busy rollout, so the idle clock
   * restarts when the last request on it ends). One `then` rather than an async frame: this wraps every step.
   */
  use<R>(r: Rollout, fn: () => Promise<R>): Promise<R> {
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

  initialMessages(r: Rollout): Message[] {
    return buildInitialMessages(this.env, r.task, "hermes");
  }

  systemPrompt(task: Task): string {
    return resolveSystemPrompt(this.env, task);
  }

  /**
   * The rollout's episode in core's engine, started on first use: every transport (rollout API `/call` and `/step`,
   * OpenEnv actions, `/ws`, `/mcp`) drives this one state machine. The manager owns the env state (`release: false`).
   */
  episodeOf(r: Rollout): Episode | Promise<Episode> {
    if (r.episode) return r.episode;
    return this.startEpisode(r);
  }

  private async startEpisode(r: Rollout): Promise<Episode> {
    r.episode ??= await Episode.start(this.env, r.task, {
      rolloutId: r.id,
      initialized: true,
      release: false,
      toolFormat: "hermes",
      // a client's own limit follows SkyRL's rule: the last reply's tool calls are not run
      ...(r.maxTurns !== undefined
        ? { maxTurns: r.maxTurns, lastTurnTools: "skip" as const }
        : { maxTurns: this.maxTurns }),
    });
    return r.episode;
  }

  /** A direct tool call (rollout API `/call`, OpenEnv `call_tool`, MCP `tools/call`), counted and timed by the engine. */
  async callTool(r: Rollout, call: ToolCallRequest): Promise<ToolResult> {
    if (r.done) throw new HttpError(409, "EPISODE_DONE", `rollout "${r.id}" is done; create a new one`);
    const got = this.episodeOf(r);
    const ep = got instanceof Promise ? await got : got;
    if (ep.done) throw new HttpError(409, "EPISODE_DONE", `rollout "${r.id}" ended (${ep.outcome}); create a new one`);
    const t0 = performance.now();
    const res = await ep.callTool(call);
    this.metrics.observeToolCall(performance.now() - t0, res.isError, call.name);
    r.toolCalls++;
    return res;
  }

  /** Score a rollout, once: a second score of the same rollout is refused (409), so no one can probe answers. */
  async reward(r: Rollout, messages: Message[]): Promise<RewardOutcome> {
    if (r.scoring) throw conflict(`rollout "${r.id}" was already scored; a rollout is scored once`, "ALREADY_SCORED");
    r.scoring = true;
    let raw: RewardComponents;
    const t0 = performance.now();
    try {
      raw = await this.env.computeReward(r.id, messages, r.task);
      this.metrics.prom?.phase("reward", performance.now() - t0);
    } catch (e) {
      // an infrastructure failure scored nothing: the harness may retry
      if (isInfraError(e)) r.scoring = false;
      throw e;
    }
    const rewards = assertFiniteRewards(raw, `${this.env.name}.computeReward`);
    const reward = combineRewards(rewards, this.env.rewardWeights);
    this.metrics.rewards++;
    r.reward = reward;
    r.rewards = rewards;
    r.scoredMessages = messages;
    return { reward, rewards, passed: reward >= (this.env.passThreshold ?? 1) };
  }

  async fork(r: Rollout, n: number): Promise<Rollout[]> {
    if (!this.env.fork) throw new HttpError(501, "NOT_SUPPORTED", `${this.env.name} does not support fork`);
    if (!Number.isInteger(n) || n < 1 || n > 1024) throw badRequest(`"n" must be an integer in 1..1024, got ${n}`);
    this.checkCapacity(n, r.client);
    const children = Array.from({ length: n }, () => {
      const c = this.register(r.task, undefined, r.client);
      if (r.maxTurns !== undefined) c.maxTurns = r.maxTurns;
      c.tags = { ...r.tags, group: r.tags?.group ?? r.id };
      return c;
    });
    try {
      await this.env.fork(
        r.id,
        children.map((c) => c.id),
      );
    } catch (e) {
      for (const c of children) {
        this.rollouts.delete(c.id);
        this.admission.remove(c);
        await this.env.release(c.id).catch(() => {});
      }
      throw e;
    }
    return children;
  }

  async release(r: Rollout): Promise<void> {
    if (r.released) return;
    r.released = true;
    this.rollouts.delete(r.id);
    this.admission.remove(r);
    // HTTP /reset episodes only: a WebSocket session keeps its own, the rollout API reads state while live
    if (r.done && r.viaReset) this.remember(r);
    // the episode leaves env state to the manager (release: false): closing it only settles its record
    const ended = r.episode?.done === true;
    await r.episode?.close().catch(() => {});
    this.onReleased?.(r, ended);
    this.metrics.rolloutsReleased++;
    await this.env.release(r.id);
  }

  /** Keep a finished episode's final state (OpenEnv reads `/state` after done); at most 1024 are kept. */
  private remember(r: Rollout): void {
    if (this.finished.size >= 1024) this.finished.delete(this.finished.keys().next().value!);
    this.finished.set(r.id, { tokenBytes: r.tokenBytes, state: stateOf(r), viaReset: r.viaReset === true });
  }

  /**
   * The final state of a finished episode: by id (with its token, checked like a live one), or, with no id, the last
   * one a `/reset` started. Undefined when none is kept.
   */
  finalState(id: string | undefined, token: string | undefined): Record<string, unknown> | undefined {
    if (id === undefined) {
      const last = [...this.finished.values()].at(-1);
      return last?.viaReset ? last.state : undefined;
    }
    const f = this.finished.get(id);
    if (!f) return undefined;
    if (!token) throw new HttpError(401, "UNAUTHORIZED", `episode "${id}" needs its token (X-Rollout-Token header)`);
    if (Buffer.byteLength(token) !== f.tokenBytes.length || !timingSafeEqual(Buffer.from(token), f.tokenBytes))
      throw new HttpError(403, "FORBIDDEN", `wrong token for episode "${id}"`);
    return f.state;
  }

  /** Message form of a tool result for the conversation. */
  static toolMessage(id: string, name: string, res: ToolResult): Message {
    return { role: "tool", tool_call_id: id, name, content: res.content };
  }

  /** Release rollouts idle for longer than the timeout. */
  async sweep(now = Date.now()): Promise<number> {
    let n = 0;
    for (const r of [...this.rollouts.values()]) {
      if (r.busy === 0 && now - r.lastUsed > this.idleTimeoutMs) {
        n++;
        this.metrics.rolloutsExpired++;
        await this.release(r).catch(() => {});
      }
    }
    return n;
  }

  /** Release every rollout and stop the sweeper. */
  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    for (const r of [...this.rollouts.values()]) await this.release(r).catch(() => {});
  }
}

export type { AssistantMessage };
