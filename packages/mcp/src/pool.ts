import { readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { errorMessage, InfraError, Workspace } from "@benchmax/core";
import { McpConnection } from "./connection.js";
import type { McpEndpoint } from "./endpoint.js";

/** How a stateful server is made clean for the next rollout. */
export type ResetStrategy =
  /** Close it and use a fresh process (stdio) or a fresh session (HTTP); a warm spare takes its place at once. */
  | "restart"
  /** A tool the server provides (e.g. `reset`); a failed reset discards the server. */
  | { tool: string; arguments?: Record<string, unknown> }
  /** Reuse as is (the server keeps no per-client state). */
  | "none";

export interface PoolEvent {
  type: "spawn" | "ready" | "start_failed" | "lease" | "reset" | "discard" | "health_failed";
  server?: number;
  rolloutId?: string;
  reason?: string;
}

export interface ServerPoolOptions {
  /** Name used in errors, e.g. the server's namespace. */
  name: string;
  /**
   * Where servers come from. A stdio endpoint is a recipe spawned as often as needed (every spawn is one server);
   * an HTTP endpoint is one server (a stateful one is leased to one rollout at a time). Several are used in turn.
   */
  endpoints: McpEndpoint[];
  /** Stateful servers are leased one per rollout; stateless ones are shared by all rollouts. Default true. */
  stateful?: boolean;
  /** Most servers alive at once (the concurrency cap). Default 8 for stdio; the number of URLs for HTTP. */
  maxServers?: number;
  /** Ready servers kept idle beyond current demand (stateful). Default 1. */
  warm?: number;
  /** How long `acquire` waits for a free server before an InfraError. Default 30 s. */
  acquireTimeoutMs?: number;
  /** Time allowed for spawn + initialize. Default 10 s. */
  startTimeoutMs?: number;
  /** Interval of `ping` health checks on idle servers (ms); 0 disables. Default 15 s. */
  healthIntervalMs?: number;
  /** Ping an idle server before leasing it. Default false (deaths are noticed as they happen). */
  pingOnAcquire?: boolean;
  /** Time limit of a health-check ping (ms). Default 2 s. */
  pingTimeoutMs?: number;
  /** How a released stateful server is cleaned. Default "restart". */
  reset?: ResetStrategy;
  /** Time limit of a reset tool call (ms). Default 10 s. */
  resetTimeoutMs?: number;
  /**
   * Give each spawned (stdio) server its own directory: it becomes the process's cwd, is passed as
   * `BENCHMAX_WORKSPACE`, and replaces `{workspace}` in args and env values. Emptied (reset tool) or replaced (restart) per rollout.
   */
  workspace?: boolean | { root?: string };
  /** Where spawned servers' stderr goes. Default "ignore". */
  stderr?: "ignore" | "inherit";
  onEvent?(e: PoolEvent): void;
}

/** One server of the pool. */
export interface PooledServer {
  readonly id: number;
  readonly conn: McpConnection;
  readonly endpoint: McpEndpoint;
  readonly endpointIndex: number;
  readonly workspace?: Workspace;
  /** Rollouts this server has served. */
  uses: number;
}

/** A stateful server leased to one rollout until `release`. */
export interface Lease {
  readonly server: PooledServer;
  readonly rolloutId: string;
  /** Return the server; `dead: true` discards it (it failed this rollout). Idempotent. */
  release(options?: { dead?: boolean }): Promise<void>;
}

interface Waiter {
  rolloutId: string;
  resolve(s: PooledServer): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

export interface PoolStats {
  idle: number;
  leased: number;
  starting: number;
  resetting: number;
  waiting: number;
  spawned: number;
  discarded: number;
}

/**
 * A pool of MCP servers: stateless servers shared, stateful ones leased one per rollout with warm spares,
 * an acquire timeout, ping health checks, replacement of dead servers, a reset between rollouts and a cap.
 */
export class ServerPool {
  readonly name: string;
  readonly stateful: boolean;
  readonly maxServers: number;
  private readonly opts: ServerPoolOptions;
  private readonly idle: PooledServer[] = [];
  private readonly leased = new Map<number, PooledServer>();
  private readonly shared: PooledServer[] = [];
  private readonly busyEndpoints = new Map<number, number>();
  private readonly waiters: Waiter[] = [];
  private readonly pendingStarts = new Set<Promise<void>>();
  private starting = 0;
  private resetting = 0;
  private nextId = 0;
  private spawned = 0;
  private discarded = 0;
  private rr = 0;
  private closed = false;
  private health?: NodeJS.Timeout;
  private sharedStart?: Promise<PooledServer>;
  private lastStartError?: unknown;

  constructor(options: ServerPoolOptions) {
    if (!options.endpoints.length) throw new TypeError(`pool "${options.name}": endpoints must not be empty`);
    this.opts = options;
    this.name = options.name;
    this.stateful = options.stateful ?? true;
    const allHttp = options.endpoints.every((e) => e.type === "http");
    const cap = allHttp ? options.endpoints.length : Number.POSITIVE_INFINITY;
    this.maxServers = Math.min(options.maxServers ?? (allHttp ? cap : 8), cap);
    if (!(this.maxServers >= 1)) throw new TypeError(`pool "${options.name}": maxServers must be at least 1`);
    const every = options.healthIntervalMs ?? 15_000;
    if (every > 0) {
      this.health = setInterval(() => void this.checkHealth(), every);
      this.health.unref();
    }
  }

  private emit(e: PoolEvent): void {
    this.opts.onEvent?.(e);
  }

  private get total(): number {
    return this.idle.length + this.leased.size + this.shared.length + this.starting + this.resetting;
  }

  stats(): PoolStats {
    return {
      idle: this.idle.length,
      leased: this.leased.size,
      starting: this.starting,
      resetting: this.resetting,
      waiting: this.waiters.length,
      spawned: this.spawned,
      discarded: this.discarded,
    };
  }

  /** Start warm spares now (stateful) or the shared connection (stateless); resolves when they are up. */
  async warmUp(count = this.opts.warm ?? 1): Promise<void> {
    if (!this.stateful) {
      await this.sharedServer();
      return;
    }
    const n = Math.min(count, this.maxServers) - this.idle.length - this.starting;
    for (let i = 0; i < n; i++) this.spawn();
    await Promise.allSettled([...this.pendingStarts]);
  }

  private pickEndpoint(): number | undefined {
    const eps = this.opts.endpoints;
    for (let k = 0; k < eps.length; k++) {
      const i = (this.rr + k) % eps.length;
      const ep = eps[i]!;
      if (ep.type === "http" && (this.busyEndpoints.get(i) ?? 0) > 0) continue;
      this.rr = i + 1;
      return i;
    }
    return undefined;
  }

  private async open(index: number): Promise<PooledServer> {
    let endpoint = this.opts.endpoints[index]!;
    let workspace: Workspace | undefined;
    if (this.opts.workspace && endpoint.type === "stdio") {
      const root = typeof this.opts.workspace === "object" ? this.opts.workspace.root : undefined;
      workspace = await Workspace.create({ root, prefix: `mcp-${this.name}` });
      const dir = workspace.dir;
      endpoint = {
        ...endpoint,
        cwd: dir,
        args: endpoint.args?.map((a) => a.split("{workspace}").join(dir)),
        // `{workspace}` in env values too (e.g. server-memory's MEMORY_FILE_PATH={workspace}/memory.json)
        env: {
          ...Object.fromEntries(
            Object.entries(endpoint.env ?? {}).map(([k, v]) => [k, v.split("{workspace}").join(dir)]),
          ),
          BENCHMAX_WORKSPACE: dir,
        },
      };
    }
    try {
      const conn = await McpConnection.open(endpoint, {
        label: this.name,
        startTimeoutMs: this.opts.startTimeoutMs,
        stderr: this.opts.stderr,
      });
      return { id: this.nextId++, conn, endpoint, endpointIndex: index, workspace, uses: 0 };
    } catch (e) {
      await workspace?.remove().catch(() => {});
      throw e;
    }
  }

  /** Spawn one server in the background; it goes to a waiter or to the idle list. */
  private spawn(): void {
    const index = this.pickEndpoint();
    if (index === undefined) return;
    this.starting++;
    this.busyEndpoints.set(index, (this.busyEndpoints.get(index) ?? 0) + 1);
    this.spawned++;
    this.emit({ type: "spawn" });
    const p = this.open(index).then(
      (s) => {
        this.starting--;
        this.pendingStarts.delete(p);
        if (this.closed) {
          this.dropServer(s, "pool closed", false);
          return;
        }
        this.watch(s);
        this.emit({ type: "ready", server: s.id });
        this.offer(s);
      },
      (e: unknown) => {
        this.starting--;
        this.pendingStarts.delete(p);
        this.releaseEndpoint(index);
        const reason = errorMessage(e);
        this.lastStartError = e;
        this.emit({ type: "start_failed", reason });
        // a server that never becomes healthy fails the oldest waiting rollout, not the whole run
        const w = this.waiters.shift();
        if (w) {
          clearTimeout(w.timer);
          w.reject(e instanceof InfraError ? e : new InfraError(`pool "${this.name}": ${reason}`, { cause: e }));
        }
      },
    );
    this.pendingStarts.add(p);
  }

  private releaseEndpoint(index: number): void {
    const n = (this.busyEndpoints.get(index) ?? 1) - 1;
    if (n <= 0) this.busyEndpoints.delete(index);
    else this.busyEndpoints.set(index, n);
  }

  private watch(s: PooledServer): void {
    s.conn.onDeath((reason) => {
      const i = this.idle.indexOf(s);
      if (i >= 0 && !this.closed && reason !== "closed") {
        this.idle.splice(i, 1);
        this.dropServer(s, reason, true);
        this.topUp();
      }
    });
  }

  private offer(s: PooledServer): void {
    const w = this.waiters.shift();
    if (w) {
      clearTimeout(w.timer);
      this.lease(s, w.rolloutId);
      w.resolve(s);
    } else {
      this.idle.push(s);
    }
  }

  private lease(s: PooledServer, rolloutId: string): void {
    this.leased.set(s.id, s);
    s.uses++;
    this.emit({ type: "lease", server: s.id, rolloutId });
  }

  /** Keep `warm` spares beyond demand, within the cap. */
  private topUp(): void {
    if (this.closed || !this.stateful) return;
    const want = this.waiters.length + (this.opts.warm ?? 1) - this.idle.length - this.starting - this.resetting;
    const room = this.maxServers - this.total;
    for (let i = 0; i < Math.min(want, room); i++) this.spawn();
  }

  private dropServer(s: PooledServer, reason: string, dead: boolean): void {
    this.discarded++;
    this.releaseEndpoint(s.endpointIndex);
    this.emit({ type: "discard", server: s.id, reason });
    void s.conn.close({ force: dead }).finally(() => s.workspace?.remove().catch(() => {}));
  }

  /**
   * Lease a stateful server for one rollout. Waits up to `acquireTimeoutMs`; throws InfraError when no server is
   * free in time or when one could not be started.
   */
  async acquire(rolloutId: string): Promise<Lease> {
    if (this.closed) throw new InfraError(`pool "${this.name}" is closed`, { retryable: false });
    if (!this.stateful) throw new TypeError(`pool "${this.name}" is stateless: use sharedServer()`);
    let server: PooledServer | undefined;
    while (!server && this.idle.length) {
      const s = this.idle.shift()!;
      if (!s.conn.alive || (this.opts.pingOnAcquire && !(await s.conn.ping(this.opts.pingTimeoutMs)))) {
        this.dropServer(s, s.conn.deathReason ?? "failed ping", true);
        continue;
      }
      this.lease(s, rolloutId);
      server = s;
    }
    if (server) {
      // start the replacement spare after the caller has its server (spawning costs milliseconds)
      setImmediate(() => this.topUp());
      return this.makeLease(server, rolloutId);
    }
    const timeout = this.opts.acquireTimeoutMs ?? 30_000;
    const s = await new Promise<PooledServer>((resolve, reject) => {
      const w: Waiter = {
        rolloutId,
        resolve,
        reject,
        timer: setTimeout(() => {
          const i = this.waiters.indexOf(w);
          if (i >= 0) this.waiters.splice(i, 1);
          const st = this.stats();
          reject(
            new InfraError(
              `pool "${this.name}" exhausted: no server free within ${timeout} ms for rollout ${rolloutId} ` +
                `(${st.leased} leased, ${st.starting} starting, ${st.resetting} resetting, max ${this.maxServers})`,
            ),
          );
        }, timeout),
      };
      this.waiters.push(w);
      this.topUp();
    });
    return this.makeLease(s, rolloutId);
  }

  private makeLease(server: PooledServer, rolloutId: string): Lease {
    let done = false;
    return {
      server,
      rolloutId,
      release: async (options = {}) => {
        if (done) return;
        done = true;
        await this.giveBack(server, options.dead === true);
      },
    };
  }

  private async giveBack(s: PooledServer, dead: boolean): Promise<void> {
    this.leased.delete(s.id);
    if (this.closed) {
      this.dropServer(s, "pool closed", dead);
      return;
    }
    const reset = this.opts.reset ?? "restart";
    if (dead || !s.conn.alive) {
      this.dropServer(s, s.conn.deathReason ?? "failed in a rollout", true);
      this.topUp();
      return;
    }
    if (reset === "restart") {
      this.dropServer(s, "restart after rollout", false);
      this.topUp();
      return;
    }
    if (reset === "none") {
      this.offer(s);
      return;
    }
    this.resetting++;
    let ok = false;
    try {
      if (s.workspace) await emptyDir(s.workspace.dir);
      const r = await s.conn.callTool(reset.tool, reset.arguments ?? {}, this.opts.resetTimeoutMs ?? 10_000);
      ok = !r.isError;
    } catch {
      ok = false;
    } finally {
      this.resetting--;
    }
    if (ok && !this.closed && s.conn.alive) {
      this.emit({ type: "reset", server: s.id });
      this.offer(s);
    } else {
      this.dropServer(s, "reset failed", true);
      this.topUp();
    }
  }

  /** The shared connection of a stateless pool (started on first use, replaced when it dies); round-robin over URLs. */
  async sharedServer(): Promise<PooledServer> {
    if (this.closed) throw new InfraError(`pool "${this.name}" is closed`, { retryable: false });
    for (let i = this.shared.length - 1; i >= 0; i--) {
      if (!this.shared[i]!.conn.alive) {
        const [s] = this.shared.splice(i, 1);
        this.dropServer(s!, s!.conn.deathReason ?? "dead", true);
      }
    }
    const want = Math.min(this.maxServers, this.opts.endpoints.length);
    if (this.shared.length < want && !this.sharedStart) {
      const index = this.pickEndpoint() ?? 0;
      this.busyEndpoints.set(index, (this.busyEndpoints.get(index) ?? 0) + 1);
      this.spawned++;
      this.sharedStart = this.open(index).then(
        (s) => {
          this.sharedStart = undefined;
          this.shared.push(s);
          return s;
        },
        (e) => {
          this.sharedStart = undefined;
          this.releaseEndpoint(index);
          throw e;
        },
      );
      if (this.shared.length === 0) return this.sharedStart;
    }
    if (this.shared.length === 0 && this.sharedStart) return this.sharedStart;
    return this.shared[this.rr++ % this.shared.length]!;
  }

  /**
   * A live connection to inspect the server (e.g. list its tools) without leasing it: the shared one, or an idle
   * spare (started if needed). Throws InfraError when no server comes up.
   */
  async probe(): Promise<McpConnection> {
    if (!this.stateful) return (await this.sharedServer()).conn;
    const alive = () => this.idle.find((s) => s.conn.alive);
    if (!alive()) await this.warmUp(Math.max(1, this.opts.warm ?? 1));
    const s = alive();
    if (!s) {
      const why = this.lastStartError ? errorMessage(this.lastStartError) : "no server could be started";
      throw this.lastStartError instanceof InfraError
        ? this.lastStartError
        : new InfraError(`pool "${this.name}": ${why}`, { cause: this.lastStartError });
    }
    return s.conn;
  }

  private async checkHealth(): Promise<void> {
    if (this.closed) return;
    for (const s of [...this.idle, ...this.shared]) {
      if (!(await s.conn.ping(this.opts.pingTimeoutMs))) {
        this.emit({ type: "health_failed", server: s.id, reason: s.conn.deathReason });
        const i = this.idle.indexOf(s);
        if (i >= 0) this.idle.splice(i, 1);
        const j = this.shared.indexOf(s);
        if (j >= 0) this.shared.splice(j, 1);
        this.dropServer(s, "failed health check", true);
      }
    }
    this.topUp();
  }

  /** Graceful shutdown: waiting rollouts fail, every server is closed and its workspace removed. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.health) clearInterval(this.health);
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(new InfraError(`pool "${this.name}" closed while rollout ${w.rolloutId} waited`, { retryable: false }));
    }
    await Promise.allSettled([...this.pendingStarts]);
    const all = [...this.idle.splice(0), ...this.leased.values(), ...this.shared.splice(0)];
    this.leased.clear();
    await Promise.allSettled(
      all.map(async (s) => {
        await s.conn.close();
        await s.workspace?.remove().catch(() => {});
      }),
    );
  }
}

async function emptyDir(dir: string): Promise<void> {
  const names = await readdir(dir);
  await Promise.all(names.map((n) => rm(join(dir, n), { recursive: true, force: true })));
}
