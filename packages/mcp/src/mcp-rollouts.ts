import { randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import {
  type Env,
  EnvError,
  Episode,
  InfraError,
  type Message,
  type RewardComponents,
  resolveSystemPrompt,
  type Task,
} from "@benchmax/core";
import { Admission, HttpError } from "@benchmax/server";

/** A harness-side failure with an HTTP status: the server's one typed error (status and stable code). */
export const HarnessError = HttpError;
export type HarnessError = HttpError;

/** One rollout behind an MCP session. Its task starts lazily (on the first tool call) unless the harness created it. */
export interface McpRollout {
  readonly id: string;
  readonly token: string;
  readonly tokenBytes: Buffer;
  /** The task the harness named, if any (else the next task in turn). */
  taskId?: string;
  ready?: Promise<Task>;
  task?: Task;
  /** Core's episode engine behind the session: tool calls, limits, the one score, the release. */
  episode?: Episode;
  toolCalls: number;
  scoring: boolean;
  released: boolean;
  lastUsed: number;
  busy: number;
  /** Released when its MCP session ends (rollouts a session made for itself); harness-made ones wait for the harness. */
  sessionOwned: boolean;
  /** The client that created it (remote address), for per-client admission. */
  client?: string;
}

export interface RewardOutcome {
  reward: number;
  rewards: RewardComponents;
  passed: boolean;
}

/**
 * The messages the reward scores when the harness sends only the final text: the env's system prompt, the task's
 * prompt (or messages), then `completion` verbatim as the assistant's final message. Each env's reward reads that
 * message its own way (math: the last `<answer>…</answer>` or `\boxed{}`), so `answer=34` scores 0 where
 * `<answer>34</answer>` scores 1.
 */
export function rewardMessages(env: Env, task: Task, completion: string): Message[] {
  return [
    { role: "system", content: resolveSystemPrompt(env, task) },
    ...(task.messages ?? (task.prompt !== undefined ? [{ role: "user" as const, content: task.prompt }] : [])),
    { role: "assistant", content: completion },
  ];
}

/** Chooses tasks: the id the harness names, else the next in turn; envs without tasks get an empty one. */
export class TaskPicker {
  private tasks?: Promise<Task[]>;
  private next = 0;
  private sessions = 0;
  constructor(
    private readonly env: Env,
    private readonly given?: Task[],
  ) {}

  all(): Promise<Task[]> {
    this.tasks ??= this.given
      ? Promise.resolve(this.given)
      : this.env.loadTasks
        ? this.env.loadTasks()
        : Promise.resolve([]);
    return this.tasks;
  }

  async pick(taskId?: string): Promise<Task> {
    const tasks = await this.all();
    const n = this.sessions++;
    if (taskId !== undefined) {
      const t = tasks.find((x) => x.id === taskId);
      if (!t) {
        const ids = tasks.slice(0, 10).map((x) => x.id);
        throw new HarnessError(
          404,
          "UNKNOWN_TASK",
          `unknown task_id "${taskId}" (tasks: ${ids.join(", ")}${tasks.length > 10 ? ", …" : ""})`,
        );
      }
      return t;
    }
    if (!tasks.length) return { id: `mcp-${n}`, groundTruth: undefined };
    return tasks[this.next++ % tasks.length]!;
  }
}

export interface McpRolloutsOptions {
  /** Live rollouts at most (default 1024); beyond it a new session or rollout is refused. */
  maxRollouts?: number;
  /** Live rollouts one client (remote address) may hold (default: maxRollouts). */
  maxRolloutsPerClient?: number;
  /** At capacity, a client under its fair share takes the place of other clients' rollouts idle this long (30 s). */
  reclaimIdleMs?: number;
  /** Release a rollout unused this long (ms, default 10 min). */
  idleTimeoutMs?: number;
}

/** The rollouts of a served env: capability tokens, capacity, idle expiry, lazy start, one score each. */
export class McpRollouts {
  readonly byId = new Map<string, McpRollout>();
  private readonly byToken = new Map<string, McpRollout>();
  readonly maxRollouts: number;
  readonly idleTimeoutMs: number;
  private sweeper?: NodeJS.Timeout;
  readonly admission: Admission<McpRollout>;

  constructor(
    readonly env: Env,
    readonly picker: TaskPicker,
    options: McpRolloutsOptions = {},
  ) {
    this.maxRollouts = options.maxRollouts ?? 1024;
    this.admission = new Admission({
      max: this.maxRollouts,
      maxPerClient: options.maxRolloutsPerClient,
      reclaimIdleMs: options.reclaimIdleMs,
    });
    this.idleTimeoutMs = options.idleTimeoutMs ?? 600_000;
    if (Number.isFinite(this.idleTimeoutMs) && this.idleTimeoutMs > 0) {
      this.sweeper = setInterval(() => void this.sweep(), Math.max(10, Math.min(this.idleTimeoutMs / 2, 30_000)));
      this.sweeper.unref();
    }
  }

  get active(): number {
    return this.byId.size;
  }

  create(taskId: string | undefined, sessionOwned: boolean, client?: string): McpRollout {
    // at capacity, idle rollouts of clients over their share make room (their release is synchronous bookkeeping)
    for (const v of this.admission.admit(client, 1, this.byId)) void this.release(v);
    const token = randomBytes(24).toString("base64url");
    const r: McpRollout = {
      id: `mcp-${randomUUID()}`,
      token,
      tokenBytes: Buffer.from(token),
      taskId,
      toolCalls: 0,
      scoring: false,
      released: false,
      lastUsed: Date.now(),
      busy: 0,
      sessionOwned,
    };
    if (client !== undefined) r.client = client;
    this.byId.set(r.id, r);
    this.admission.add(r);
    this.byToken.set(token, r);
    return r;
  }

  /** Start the rollout (env.init on its task) once. */
  start(r: McpRollout): Promise<Task> {
    if (r.released) return Promise.reject(new HarnessError(404, "UNKNOWN_ROLLOUT", `rollout ${r.id} was released`));
    r.ready ??= (async () => {
      const task = await this.picker.pick(r.taskId);
      const ep = await Episode.start(this.env, task, {
        rolloutId: r.id,
        toolFormat: "hermes",
        maxTurns: Number.MAX_SAFE_INTEGER,
      });
      if (ep.outcome === "env_error" || ep.outcome === "infra_error") {
        await ep.close();
        const msg = `could not start the rollout on task ${task.id}: ${ep.error ?? ep.outcome}`;
        throw ep.outcome === "infra_error" ? new InfraError(msg) : new EnvError(msg);
      }
      r.episode = ep;
      r.task = task;
      return task;
    })();
    r.ready.catch(() => {});
    return r.ready;
  }

  /** The live rollout a token opens (the token is the capability), or undefined. */
  ofToken(token: string): McpRollout | undefined {
    const r = this.byToken.get(token);
    return r && !r.released ? r : undefined;
  }

  /** A rollout by id and token: 404 unknown, 401 without the token, 403 with another. */
  get(id: string, token: string | undefined): McpRollout {
    const r = this.byId.get(id);
    if (!r || r.released)
      throw new HarnessError(404, "UNKNOWN_ROLLOUT", `unknown rollout "${id}" (never created, released or expired)`);
    if (!token) throw new HarnessError(401, "UNAUTHORIZED", `rollout "${id}" needs its token (X-Rollout-Token header)`);
    const t = Buffer.from(token);
    if (t.length !== r.tokenBytes.length || !timingSafeEqual(t, r.tokenBytes)) {
      throw new HarnessError(403, "FORBIDDEN", `wrong token for rollout "${id}"`);
    }
    return r;
  }

  async use<R>(r: McpRollout, fn: () => Promise<R>): Promise<R> {
    r.busy++;
    r.lastUsed = Date.now();
    try {
      return await fn();
    } finally {
      r.busy--;
      r.lastUsed = Date.now();
    }
  }

  /** Score the rollout, once (409 on a second try): from the final text, or the whole conversation. */
  async reward(r: McpRollout, input: { completion?: string; messages?: Message[] }): Promise<RewardOutcome> {
    if (r.scoring)
      throw new HarnessError(409, "ALREADY_SCORED", `rollout "${r.id}" was already scored; a rollout is scored once`);
    const task = await this.start(r);
    r.scoring = true;
    const messages = input.messages ?? rewardMessages(this.env, task, input.completion ?? "");
    // the episode engine scores once (reward timeout, finite check, the env's weights)
    const end = await this.use(r, () => r.episode!.finish(messages));
    if (end.reward === undefined || !end.rewards) {
      const msg = `${this.env.name}: scoring rollout ${r.id} failed (${end.outcome}): ${end.error ?? "no reward"}`;
      throw end.outcome === "infra_error" ? new InfraError(msg) : new EnvError(msg);
    }
    return { reward: end.reward, rewards: end.rewards, passed: end.reward >= (this.env.passThreshold ?? 1) };
  }

  async release(r: McpRollout): Promise<void> {
    if (r.released) return;
    r.released = true;
    this.byId.delete(r.id);
    this.byToken.delete(r.token);
    this.admission.remove(r);
    // closing the episode releases the env state (under its release timeout; it never throws)
    if (r.ready) await r.ready.then(() => r.episode?.close()).catch(() => {});
  }

  async sweep(now = Date.now()): Promise<void> {
    for (const r of [...this.byId.values()]) {
      if (r.busy === 0 && now - r.lastUsed > this.idleTimeoutMs) await this.release(r);
    }
  }

  async close(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    for (const r of [...this.byId.values()]) await this.release(r);
  }
}
