import { copyFile, mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import {
  assertFiniteRewards,
  capToolResult,
  type Env,
  type EnvCapabilities,
  EnvError,
  InfraError,
  isPlainRow,
  type LoadTasksOptions,
  lastAssistantText,
  loadTasksFromFile,
  type Message,
  type Policy,
  parsePlainRow,
  type RewardComponents,
  rewardCapability,
  type Task,
  type ToolCallRequest,
  type ToolResult,
  type ToolSpec,
  toolErrorResult,
  UsageError,
  type Workspace,
} from "@benchmax/core";
import type { McpConnection } from "./connection.js";
import { mcpResultToToolResult } from "./content.js";
import { type McpEndpoint, validateEndpoint } from "./endpoint.js";
import { type Lease, ServerPool, type ServerPoolOptions } from "./pool.js";

/** One MCP server of an McpEnv: a command (stdio), a URL (streamable HTTP) or endpoints from a provisioner. */
export interface McpServerConfig extends Omit<ServerPoolOptions, "name" | "endpoints" | "stateful" | "onEvent"> {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  /** Endpoints from a provisioner (local processes, URL list, SkyPilot, Kubernetes). */
  endpoints?: McpEndpoint[];
  /** Leased one per rollout (default), or shared by all rollouts (`false`). */
  stateful?: boolean;
  /** Per-call time limit (ms) for this server's tools; overrides the env's. */
  callTimeoutMs?: number;
  /** Only these tools (server-side names). */
  include?: string[];
  /** Not these tools (server-side names). */
  exclude?: string[];
  onEvent?: ServerPoolOptions["onEvent"];
}

/** A rollout's view of one of its servers. */
export interface McpRolloutServer {
  readonly name: string;
  /** The leased server's own directory (servers configured with `workspace`). */
  readonly workspace?: Workspace;
  readonly connection: McpConnection;
  /** Call a server tool by its server-side name (not shown to the model). */
  callTool(tool: string, args?: Record<string, unknown>): Promise<ToolResult>;
}

export interface McpRolloutContext<T extends Task = Task> {
  rolloutId: string;
  task: T;
  /** The rollout's server of that name (the only server when omitted). */
  server(name?: string): McpRolloutServer;
  /** The workspace of the rollout's server (the only workspace server when omitted); throws when it has none. */
  workspace(server?: string): Workspace;
  /** Read a file of a server's workspace (confined to it). */
  readFile(path: string, server?: string): Promise<string>;
  /** Copy a host file into a server's workspace (confined to it). */
  upload(hostPath: string, path: string, server?: string): Promise<string>;
  /** Copy a file out of a server's workspace (confined to it) to a host path. */
  download(path: string, hostPath: string, server?: string): Promise<string>;
}

export interface McpRewardContext<T extends Task = Task> extends McpRolloutContext<T> {
  messages: Message[];
  /** The last assistant message's text. */
  completion: string;
}

export interface McpEnvConfig<T extends Task = Task> {
  name: string;
  description?: string;
  systemPrompt: string | ((task: T) => string);
  /** The MCP servers, by name (the name is the tool namespace). */
  servers: Record<string, McpServerConfig>;
  /**
   * How tools are named for the model: "prefix" (default) gives `<server>__<tool>`, "none" keeps server names
   * (a clash is an error), or a function.
   */
  namespace?: "prefix" | "none" | ((server: string, tool: string) => string);
  /** Per-call time limit (ms); past it the server is considered hung → InfraError. Default 30 s. */
  callTimeoutMs?: number;
  /** Output cap per call (characters). Default 20,000. */
  maxOutputChars?: number;
  /** Per-rollout setup after servers are leased (e.g. upload the task's files into the workspace). */
  setup?(ctx: McpRolloutContext<T>): void | Promise<void>;
  /** Score a finished rollout: named finite components. */
  reward(ctx: McpRewardContext<T>): RewardComponents | Promise<RewardComponents>;
  rewardWeights?: Record<string, number>;
  passThreshold?: number;
  /** Embedded tasks (what `loadTasks()` returns without a source). */
  tasks?: T[];
  loadTasks?(source?: string, options?: LoadTasksOptions): Promise<T[]>;
  parseTask?(row: unknown, where?: string): T;
  referencePolicy?(): Policy;
  /**
   * Capabilities passed on whole from another env (the env this one reaches over MCP): each given key replaces what
   * the flat options above would make. Only those that read no rollout state of the other env.
   */
  capabilities?: Pick<EnvCapabilities<T>, "reward" | "tasks" | "reference" | "episode">;
}

interface Route {
  server: string;
  tool: string;
}

interface Rollout<T extends Task> {
  task: T;
  leases: Map<string, Lease>;
  failed?: string;
}

const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;

function toEndpoints(name: string, c: McpServerConfig): McpEndpoint[] {
  const where = `servers.${name}`;
  const given = [c.command !== undefined, c.url !== undefined, c.endpoints !== undefined].filter(Boolean).length;
  if (given !== 1) throw new UsageError(`${where}: give exactly one of "command", "url" or "endpoints"`);
  if (c.command !== undefined) {
    return [validateEndpoint({ type: "stdio", command: c.command, args: c.args, env: c.env, cwd: c.cwd }, where)];
  }
  if (c.url !== undefined) return [validateEndpoint({ type: "http", url: c.url, headers: c.headers }, where)];
  if (!c.endpoints!.length) throw new UsageError(`${where}.endpoints: empty (the provisioner found no servers)`);
  return c.endpoints!.map((e, i) => validateEndpoint(e, `${where}.endpoints[${i}]`));
}

/**
 * An Env whose tools come from MCP servers. Stateful servers are leased one per rollout from a pool (the rollout
 * always talks to the same server); a server that dies, hangs or garbles its answers mid-rollout makes the rollout an
 * infra_error — never reward 0. Create with `McpEnv.create(config)` (it starts the servers and lists their tools).
 */
export class McpEnv<T extends Task = Task> implements Env<T> {
  readonly name: string;
  readonly systemPrompt: string | ((task: T) => string);
  /** From the config: reward weights and threshold, description, tasks, reference policy; the servers per rollout. */
  readonly capabilities: EnvCapabilities<T>;
  private readonly pools = new Map<string, ServerPool>();
  private readonly routes = new Map<string, Route>();
  private specs: ToolSpec[] = [];
  private readonly rollouts = new Map<string, Rollout<T>>();
  private closed = false;

  private constructor(private readonly cfg: McpEnvConfig<T>) {
    this.name = cfg.name;
    this.systemPrompt = cfg.systemPrompt;
    this.capabilities = {
      reward: rewardCapability({ weights: cfg.rewardWeights, passThreshold: cfg.passThreshold }),
      metadata: {
        ...(cfg.description !== undefined ? { description: cfg.description } : {}),
        rolloutMetadata: (id) => this.serversOf(id),
      },
      tasks: {
        loadTasks: (source, o) => this.tasksFrom(source, o),
        parseTask: (row, where) => this.rowToTask(row, where),
      },
      ...(cfg.referencePolicy ? { reference: { referencePolicy: cfg.referencePolicy } } : {}),
    };
    for (const [k, v] of Object.entries(cfg.capabilities ?? {})) {
      if (v) Object.assign(this.capabilities, { [k]: v });
    }
  }

  /** Start the servers' pools (warm spares / shared connections) and list their tools. */
  static async create<T extends Task = Task>(config: McpEnvConfig<T>): Promise<McpEnv<T>> {
    const names = Object.keys(config.servers ?? {});
    if (!names.length) throw new UsageError(`McpEnv(${config.name}): "servers" must name at least one MCP server`);
    const env = new McpEnv(config);
    try {
      for (const name of names) {
        const c = config.servers[name]!;
        const endpoints = toEndpoints(name, c);
        const { command: _c, args: _a, env: _e, cwd: _w, url: _u, headers: _h, include: _i, exclude: _x, ...pool } = c;
        env.pools.set(name, new ServerPool({ ...pool, name, endpoints, stateful: c.stateful ?? true }));
      }
      await Promise.all(names.map((n) => env.loadTools(n)));
    } catch (e) {
      await env.close();
      throw e;
    }
    return env;
  }

  private toolName(server: string, tool: string): string {
    const ns = this.cfg.namespace ?? "prefix";
    if (ns === "none") return tool;
    if (typeof ns === "function") return ns(server, tool);
    return `${server}__${tool}`.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 64);
  }

  private async loadTools(server: string): Promise<void> {
    const c = this.cfg.servers[server]!;
    const conn = await this.pools.get(server)!.probe();
    const tools = await conn.listTools();
    for (const t of tools) {
      if (c.include && !c.include.includes(t.name)) continue;
      if (c.exclude?.includes(t.name)) continue;
      const name = this.toolName(server, t.name);
      if (!TOOL_NAME.test(name)) {
        throw new UsageError(`McpEnv(${this.name}): tool name "${name}" (server ${server}) is not [A-Za-z0-9_-]{1,64}`);
      }
      const clash = this.routes.get(name);
      if (clash) {
        throw new UsageError(
          `McpEnv(${this.name}): tool "${name}" is offered by servers "${clash.server}" and "${server}"; use namespace "prefix"`,
        );
      }
      this.routes.set(name, { server, tool: t.name });
      const { $schema: _s, ...parameters } = t.inputSchema as Record<string, unknown>;
      this.specs.push({ name, description: t.description ?? t.title ?? "", parameters });
    }
  }

  listTools(): ToolSpec[] {
    return this.specs;
  }

  /** A server's pool (for stats and tuning). */
  pool(server: string): ServerPool {
    const p = this.pools.get(server);
    if (!p)
      throw new UsageError(`McpEnv(${this.name}): no server "${server}" (have: ${[...this.pools.keys()].join(", ")})`);
    return p;
  }

  private unknownRollout(rolloutId: string): EnvError {
    return new EnvError(`${this.name}: unknown rollout "${rolloutId}" (not initialised, or already released)`);
  }

  private rollout(rolloutId: string): Rollout<T> {
    const r = this.rollouts.get(rolloutId);
    if (!r) throw this.unknownRollout(rolloutId);
    return r;
  }

  async init(rolloutId: string, task: T): Promise<void> {
    if (this.closed) throw new InfraError(`${this.name}: env is closed`, { retryable: false });
    if (this.rollouts.has(rolloutId)) throw new EnvError(`${this.name}: rollout "${rolloutId}" is already initialised`);
    const r: Rollout<T> = { task, leases: new Map() };
    const stateful = [...this.pools.entries()].filter(([, p]) => p.stateful);
    const got = await Promise.allSettled(stateful.map(([, p]) => p.acquire(rolloutId)));
    got.forEach((g, i) => {
      if (g.status === "fulfilled") r.leases.set(stateful[i]![0], g.value);
    });
    const failure = got.find((g): g is PromiseRejectedResult => g.status === "rejected");
    if (failure) {
      await Promise.all([...r.leases.values()].map((l) => l.release()));
      throw failure.reason;
    }
    this.rollouts.set(rolloutId, r);
    if (this.cfg.setup) {
      try {
        await this.cfg.setup(this.context(rolloutId, r));
      } catch (e) {
        await this.release(rolloutId);
        throw e;
      }
    }
  }

  private timeoutOf(server: string): number {
    return this.cfg.servers[server]?.callTimeoutMs ?? this.cfg.callTimeoutMs ?? 30_000;
  }

  private async call(r: Rollout<T>, server: string, tool: string, args: Record<string, unknown>): Promise<ToolResult> {
    const lease = r.leases.get(server);
    const conn = lease ? lease.server.conn : (await this.pools.get(server)!.sharedServer()).conn;
    try {
      const res = await conn.callTool(tool, args, this.timeoutOf(server));
      return capToolResult(mcpResultToToolResult(res), this.cfg.maxOutputChars ?? 20_000);
    } catch (e) {
      if (e instanceof InfraError && lease) r.failed = e.message;
      throw e;
    }
  }

  runTool(rolloutId: string, call: ToolCallRequest): Promise<ToolResult> {
    const r = this.rollouts.get(rolloutId);
    if (!r) return Promise.reject(this.unknownRollout(rolloutId));
    if (r.failed) {
      return Promise.reject(new InfraError(`${this.name}: rollout ${rolloutId} lost its server: ${r.failed}`));
    }
    const route = this.routes.get(call.name);
    if (!route) {
      return Promise.resolve(
        toolErrorResult(
          `Error: unknown tool "${call.name}". Available tools: ${[...this.routes.keys()].join(", ") || "(none)"}`,
        ),
      );
    }
    return this.call(r, route.server, route.tool, call.arguments ?? {});
  }

  private context(rolloutId: string, r: Rollout<T>): McpRolloutContext<T> {
    const pick = (name: string | undefined, needWorkspace: boolean): string => {
      if (name !== undefined) {
        if (!this.pools.has(name)) throw new EnvError(`${this.name}: no server "${name}"`);
        return name;
      }
      const names = [...this.pools.keys()].filter((n) => !needWorkspace || r.leases.get(n)?.server.workspace);
      if (names.length !== 1) {
        throw new EnvError(`${this.name}: name the server (candidates: ${names.join(", ") || "none"})`);
      }
      return names[0]!;
    };
    const server = (name?: string): McpRolloutServer => {
      const n = pick(name, false);
      const lease = r.leases.get(n);
      return {
        name: n,
        workspace: lease?.server.workspace,
        get connection() {
          if (!lease) throw new EnvError(`server "${n}" is shared (stateless): use callTool`);
          return lease.server.conn;
        },
        callTool: (tool, args = {}) => this.call(r, n, tool, args),
      };
    };
    const workspace = (name?: string): Workspace => {
      const n = pick(name, true);
      const ws = r.leases.get(n)?.server.workspace;
      if (!ws)
        throw new EnvError(`${this.name}: server "${n}" has no workspace (set workspace: true on a stdio server)`);
      return ws;
    };
    return {
      rolloutId,
      task: r.task,
      server,
      workspace,
      readFile: async (path, name) => (await workspace(name).readFile(path)).toString("utf8"),
      upload: (hostPath, path, name) => workspace(name).copyIn(hostPath, path),
      download: async (path, hostPath, name) => {
        const src = workspace(name).resolve(path);
        await mkdir(dirname(hostPath), { recursive: true });
        await copyFile(src, hostPath);
        return hostPath;
      },
    };
  }

  /** The per-rollout context (servers, workspaces, upload/download) for code outside the reward, e.g. tests. */
  rolloutContext(rolloutId: string): McpRolloutContext<T> {
    return this.context(rolloutId, this.rollout(rolloutId));
  }

  async computeReward(rolloutId: string, messages: Message[], task: T): Promise<RewardComponents> {
    const r = this.rollout(rolloutId);
    if (r.failed) throw new InfraError(`${this.name}: rollout ${rolloutId} lost its server: ${r.failed}`);
    for (const [name, lease] of r.leases) {
      if (!lease.server.conn.alive) {
        throw new InfraError(
          `${this.name}: server "${name}" of rollout ${rolloutId} died: ${lease.server.conn.deathReason}`,
        );
      }
    }
    const ctx: McpRewardContext<T> = Object.assign({}, this.context(rolloutId, r), {
      task,
      messages,
      completion: lastAssistantText(messages),
    });
    return assertFiniteRewards(await this.cfg.reward(ctx), `${this.name}.computeReward`);
  }

  /** The rollout's servers (name → id, pid) and a server failure: its `metadata.rolloutMetadata`. */
  private serversOf(rolloutId: string): Record<string, unknown> | undefined {
    const r = this.rollouts.get(rolloutId);
    if (!r) return undefined;
    const servers = Object.fromEntries(
      [...r.leases].map(([n, l]) => [n, { server: l.server.id, pid: l.server.conn.pid }]),
    );
    return { mcpServers: servers, ...(r.failed ? { serverFailure: r.failed } : {}) };
  }

  async release(rolloutId: string): Promise<void> {
    const r = this.rollouts.get(rolloutId);
    if (!r) return;
    this.rollouts.delete(rolloutId);
    await Promise.all(
      [...r.leases.values()].map((l) => l.release({ dead: r.failed !== undefined || !l.server.conn.alive })),
    );
  }

  private async tasksFrom(source?: string, options: LoadTasksOptions = {}): Promise<T[]> {
    if (this.cfg.loadTasks) return this.cfg.loadTasks(source, options);
    if (source === undefined) {
      if (!this.cfg.tasks) throw new UsageError(`${this.name}: no embedded tasks; give a dataset file`);
      return options.limit !== undefined ? this.cfg.tasks.slice(0, options.limit) : [...this.cfg.tasks];
    }
    return loadTasksFromFile(source, (row, where) => this.rowToTask(row, where), options);
  }

  private rowToTask(row: unknown, where?: string): T {
    if (this.cfg.parseTask) return this.cfg.parseTask(row, where);
    if (isPlainRow(row)) return parsePlainRow(row, where) as T;
    return parsePlainRow(row, where) as T; // throws a DatasetError naming the missing field
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.rollouts.keys()].map((id) => this.release(id)));
    await Promise.all([...this.pools.values()].map((p) => p.close()));
  }
}

/** Shorthand for `McpEnv.create(config)`. */
export function createMcpEnv<T extends Task = Task>(config: McpEnvConfig<T>): Promise<McpEnv<T>> {
  return McpEnv.create(config);
}
