import {
  checkGroupRewards,
  type Env,
  type EnvCapabilities,
  EnvError,
  errorMessage,
  type GroupMember,
  InfraError,
  type LoadTasksOptions,
  type Message,
  type RewardComponents,
  rewardCapability,
  type Task,
  type ToolCallRequest,
  type ToolResult,
  type ToolSpec,
  UsageError,
} from "@benchmax/core";
import {
  EnvClient,
  type EnvClientOptions,
  type HttpReply,
  INSTANCE_HEADER,
  isEndpointDown,
  type Probe,
  replyCode,
  replyMessage,
} from "./http-client.js";
import {
  callMigrating,
  isRolloutLost,
  liveRollout,
  type MigrationHost,
  migrationFailed,
  RolloutLostError,
} from "./migrating-call.js";
import {
  clip,
  forkLog,
  isReplayDiverged,
  type MigrationEvent,
  type MigrationStats,
  newLog,
  newStats,
  ReplayDivergedError,
  type RolloutLog,
  resultKey,
} from "./rollout-log.js";

/** What `GET /metadata` tells a client. */
export interface RemoteMetadata {
  name: string;
  description?: string;
  tools: ToolSpec[];
  rewardWeights: Record<string, number>;
  passThreshold?: number;
  systemPrompt?: string | null;
  hasFork?: boolean;
  hasGroupReward?: boolean;
  instance?: string;
  [key: string]: unknown;
}

export interface RemoteEnvOptions extends EnvClientOptions {
  /** Called after every migration of a rollout, successful or not. */
  onMigration?: (e: MigrationEvent) => void;
}

/** A rollout on its server: id, capability token and the server instance that holds it. */
interface Handle {
  id: string;
  token: string;
  instance?: string;
}

interface Held {
  handle: Handle;
  log: RolloutLog;
}

/** Tasks listed by a server: their gold data stayed there, so rollouts name them by id. */
const serverTasks = new WeakSet<object>();

/** Turn a non-2xx reply into the error the runner understands. */
export function errorOf(r: HttpReply, what: string, base: string): Error {
  const msg = `${base}: ${what} failed (HTTP ${r.status}): ${replyMessage(r)}`;
  const type = (r.body as { error?: { type?: string } } | undefined)?.error?.type;
  if (r.status === 401 || r.status === 403) return new InfraError(msg, { retryable: false });
  if (r.status === 503) {
    // full, draining or shutting down: another server may take it
    const draining = replyCode(r) === "DRAINING" || r.headers["x-benchmax-draining"] === "1";
    return Object.assign(new InfraError(msg), { unavailable: true, draining });
  }
  if (r.status >= 502 || type === "infra_error") return new InfraError(msg);
  if (r.status === 500 || type === "env_error") return new EnvError(msg);
  return new EnvError(msg);
}

/** A 503 answer to a create: the server is full, draining or shutting down. */
export function isUnavailable(e: unknown): boolean {
  return !!e && typeof e === "object" && (e as { unavailable?: boolean }).unavailable === true;
}

/**
 * An Env whose every call goes to a `benchmax serve` server (rollout API under /v1). It keeps each rollout's log (its
 * create body, fork lineage, and tool calls with their results), so a rollout its server lost — the server restarted
 * on the same URL as a new instance — is rebuilt there by replay, each replayed result checked against the log. Over
 * several servers, `RoutedEnv` moves lost rollouts to the others.
 */
export class RemoteEnv implements Env {
  readonly name: string;
  /**
   * What the server reported in `/metadata`: reward weights and threshold, description, its tasks (`GET /v1/tasks`),
   * fork (`hasFork`, default yes) and group reward (`hasGroupReward`).
   */
  readonly capabilities: EnvCapabilities;
  readonly client: EnvClient;
  /** Migrations done by this env on its own (a single server restarted); RoutedEnv counts its own. */
  readonly stats: MigrationStats = newStats();
  private readonly rollouts = new Map<string, Held>();
  /** Rollouts whose migration failed: every later call fails with the same InfraError, until release. */
  private readonly broken = new Map<string, InfraError>();
  /** Calls survive a restart of the server: a lost rollout is rebuilt on this URL when it answers as a new instance. */
  private readonly migrating: MigrationHost<string | undefined> = {
    moving: new Map(),
    whereIs: (id) => this.instanceOf(id),
    movedFrom: (id, instance) => this.instanceOf(id) !== instance,
    giveUp: (id, _instance, err) => this.markBroken(id, err),
    migrate: (id, instance, lost) => this.migrateHere(id, lost, instance),
  };
  /** Rollouts moved off this server while it did not answer: freed here once it answers again as the same instance. */
  private stale: Handle[] = [];
  private readonly prompts = new Map<string, string>();
  private readonly onMigration?: (e: MigrationEvent) => void;

  constructor(
    readonly url: string,
    readonly metadata: RemoteMetadata,
    options: RemoteEnvOptions = {},
  ) {
    this.client = new EnvClient(url, options);
    this.onMigration = options.onMigration;
    this.name = metadata.name;
    this.capabilities = {
      reward: rewardCapability({ weights: metadata.rewardWeights, passThreshold: metadata.passThreshold }),
      metadata: metadata.description !== undefined ? { description: metadata.description } : {},
      tasks: { loadTasks: (source, o) => this.listTasks(source, o) },
      ...(metadata.hasFork !== false ? { fork: { fork: (id, kids) => this.forkRollout(id, kids) } } : {}),
      ...(metadata.hasGroupReward ? { groupReward: { computeGroupReward: (g) => this.groupReward(g) } } : {}),
    };
  }

  /** Read `/metadata` and build the env. */
  static async connect(url: string, options: RemoteEnvOptions = {}): Promise<RemoteEnv> {
    const meta = await RemoteEnv.fetchMetadata(new EnvClient(url, options));
    return new RemoteEnv(url, meta, options);
  }

  static async fetchMetadata(client: EnvClient): Promise<RemoteMetadata> {
    const r = await client.request("GET", "/metadata");
    if (r.status !== 200) throw errorOf(r, "GET /metadata", client.baseUrl);
    const m = r.body as RemoteMetadata;
    if (!m || typeof m.name !== "string" || !Array.isArray(m.tools)) {
      throw new InfraError(`${client.baseUrl}/metadata is not a benchmax env server's answer`, { retryable: false });
    }
    return m;
  }

  /** Rollouts this client holds. */
  get activeRollouts(): number {
    return this.rollouts.size;
  }

  /** Whether this client holds the rollout (it was initialised here and not yet released or moved away). */
  holds(rolloutId: string): boolean {
    return this.rollouts.has(rolloutId);
  }

  /** The server said it drains: it takes no new rollouts. */
  get draining(): boolean {
    return this.client.draining;
  }

  /** The rollout's log (create body, lineage, calls with results), while this client holds it. */
  logOf(rolloutId: string): RolloutLog | undefined {
    return this.rollouts.get(rolloutId)?.log;
  }

  /** The server instance holding the rollout, as it answered when the rollout was created there. */
  instanceOf(rolloutId: string): string | undefined {
    return this.rollouts.get(rolloutId)?.handle.instance;
  }

  systemPrompt = (task: Task): string => this.prompts.get(task.id) ?? this.metadata.systemPrompt ?? "";

  listTools(): ToolSpec[] {
    return this.metadata.tools;
  }

  private held(rolloutId: string): Held {
    return liveRollout(this.name, rolloutId, this.rollouts, this.broken);
  }

  /**
   * A call on a rollout's server handle. A server that no longer holds it (404, restarted, unreachable, hung) throws
   * a RolloutLostError; any other failure is the error the runner understands.
   */
  private async send(rolloutId: string, h: Handle, action: string, body: unknown): Promise<HttpReply> {
    let r: HttpReply;
    try {
      r = await this.client.request("POST", `/v1/rollouts/${encodeURIComponent(h.id)}/${action}`, body, {
        "x-rollout-token": h.token,
      });
    } catch (e) {
      if (isEndpointDown(e)) throw new RolloutLostError(errorMessage(e), { cause: e, endpointDown: true });
      throw e;
    }
    const instance = r.headers[INSTANCE_HEADER];
    const restarted = !!h.instance && typeof instance === "string" && instance !== h.instance;
    if (r.status === 404 || restarted) {
      throw new RolloutLostError(
        `${this.url}: the env server ${restarted ? "restarted and " : ""}lost rollout "${rolloutId}" (${replyMessage(r)})`,
      );
    }
    if (r.status !== 200) throw errorOf(r, `${action} on rollout "${rolloutId}"`, this.url);
    return r;
  }

  /** POST /v1/rollouts with a create body. */
  private async create(rolloutId: string, body: Record<string, unknown>, taskId?: string): Promise<Handle> {
    const r = await this.client.request("POST", "/v1/rollouts", body);
    if (r.status !== 201) throw errorOf(r, `creating rollout "${rolloutId}"`, this.url);
    const b = r.body as { rolloutId: string; token: string; systemPrompt?: string };
    if (taskId !== undefined && typeof b.systemPrompt === "string") this.prompts.set(taskId, b.systemPrompt);
    const inst = r.headers[INSTANCE_HEADER];
    return { id: b.rolloutId, token: b.token, instance: typeof inst === "string" ? inst : undefined };
  }

  async init(rolloutId: string, task: Task): Promise<void> {
    if (this.rollouts.has(rolloutId)) throw new EnvError(`${this.name}: rollout "${rolloutId}" already exists`);
    this.broken.delete(rolloutId);
    const body = serverTasks.has(task) ? { taskId: task.id } : { task };
    const handle = await this.create(rolloutId, body, task.id);
    this.rollouts.set(rolloutId, { handle, log: newLog(body) });
  }

  // ---- one attempt on this server, no migration (RoutedEnv drives these) ----

  /** Run a tool on the server holding the rollout and log the result; a loss throws RolloutLostError. */
  async runToolHere(rolloutId: string, call: ToolCallRequest): Promise<ToolResult> {
    const held = this.held(rolloutId);
    const r = await this.send(rolloutId, held.handle, "call", call);
    const result = r.body as ToolResult;
    held.log.calls.push({ call, result });
    return result;
  }

  /** Score the rollout on the server holding it; a loss throws RolloutLostError. */
  async computeRewardHere(rolloutId: string, messages: Message[]): Promise<RewardComponents> {
    const held = this.held(rolloutId);
    const r = await this.send(rolloutId, held.handle, "reward", { messages });
    return (r.body as { rewards: RewardComponents }).rewards;
  }

  /** Fork the rollout on the server holding it; each child's log starts as a copy of the parent's. */
  async forkHere(rolloutId: string, childIds: string[]): Promise<void> {
    if (childIds.length === 0) return;
    const parent = this.held(rolloutId);
    const r = await this.send(rolloutId, parent.handle, "fork", { n: childIds.length });
    const kids = (r.body as { children: Array<{ rolloutId: string; token: string }> }).children;
    childIds.forEach((id, i) => {
      this.broken.delete(id);
      this.rollouts.set(id, {
        handle: { id: kids[i]!.rolloutId, token: kids[i]!.token, instance: parent.handle.instance },
        log: forkLog(parent.log, rolloutId),
      });
    });
  }

  /**
   * Drop a rollout this client holds without telling its server (which lost it); returns its log. With `stale` (the
   * server did not answer: it may be hung, not gone), the rollout is released there once the server answers again as
   * the same instance.
   */
  detach(rolloutId: string, options: { stale?: boolean } = {}): RolloutLog | undefined {
    const h = this.rollouts.get(rolloutId);
    this.rollouts.delete(rolloutId);
    if (h && options.stale && h.handle.instance) this.stale.push(h.handle);
    return h?.log;
  }

  /** Mark a rollout as failed for good (until released): its calls throw `error`. */
  markBroken(rolloutId: string, error: InfraError): void {
    this.rollouts.delete(rolloutId);
    this.broken.set(rolloutId, error);
  }

  /**
   * Rebuild a rollout on this server from its log: create it with the logged create body, replay every logged call
   * in order, and check each result (content and isError, as canonical JSON) against the logged one. On success this
   * client holds the rollout (same id, same log). A result that differs throws a ReplayDivergedError; a server that
   * fails meanwhile throws what `send` throws (the half-built rollout is released where the server still answers).
   */
  async rebuild(rolloutId: string, log: RolloutLog, onReplay?: () => void): Promise<{ replayed: number }> {
    if (this.rollouts.has(rolloutId)) throw new EnvError(`${this.name}: rollout "${rolloutId}" already exists`);
    const handle = await this.create(rolloutId, log.create);
    let i = 0;
    try {
      for (; i < log.calls.length; i++) {
        const { call, result } = log.calls[i]!;
        onReplay?.();
        let got: unknown;
        try {
          got = (await this.send(rolloutId, handle, "call", call)).body;
        } catch (e) {
          if (isRolloutLost(e)) throw e;
          throw new ReplayDivergedError(
            `replayed call ${i + 1} of ${log.calls.length} (${call.name}) failed on ${this.url}: ${errorMessage(e)}`,
            i,
          );
        }
        if (resultKey(got) !== resultKey(result)) {
          throw new ReplayDivergedError(
            `replayed call ${i + 1} of ${log.calls.length} (${call.name}) on ${this.url} returned ${clip(resultKey(got))}; the log has ${clip(resultKey(result))}`,
            i,
          );
        }
      }
    } catch (e) {
      if (!(isRolloutLost(e) && (e as RolloutLostError).endpointDown)) {
        void this.releaseHandle(handle).catch(() => undefined);
      }
      throw e;
    }
    this.broken.delete(rolloutId);
    this.rollouts.set(rolloutId, { handle, log });
    return { replayed: i };
  }

  /** GET /health on sockets of its own; never throws. Frees the rollouts left on this server while it hung. */
  async probe(): Promise<Probe> {
    const p = await this.client.probe();
    if (this.stale.length > 0 && (p.state === "healthy" || p.state === "draining")) {
      const left = this.stale;
      this.stale = [];
      for (const h of left) {
        // a new instance holds none of them
        if (h.instance === p.instance) void this.releaseHandle(h).catch(() => undefined);
      }
    }
    return p;
  }

  // ---- the Env: one server, which may restart ----

  async runTool(rolloutId: string, call: ToolCallRequest): Promise<ToolResult> {
    return callMigrating(this.migrating, rolloutId, () => this.runToolHere(rolloutId, call));
  }

  async computeReward(rolloutId: string, messages: Message[], _task: Task): Promise<RewardComponents> {
    return callMigrating(this.migrating, rolloutId, () => this.computeRewardHere(rolloutId, messages));
  }

  private forkRollout(rolloutId: string, childIds: string[]): Promise<void> {
    return callMigrating(this.migrating, rolloutId, () => this.forkHere(rolloutId, childIds));
  }

  private async migrateHere(rolloutId: string, lost: RolloutLostError, oldInstance?: string): Promise<void> {
    const t0 = performance.now();
    const log = this.detach(rolloutId);
    if (!log) throw lost;
    let replayed = 0;
    const end = (ok: boolean, error?: string) => {
      const ev: MigrationEvent = {
        rolloutId,
        from: this.url,
        ok,
        reason: lost.message,
        replayed,
        ms: performance.now() - t0,
      };
      if (ok) ev.to = this.url;
      if (error !== undefined) ev.error = error;
      this.onMigration?.(ev);
    };
    const fail = (why: string): never => {
      this.stats.failedMigrations++;
      const err = migrationFailed(rolloutId, lost, why);
      this.markBroken(rolloutId, err);
      end(false, why);
      throw err;
    };
    const p = await this.probe();
    if (p.state !== "healthy") {
      fail(`no live server left: ${this.url} is ${p.state}${p.error ? ` (${p.error})` : ""}`);
    }
    if (!p.instance || p.instance === oldInstance) {
      fail(`no live server left: ${this.url} answers as the same instance, which no longer holds the rollout`);
    }
    try {
      await this.rebuild(rolloutId, log, () => {
        replayed++;
        this.stats.replayedCalls++;
      });
    } catch (e) {
      fail(isReplayDiverged(e) ? errorMessage(e) : `rebuilding on ${this.url}: ${errorMessage(e)}`);
    }
    this.stats.migrations++;
    end(true);
  }

  private async groupReward(group: GroupMember[]): Promise<RewardComponents[]> {
    if (group.length === 0) return [];
    const task = group[0]!.task;
    const r = await this.client.request("POST", "/v1/group-reward", {
      ...(serverTasks.has(task) ? { taskId: task.id } : { task }),
      members: group.map((m) => ({ rolloutId: m.rolloutId, messages: m.messages, rewards: m.rewards })),
    });
    if (r.status !== 200) throw errorOf(r, "group reward", this.url);
    // the server's answer is checked like an env's: one object of finite components per member
    return checkGroupRewards((r.body as { rewards?: unknown }).rewards, group.length, `${this.url} group reward`);
  }

  private async releaseHandle(h: Handle): Promise<void> {
    const r = await this.client.request(
      "POST",
      `/v1/rollouts/${encodeURIComponent(h.id)}/release`,
      {},
      {
        "x-rollout-token": h.token,
      },
    );
    // already gone on the server (expired, restarted) is fine for a release
    if (r.status !== 200 && r.status !== 404) throw errorOf(r, `release of "${h.id}"`, this.url);
  }

  /** Free the rollout on its server. A rollout whose server is gone (or that failed to migrate) is just dropped. */
  async release(rolloutId: string): Promise<void> {
    this.broken.delete(rolloutId);
    const h = this.rollouts.get(rolloutId);
    if (!h) return;
    this.rollouts.delete(rolloutId);
    try {
      await this.releaseHandle(h.handle);
    } catch (e) {
      // a dead server holds nothing to free
      if (!isEndpointDown(e)) throw e;
    }
  }

  /** Drop a rollout without a request (its server is known to be down; if it only hung, it is freed when back). */
  forget(rolloutId: string): void {
    this.detach(rolloutId, { stale: true });
    this.broken.delete(rolloutId);
  }

  /** The server's tasks (`GET /v1/tasks`), without their gold: the server keeps it. Capability `tasks.loadTasks`. */
  async listTasks(source?: string, options: LoadTasksOptions = {}): Promise<Task[]> {
    if (source !== undefined) {
      throw new UsageError(
        `${this.name} at ${this.url}: the server holds the dataset; pass tasks inline or load them locally`,
      );
    }
    const qs = options.limit !== undefined ? `?limit=${options.limit}` : "";
    const r = await this.client.request("GET", `/v1/tasks${qs}`);
    if (r.status !== 200) throw errorOf(r, "GET /v1/tasks", this.url);
    return (r.body as { tasks: Task[] }).tasks.map((t) => {
      const task = { ...t, groundTruth: undefined };
      serverTasks.add(task);
      return task;
    });
  }

  /** GET /health answered 200. */
  async healthy(): Promise<boolean> {
    return (await this.probe()).state === "healthy";
  }

  async close(): Promise<void> {
    const ids = [...this.rollouts.keys()];
    await Promise.all(ids.map((id) => this.release(id).catch(() => {})));
    this.broken.clear();
  }
}
