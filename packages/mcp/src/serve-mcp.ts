import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Readable, Writable } from "node:stream";
import { type Env, errorMessage, type Message, type Task, type ToolResult } from "@benchmax/core";
import {
  accessTokens,
  type ConnectionLimits,
  callToolResult,
  checkOrigin,
  classify,
  clientOf,
  createMcpServer,
  DEFAULT_DRAIN_GRACE_MS,
  DRAINING_HEADER,
  DrainableRolloutService,
  edgePolicy,
  guardConnections,
  HttpError,
  McpHttpSessions,
  presentedSecret,
  RolloutService,
  type ScoreOutcome,
  type ServedRollout,
  serverOptions,
  taskIdFromInitialize,
} from "@benchmax/server";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { type CallToolResult, ErrorCode } from "@modelcontextprotocol/sdk/types.js";

export {
  ROLLOUT_ID_HEADER,
  ROLLOUT_TOKEN_HEADER,
  TASK_ID_META,
  TASK_RESOURCE,
} from "@benchmax/server";

/** A harness-side failure with an HTTP status: the server's typed error (status and stable code). */
export const HarnessError = HttpError;
export type HarnessError = HttpError;
/** A score: the combined reward, its named components, and whether it passes. */
export type RewardOutcome = ScoreOutcome;

export interface ServeMcpOptions<T extends Task = Task> {
  /** Tasks sessions run on. Default: the env's embedded tasks (`env.loadTasks()`), if it has any. */
  tasks?: T[];
  /** Log lines (never to stdout on stdio). Default: nothing. */
  log?(line: string): void;
}

/** A ToolResult as an MCP `CallToolResult` (text, images as image blocks; OpenEnv's `data` text alongside). */
export function toolResultToMcp(r: ToolResult): CallToolResult {
  return callToolResult(r) as CallToolResult;
}

/** The harness's handle on a stdio session (the model on the other end of stdin/stdout never sees it). */
export interface McpStdioHarness {
  /** The session's rollout: its id and task id (once started: the first tool call or resource read starts it). */
  rollout(): { id?: string; taskId?: string; toolCalls: number };
  /** Move the session onto a fresh rollout on `taskId` (the next task when omitted); the old one is released. */
  start(taskId?: string): Promise<{ id: string; taskId: string }>;
  /** Score the session's rollout, once: from the final text (see README) or the whole conversation. */
  score(input: { completion?: string; messages?: Message[] }): Promise<RewardOutcome>;
}

/**
 * Serve `env` as an MCP server over stdio: this process's stdin/stdout carry one MCP session, i.e. one rollout at a
 * time, on the rollout service. The rollout's task: `_meta["benchmax/task_id"]` in `initialize` (read by the harness
 * that launched this process), else `taskId`, else the first of `tasks` / `env.loadTasks()`; it starts on the first
 * tool call. The returned handle is the harness channel (`start`, `score`); nothing over stdio scores or picks tasks.
 * `closed` resolves when the client disconnects (end of input) and the rollout has been released.
 */
export async function serveMcpStdio<T extends Task = Task>(
  env: Env<T>,
  options: ServeMcpOptions<T> & { stdin?: Readable; stdout?: Writable; taskId?: string } = {},
): Promise<{ close(): Promise<void>; closed: Promise<void> } & McpStdioHarness> {
  const service = new RolloutService(env as unknown as Env, {
    tasks: options.tasks as Task[] | undefined,
    idleTimeoutMs: Infinity,
  });
  const stdin = options.stdin ?? process.stdin;
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  let taskId = options.taskId;
  let current: Promise<ServedRollout> | undefined;
  let last: ServedRollout | undefined;
  const open = (id: string | undefined) => {
    const p = service.create({ from: id === undefined ? {} : { taskId: id }, origin: "mcp" });
    p.then(
      (r) => {
        last = r;
      },
      () => {},
    );
    return p;
  };
  const server = createMcpServer({
    service,
    scopeOf: () => ({
      rollout: async () => {
        current ??= open(taskId);
        return { rollout: await current };
      },
    }),
  });
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  let ended = false;
  const end = async () => {
    if (ended) return;
    ended = true;
    await server.close().catch(() => {});
    await service.close();
    resolveClosed();
  };
  server.onclose = () => void end();
  await server.connect(transport);
  const sdkOnMessage = transport.onmessage;
  transport.onmessage = (m) => {
    const id = taskIdFromInitialize(m);
    if (id !== undefined && !current) taskId = id;
    sdkOnMessage?.(m);
  };
  // the client went away (end of input): end the session and release its rollout
  const onEnd = () => void end();
  stdin.once("end", onEnd);
  const now = async () => {
    current ??= open(taskId);
    return current;
  };
  return {
    closed,
    close: async () => {
      stdin.off("end", onEnd);
      await end();
    },
    rollout: () => ({ id: last?.id, taskId: last?.task.id, toolCalls: last?.toolCalls ?? 0 }),
    start: async (id) => {
      const old = current;
      const next = open(id);
      const r = await next;
      current = next;
      if (old) await service.release(await old.catch(() => r));
      return { id: r.id, taskId: r.task.id };
    },
    score: async (input) =>
      service.score(
        await now(),
        input.messages !== undefined ? { messages: input.messages } : { completion: input.completion ?? "" },
      ),
  };
}

export interface ServeMcpHttpOptions<T extends Task = Task> extends ServeMcpOptions<T>, ConnectionLimits {
  /**
   * Interface to bind. Default `$BENCHMAX_HOST`, else 127.0.0.1 (fleets set BENCHMAX_HOST=0.0.0.0). A non-loopback
   * host with no token is refused unless `insecure`.
   */
  host?: string;
  /** Serve on a non-loopback host with no token (anyone who reaches the port can drive rollouts). */
  insecure?: boolean;
  /** Without a token: more Host names and Origins to accept besides loopback ones. */
  allowedHosts?: string[];
  allowedOrigins?: string[];
  /**
   * Live rollouts one client may hold (default: maxRollouts). A client is the token it presents (see `clientTokens`),
   * or its remote address on a server without a token.
   */
  maxRolloutsPerClient?: number;
  /**
   * At capacity, a client within its fair share (maxRollouts / clients) takes the place of the least recently used
   * rollout of the client most over its share; only rollouts unused this long are taken (default 0: at once).
   */
  reclaimIdleMs?: number;
  /**
   * MCP sessions one rollout token may hold open (default 4): a further `initialize` with that token ends the
   * rollout's oldest session. Every session, however opened, counts against `maxRollouts`.
   */
  maxSessionsPerRollout?: number;
  /** 0 = any free port (read it from the returned url). */
  port: number;
  /**
   * The operator's token. With it, every route but `GET /health` needs `Authorization: Bearer <token>` — or, on
   * `/mcp` only, a rollout's own token, which opens a session on that rollout and nothing else.
   */
  token?: string;
  /**
   * More bearer tokens, one per client (needs `token`): each has the operator token's rights and is a client of its
   * own for admission (fair share, `maxRolloutsPerClient`). Callers sharing a token are one client.
   */
  clientTokens?: string[];
  /** Live rollouts at most (default 1024): a new session or rollout beyond it answers 503. */
  maxRollouts?: number;
  /** Release a rollout (and end its sessions) after this long without a request (ms). Default 10 min. */
  sessionIdleMs?: number;
  /** Largest request body in bytes (default 8 MiB). */
  maxBodyBytes?: number;
  /** How long `drain()` serves the live sessions at most (default 30 s). */
  drainGraceMs?: number;
}

async function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > limit) throw new HarnessError(413, "PAYLOAD_TOO_LARGE", `request body over ${limit} bytes`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function jsonError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Serve `env` as a streamable-HTTP MCP server at `http://host:port/mcp`, plus the harness channel and `GET /health`,
 * on the rollout service (`@benchmax/server`'s `McpHttpSessions`: the same MCP sessions `benchmax serve` has on
 * `/mcp`).
 *
 * - `/mcp`: every MCP session is one rollout. Opened with the operator token (or with none configured), it runs on a
 *   rollout of its own (the task: `_meta["benchmax/task_id"]` in `initialize`, `x-benchmax-task-id`, `?task_id=`, or
 *   the next task), whose id and token come back in the `x-benchmax-rollout-id` / `x-benchmax-rollout-token` headers
 *   of the `initialize` answer. Opened with a rollout's token as its bearer, it runs on that rollout.
 * - The harness channel (operator token): `POST /v1/rollouts {taskId?, session?}` → `{rolloutId, token, taskId}`
 *   (with `session`, an MCP session id, that session moves onto the new rollout); `POST /v1/rollouts/:id/reward
 *   {completion | messages}` scores once; `GET /v1/rollouts/:id`; `POST /v1/rollouts/:id/release`. Rollout routes
 *   also need `X-Rollout-Token`.
 */
export async function serveMcpHttp<T extends Task = Task>(
  env0: Env<T>,
  options: ServeMcpHttpOptions<T>,
): Promise<McpHttpServer> {
  const env = env0 as unknown as Env;
  const originPolicy = edgePolicy(options, process.env.BENCHMAX_HOST ?? "127.0.0.1");
  const { token, bindHost } = originPolicy;
  const access = accessTokens(token, options.clientTokens);
  const maxBody = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const service = new DrainableRolloutService(env, {
    tasks: options.tasks as Task[] | undefined,
    maxRollouts: options.maxRollouts,
    maxRolloutsPerClient: options.maxRolloutsPerClient,
    reclaimIdleMs: options.reclaimIdleMs,
    idleTimeoutMs: options.sessionIdleMs,
  });
  const sessions = new McpHttpSessions(service, { maxSessionsPerRollout: options.maxSessionsPerRollout });

  /** Who is calling: the operator (or anyone, with no token configured), a rollout's token holder, or no one. */
  const caller = (req: IncomingMessage): { operator: boolean; rollout?: ServedRollout } | HttpError => {
    if (!access) return { operator: true };
    const refused = access.check(req.headers.authorization);
    if (!refused) return { operator: true };
    const presented = req.headers.authorization ? presentedSecret(req.headers.authorization) : undefined;
    const r = presented ? service.byToken(presented) : undefined;
    if (r && !r.released) return { operator: false, rollout: r };
    return refused;
  };

  async function harness(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const who = caller(req);
    if (who instanceof HttpError) throw who;
    if (!who.operator) throw new HarnessError(403, "FORBIDDEN", "the harness channel needs the operator token");
    const method = req.method ?? "GET";
    let body: Record<string, unknown> = {};
    if (method === "POST") {
      const text = await readBody(req, maxBody);
      if (text) {
        try {
          body = JSON.parse(text);
        } catch {
          throw new HarnessError(400, "INVALID_JSON", "malformed JSON body");
        }
        if (!body || typeof body !== "object" || Array.isArray(body)) {
          throw new HarnessError(400, "VALIDATION_ERROR", "request body must be a JSON object");
        }
      }
    }
    if (path === "/v1/rollouts" && method === "POST") {
      const taskId = body.taskId ?? body.task_id;
      if (taskId !== undefined && typeof taskId !== "string")
        throw new HarnessError(400, "VALIDATION_ERROR", `"taskId" must be a string`);
      const sid = body.session;
      if (sid !== undefined && (typeof sid !== "string" || !sessions.rolloutOf(sid))) {
        throw new HarnessError(404, "UNKNOWN_SESSION", `unknown MCP session ${String(sid)}`);
      }
      const r = await service.create({
        from: taskId === undefined ? {} : { taskId: taskId as string },
        client: clientOf(req, access),
        origin: "mcp",
      });
      if (typeof sid === "string" && !(await sessions.move(sid, r))) {
        await service.release(r);
        throw new HarnessError(404, "UNKNOWN_SESSION", `unknown MCP session ${sid}`);
      }
      return sendJson(res, 201, {
        rolloutId: r.id,
        token: r.token,
        taskId: r.task.id,
        systemPrompt: service.systemPrompt(r.task),
      });
    }
    const m = /^\/v1\/rollouts\/([^/]+)(?:\/(reward|release))?$/.exec(path);
    if (!m) throw new HarnessError(404, "NOT_FOUND", `no route ${method} ${path}`);
    const tok = req.headers["x-rollout-token"];
    const r = service.get(decodeURIComponent(m[1]!), typeof tok === "string" ? tok : undefined);
    if (!m[2] && method === "GET") {
      return sendJson(res, 200, {
        rolloutId: r.id,
        taskId: r.task.id,
        toolCalls: r.toolCalls,
        scored: r.reward !== undefined,
      });
    }
    if ((!m[2] && method === "DELETE") || (m[2] === "release" && method === "POST")) {
      await service.release(r);
      return sendJson(res, 200, { released: true });
    }
    if (m[2] === "reward" && method === "POST") {
      const messages = body.messages;
      if (messages !== undefined && !Array.isArray(messages)) {
        throw new HarnessError(400, "VALIDATION_ERROR", `"messages" must be an array of chat messages`);
      }
      if (messages === undefined && typeof body.completion !== "string") {
        throw new HarnessError(400, "VALIDATION_ERROR", `"completion" (the final text) or "messages" is required`);
      }
      const out = await service.score(
        r,
        messages !== undefined ? { messages: messages as Message[] } : { completion: body.completion as string },
      );
      return sendJson(res, 200, out);
    }
    throw new HarnessError(405, "METHOD_NOT_ALLOWED", `${method} ${path} is not allowed`);
  }

  async function mcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const who = caller(req);
    if (who instanceof HttpError) return jsonError(res, who.status, ErrorCode.InvalidRequest, who.message);
    let body: unknown;
    if (req.method === "POST") {
      const text = await readBody(req, maxBody);
      try {
        body = JSON.parse(text);
      } catch {
        return jsonError(res, 400, ErrorCode.ParseError, "request body is not valid JSON");
      }
    }
    await sessions.handle(req, res, body, Object.assign({}, who, { client: clientOf(req, access) }));
  }

  const http = createServer(serverOptions(options), async (req, res) => {
    if (service.draining) res.setHeader(DRAINING_HEADER, "1");
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname === "/health" && req.method === "GET") {
        // readiness fails while draining: new sessions go elsewhere, the live ones are served on
        const status = service.draining ? "draining" : "ok";
        sendJson(res, service.draining ? 503 : 200, {
          status,
          env: env.name,
          sessions: sessions.size,
          rollouts: service.active,
        });
        return;
      }
      // no token: only loopback pages and hosts (a web page the operator opens must not drive the server)
      const refused = token ? undefined : checkOrigin(req, originPolicy);
      if (refused) {
        sendJson(res, refused.status, { error: { message: refused.message, code: refused.code } });
        return;
      }
      if (url.pathname.startsWith("/v1/")) {
        await harness(req, res, url.pathname);
        return;
      }
      if (url.pathname !== "/mcp") {
        jsonError(res, 404, ErrorCode.InvalidRequest, `not found: ${url.pathname} (the MCP endpoint is /mcp)`);
        return;
      }
      await mcp(req, res);
    } catch (e) {
      options.log?.(`mcp http: ${errorMessage(e)}`);
      if (res.headersSent) {
        res.end();
        return;
      }
      const c = classify(e);
      if (c.status === 503 || c.status === 429) res.setHeader("retry-after", "1");
      sendJson(res, c.status, { error: { message: errorMessage(e), code: c.code } });
    }
  });
  const guard = guardConnections(http, options);
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port, bindHost, () => resolve());
  });
  const addr = http.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  let closed: Promise<void> | undefined;
  let draining: Promise<{ left: number }> | undefined;
  const handle: McpHttpServer = {
    url: `http://${host}:${addr.port}/mcp`,
    close() {
      closed ??= (async () => {
        service.cut();
        guard.stop();
        await sessions.close();
        await service.close();
        await new Promise<void>((resolve) => {
          http.close(() => resolve());
          http.closeAllConnections();
        });
      })();
      return closed;
    },
    drain(graceMs = options.drainGraceMs ?? DEFAULT_DRAIN_GRACE_MS) {
      draining ??= (async () => {
        const left = closed ? service.active : await service.drain(graceMs);
        await handle.close();
        return { left };
      })();
      return draining;
    },
    get draining() {
      return service.draining;
    },
    get activeRollouts() {
      return service.active;
    },
  };
  return handle;
}

/** A running `serveMcpHttp` server. */
export interface McpHttpServer {
  /** The MCP endpoint: `http://host:port/mcp`. */
  readonly url: string;
  /** Close now: sessions end, live rollouts are released. Idempotent. */
  close(): Promise<void>;
  /**
   * Drain, as `benchmax serve` does on SIGTERM: new sessions and harness rollouts are refused (503 `DRAINING`),
   * `/health` answers 503 `{status: "draining"}` and every answer carries `x-benchmax-draining: 1`, while the live
   * sessions are served until their rollouts are released or `graceMs` (default `drainGraceMs`, 30 s) passes; then it
   * closes. Resolves with how many rollouts were still live at the end. Idempotent.
   */
  drain(graceMs?: number): Promise<{ left: number }>;
  /** True from the start of a drain (or a close). */
  readonly draining: boolean;
  /** Rollouts live now. */
  readonly activeRollouts: number;
}

/** Serve `env` over MCP: streamable HTTP when a port is given, else stdio. */
export function serveMcp<T extends Task = Task>(
  env: Env<T>,
  options: (ServeMcpOptions<T> & { stdin?: Readable; stdout?: Writable }) | ServeMcpHttpOptions<T> = {},
): Promise<{ url?: string; close(): Promise<void> }> {
  return "port" in options && typeof options.port === "number"
    ? serveMcpHttp(env, options as ServeMcpHttpOptions<T>)
    : serveMcpStdio(env, options);
}
