import {
  checkGroupRewards,
  type Env,
  EnvError,
  type GroupMember,
  InfraError,
  type LoadTasksOptions,
  type Message,
  type RewardComponents,
  type Task,
  type ToolCallRequest,
  type ToolResult,
  type ToolSpec,
  UsageError,
} from "@benchmax/core";
import { EnvClient, type EnvClientOptions, type HttpReply, replyMessage } from "./http-client.js";

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

interface Handle {
  id: string;
  token: string;
  instance?: string;
}

/** Tasks listed by a server: their gold data stayed there, so rollouts name them by id. */
const serverTasks = new WeakSet<object>();

/** Turn a non-2xx reply into the error the runner understands. */
export function errorOf(r: HttpReply, what: string, base: string): Error {
  const msg = `${base}: ${what} failed (HTTP ${r.status}): ${replyMessage(r)}`;
  const type = (r.body as { error?: { type?: string } } | undefined)?.error?.type;
  if (r.status === 401 || r.status === 403) return new InfraError(msg, { retryable: false });
  if (r.status >= 502 || type === "infra_error") return new InfraError(msg);
  if (r.status === 500 || type === "env_error") return new EnvError(msg);
  return new EnvError(msg);
}

/** An Env whose every call goes to a `benchmax serve` server (rollout API under /v1). */
export class RemoteEnv implements Env {
  readonly name: string;
  readonly description?: string;
  readonly rewardWeights: Record<string, number>;
  readonly passThreshold?: number;
  readonly client: EnvClient;
  private readonly handles = new Map<string, Handle>();
  private readonly prompts = new Map<string, string>();
  fork?: (rolloutId: string, childIds: string[]) => Promise<void>;
  computeGroupReward?: (group: GroupMember[]) => Promise<RewardComponents[]>;

  constructor(
    readonly url: string,
    readonly metadata: RemoteMetadata,
    options: EnvClientOptions = {},
  ) {
    this.client = new EnvClient(url, options);
    this.name = metadata.name;
    this.description = metadata.description;
    this.rewardWeights = metadata.rewardWeights ?? {};
    this.passThreshold = metadata.passThreshold;
    if (metadata.hasFork !== false) this.fork = (id, kids) => this.forkRollout(id, kids);
    if (metadata.hasGroupReward) this.computeGroupReward = (g) => this.groupReward(g);
  }

  /** Read `/metadata` and build the env. */
  static async connect(url: string, options: EnvClientOptions = {}): Promise<RemoteEnv> {
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
    return this.handles.size;
  }

  /** Whether this client holds the rollout (it was initialised here and not yet released). */
  holds(rolloutId: string): boolean {
    return this.handles.has(rolloutId);
  }

  systemPrompt = (task: Task): string => this.prompts.get(task.id) ?? this.metadata.systemPrompt ?? "";

  listTools(): ToolSpec[] {
    return this.metadata.tools;
  }

  private handle(rolloutId: string): Handle {
    const h = this.handles.get(rolloutId);
    if (!h) throw new EnvError(`${this.name}: unknown rollout "${rolloutId}" (not initialised, or already released)`);
    return h;
  }

  /** A call on a rollout; a server that forgot it (restart, expiry) is an infrastructure failure. */
  private async call(rolloutId: string, action: string, body: unknown): Promise<HttpReply> {
    const h = this.handle(rolloutId);
    const r = await this.client.request("POST", `/v1/rollouts/${encodeURIComponent(h.id)}/${action}`, body, {
      "x-rollout-token": h.token,
    });
    const instance = r.headers["x-benchmax-instance"];
    if (r.status === 404 || (h.instance && typeof instance === "string" && instance !== h.instance)) {
      const restarted = h.instance && typeof instance === "string" && instance !== h.instance;
      throw new InfraError(
        `${this.url}: the env server ${restarted ? "restarted and " : ""}lost rollout "${rolloutId}" (${replyMessage(r)})`,
      );
    }
    if (r.status !== 200) throw errorOf(r, `${action} on rollout "${rolloutId}"`, this.url);
    return r;
  }

  async init(rolloutId: string, task: Task): Promise<void> {
    if (this.handles.has(rolloutId)) throw new EnvError(`${this.name}: rollout "${rolloutId}" already exists`);
    const body = serverTasks.has(task) ? { taskId: task.id } : { task };
    const r = await this.client.request("POST", "/v1/rollouts", body);
    if (r.status !== 201) throw errorOf(r, `creating rollout "${rolloutId}"`, this.url);
    const b = r.body as { rolloutId: string; token: string; systemPrompt?: string };
    if (typeof b.systemPrompt === "string") this.prompts.set(task.id, b.systemPrompt);
    const inst = r.headers["x-benchmax-instance"];
    this.handles.set(rolloutId, {
      id: b.rolloutId,
      token: b.token,
      instance: typeof inst === "string" ? inst : undefined,
    });
  }

  private async forkRollout(rolloutId: string, childIds: string[]): Promise<void> {
    if (childIds.length === 0) return;
    const r = await this.call(rolloutId, "fork", { n: childIds.length });
    const parent = this.handle(rolloutId);
    const kids = (r.body as { children: Array<{ rolloutId: string; token: string }> }).children;
    childIds.forEach((id, i) => {
      this.handles.set(id, { id: kids[i]!.rolloutId, token: kids[i]!.token, instance: parent.instance });
    });
  }

  async runTool(rolloutId: string, call: ToolCallRequest): Promise<ToolResult> {
    const r = await this.call(rolloutId, "call", call);
    return r.body as ToolResult;
  }

  async computeReward(rolloutId: string, messages: Message[], _task: Task): Promise<RewardComponents> {
    const r = await this.call(rolloutId, "reward", { messages });
    return (r.body as { rewards: RewardComponents }).rewards;
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

  async release(rolloutId: string): Promise<void> {
    const h = this.handles.get(rolloutId);
    if (!h) return;
    this.handles.delete(rolloutId);
    const r = await this.client.request(
      "POST",
      `/v1/rollouts/${encodeURIComponent(h.id)}/release`,
      {},
      {
        "x-rollout-token": h.token,
      },
    );
    // already gone on the server (expired, restarted) is fine for a release
    if (r.status !== 200 && r.status !== 404) throw errorOf(r, `release of "${rolloutId}"`, this.url);
  }

  async loadTasks(source?: string, options: LoadTasksOptions = {}): Promise<Task[]> {
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
    try {
      const r = await this.client.request("GET", "/health");
      return r.status === 200;
    } catch {
      return false;
    }
  }

  async close(): Promise<void> {
    const ids = [...this.handles.keys()];
    await Promise.all(ids.map((id) => this.release(id).catch(() => {})));
  }
}
