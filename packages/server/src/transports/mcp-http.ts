import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { errorMessage } from "@benchmax/core";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { classify, JSONRPC_SERVER_ERROR } from "../error-codes.js";
import { notFound, type RolloutService, type ServedRollout } from "../service/index.js";
import { createMcpServer } from "./mcp-server.js";

/** Where the harness names a session's task: `initialize` params `_meta["benchmax/task_id"]`. */
export const TASK_ID_META = "benchmax/task_id";
/** Response headers of an HTTP `initialize`: the session's rollout, for the harness to score it. */
export const ROLLOUT_ID_HEADER = "x-benchmax-rollout-id";
export const ROLLOUT_TOKEN_HEADER = "x-benchmax-rollout-token";

/** The task id the harness put in an `initialize` request's `_meta`, if any. */
export function taskIdFromInitialize(msg: unknown): string | undefined {
  const m = msg as { method?: string; params?: { _meta?: Record<string, unknown> } } | undefined;
  if (m?.method !== "initialize") return undefined;
  const v = m.params?._meta?.[TASK_ID_META] ?? m.params?._meta?.task_id;
  return v === undefined ? undefined : String(v);
}

/** Is this request for a streamable-HTTP MCP session (an MCP client's), rather than OpenEnv's sessionless JSON-RPC? */
export function isStreamableHttp(req: IncomingMessage): boolean {
  return typeof req.headers["mcp-session-id"] === "string" || /text\/event-stream/.test(req.headers.accept ?? "");
}

/** Who opens or uses a session: the operator (or anyone, with no token set), or the holder of a rollout's token. */
export interface McpHttpCaller {
  operator: boolean;
  /** The rollout whose token the caller presented: its sessions run on that rollout only. */
  rollout?: ServedRollout;
  /** The caller's admission identity (its token's, or its remote address without tokens: see `clientOf`). */
  client?: string;
}

export interface McpHttpSessionsOptions {
  /** Open sessions at most (default: the service's maxRollouts): every session counts, however it was opened. */
  maxSessions?: number;
  /** Sessions one rollout token may hold open (default 4): one more ends that rollout's oldest session. */
  maxSessionsPerRollout?: number;
}

interface Entry {
  transport: StreamableHTTPServerTransport;
  server?: Server;
  /** The session's rollout now (the harness may move the session onto a rollout it created). */
  rollout?: ServedRollout;
  /** Released when the session ends (a rollout the session made for itself); harness-made ones wait for the harness. */
  owned: boolean;
  /** Opened with a rollout's own token: only that token may use the session. */
  boundToken?: string;
  closed: boolean;
}

function jsonError(res: ServerResponse, status: number, code: number, message: string): void {
  if (status === 503 || status === 429) res.setHeader("retry-after", "1");
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

/**
 * Streamable-HTTP MCP sessions (the MCP SDK's `StreamableHTTPServerTransport`, stateful: `Mcp-Session-Id`), one
 * rollout each, over the rollout service. `benchmax serve`'s `/mcp` and `serve --mcp --port` both serve MCP clients
 * through this.
 *
 * A session opened by the operator runs on a rollout of its own, created at `initialize` (the task:
 * `_meta["benchmax/task_id"]`, the `x-benchmax-task-id` header or `?task_id=`, else the next), whose id and token come
 * back in the `x-benchmax-rollout-id` / `x-benchmax-rollout-token` headers of the `initialize` answer, and which is
 * released when the session ends. A session opened with a rollout's token runs on that rollout, and only that token
 * (or the operator) may use it. Sessions are capped in all and per rollout token.
 */
export class McpHttpSessions {
  private readonly sessions = new Map<string, Entry>();
  /** Every session from its `initialize` on (initialized or not): what the caps count. */
  private readonly live = new Set<Entry>();
  private readonly sweeper: NodeJS.Timeout;
  readonly maxSessions: number;
  readonly maxSessionsPerRollout: number;

  constructor(
    private readonly service: RolloutService,
    options: McpHttpSessionsOptions = {},
  ) {
    this.maxSessions = options.maxSessions ?? service.maxRollouts;
    this.maxSessionsPerRollout = options.maxSessionsPerRollout ?? 4;
    // a rollout the service released (idle sweep, reclaimed, released by the harness) ends its sessions too
    const idle = service.idleTimeoutMs;
    const every = Number.isFinite(idle) && idle > 0 ? Math.max(10, Math.min(idle / 2, 30_000)) : 30_000;
    this.sweeper = setInterval(() => {
      for (const e of [...this.live]) if (e.rollout?.released) void this.drop(e);
    }, every);
    this.sweeper.unref();
  }

  /** Open sessions. */
  get size(): number {
    return this.live.size;
  }

  /** The rollout an open session runs on (the harness's view), or undefined. */
  rolloutOf(sessionId: string): ServedRollout | undefined {
    return this.sessions.get(sessionId)?.rollout;
  }

  /**
   * Move an open session onto `rollout` (the harness picked its task); the session's old rollout is released if the
   * session made it. Anyone may then use the session only with the operator token.
   */
  async move(sessionId: string, rollout: ServedRollout): Promise<boolean> {
    const e = this.sessions.get(sessionId);
    if (!e || e.closed) return false;
    const old = e.rollout;
    const owned = e.owned;
    e.rollout = rollout;
    e.owned = false;
    e.boundToken = undefined;
    if (old && owned) await this.service.release(old);
    return true;
  }

  /** Handle one request on `/mcp` (its body already parsed, for POST). */
  async handle(req: IncomingMessage, res: ServerResponse, body: unknown, caller: McpHttpCaller): Promise<void> {
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const e = this.sessions.get(sid);
      if (!e || e.closed) {
        return jsonError(res, 404, ErrorCode.InvalidRequest, `unknown or expired MCP session ${sid}`);
      }
      // a rollout-token holder uses its own session only; the operator any
      if (!caller.operator && (!e.boundToken || caller.rollout?.token !== e.boundToken)) {
        return jsonError(res, 403, ErrorCode.InvalidRequest, "this MCP session belongs to another rollout");
      }
      await e.transport.handleRequest(req, res, body);
      return;
    }
    const first = Array.isArray(body) ? body[0] : body;
    if (req.method !== "POST" || (first as { method?: string } | undefined)?.method !== "initialize") {
      return jsonError(res, 400, ErrorCode.InvalidRequest, "no MCP session: send an initialize request first");
    }
    // one rollout token holds a few sessions at most: the oldest gives way
    const bound = caller.rollout;
    if (bound) {
      const own = [...this.live].filter((e) => e.boundToken === bound.token);
      for (const e of own.slice(0, Math.max(0, own.length - this.maxSessionsPerRollout + 1))) await this.drop(e);
    }
    // sessions of released rollouts (reclaimed, expired) give way before the count is checked
    if (this.live.size >= this.maxSessions) {
      for (const e of [...this.live]) if (e.rollout?.released) await this.drop(e);
    }
    if (this.live.size >= this.maxSessions) {
      return jsonError(res, 503, JSONRPC_SERVER_ERROR, `server at capacity (${this.maxSessions} MCP sessions)`);
    }
    const entry: Entry = { owned: !bound, closed: false, transport: undefined as never };
    if (bound) entry.boundToken = bound.token;
    entry.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        this.sessions.set(id, entry);
      },
      onsessionclosed: () => void this.drop(entry),
    });
    this.live.add(entry);
    try {
      if (bound) entry.rollout = bound;
      else {
        const url = new URL(req.url ?? "/", "http://localhost");
        const header = req.headers["x-benchmax-task-id"];
        const taskId =
          taskIdFromInitialize(first) ??
          (typeof header === "string" ? header : undefined) ??
          url.searchParams.get("task_id") ??
          undefined;
        entry.rollout = await this.service.create({
          from: taskId === undefined ? {} : { taskId },
          client: caller.client,
          origin: "mcp",
        });
      }
    } catch (e) {
      this.live.delete(entry);
      const c = classify(e);
      return jsonError(
        res,
        c.status,
        c.status < 500 ? ErrorCode.InvalidRequest : JSONRPC_SERVER_ERROR,
        errorMessage(e),
      );
    }
    const server = createMcpServer({
      service: this.service,
      scopeOf: () => ({
        rollout: async () => {
          const r = entry.rollout;
          if (!r || r.released) {
            const why = r && this.service.reclaimedWhy(r.id);
            if (why) throw notFound(why, "ROLLOUT_RECLAIMED");
            throw notFound("this session's rollout was released (scored, expired or reclaimed)", "UNKNOWN_ROLLOUT");
          }
          return { rollout: r };
        },
      }),
    });
    entry.server = server;
    server.onclose = () => void this.drop(entry);
    await server.connect(entry.transport);
    if (entry.owned && entry.rollout) {
      res.setHeader(ROLLOUT_ID_HEADER, entry.rollout.id);
      res.setHeader(ROLLOUT_TOKEN_HEADER, entry.rollout.token);
    }
    await entry.transport.handleRequest(req, res, body);
    // an initialize the SDK refused opened no session
    if (!entry.transport.sessionId) await this.drop(entry);
  }

  /** End a session: its transport closes, and a rollout it made for itself is released. */
  private async drop(e: Entry): Promise<void> {
    if (e.closed) return;
    e.closed = true;
    this.live.delete(e);
    const id = e.transport.sessionId;
    if (id && this.sessions.get(id) === e) this.sessions.delete(id);
    await e.server?.close().catch(() => {});
    if (e.owned && e.rollout) await this.service.release(e.rollout);
  }

  /** End every session. */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    await Promise.all([...this.live].map((e) => this.drop(e)));
  }
}
