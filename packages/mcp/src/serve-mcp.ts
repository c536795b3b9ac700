import { randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Readable, Writable } from "node:stream";
import {
  type ContentPart,
  type Env,
  errorMessage,
  type Message,
  resolveSystemPrompt,
  type Task,
  type ToolResult,
} from "@benchmax/core";
import {
  type ConnectionLimits,
  checkOrigin,
  classify,
  clientOf,
  edgePolicy,
  guardConnections,
  serverOptions,
} from "@benchmax/server";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Tool as McpTool,
  ReadResourceRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { HarnessError, type McpRollout, McpRollouts, type RewardOutcome, TaskPicker } from "./mcp-rollouts.js";

/** The resource holding the session's task prompt and system prompt (never the gold answer). */
export const TASK_RESOURCE = "benchmax://rollout/task";
/** Where the harness names a session's task: `initialize` params `_meta["benchmax/task_id"]`. */
export const TASK_ID_META = "benchmax/task_id";
/** Response headers of an HTTP `initialize`: the session's rollout, for the harness to score it. */
export const ROLLOUT_ID_HEADER = "x-benchmax-rollout-id";
export const ROLLOUT_TOKEN_HEADER = "x-benchmax-rollout-token";

export interface ServeMcpOptions<T extends Task = Task> {
  /** Tasks sessions run on. Default: the env's embedded tasks (`env.loadTasks()`), if it has any. */
  tasks?: T[];
  /** Log lines (never to stdout on stdio). Default: nothing. */
  log?(line: string): void;
}

/** A ToolResult as MCP content: text stays text, data-URL images become image blocks. */
export function toolResultToMcp(r: ToolResult): CallToolResult {
  const parts: ContentPart[] = typeof r.content === "string" ? [{ type: "text", text: r.content }] : r.content;
  const content: CallToolResult["content"] = parts.map((p) => {
    if (p.type === "text") return { type: "text", text: p.text };
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(p.image_url.url);
    if (m) return { type: "image", mimeType: m[1]!, data: m[2]! };
    return { type: "resource_link", uri: p.image_url.url, name: "image" };
  });
  return { content, isError: r.isError };
}

function taskIdFromInitialize(msg: unknown): string | undefined {
  const m = msg as { method?: string; params?: { _meta?: Record<string, unknown> } };
  if (m?.method !== "initialize") return undefined;
  const v = m.params?._meta?.[TASK_ID_META] ?? m.params?._meta?.task_id;
  return v === undefined ? undefined : String(v);
}

interface Session {
  /** The session's rollout now (the harness may move the session onto a rollout it created). */
  rollout: McpRollout;
  close(): Promise<void>;
}

function toMcpError(e: unknown, what: string): McpError {
  if (e instanceof McpError) return e;
  // the server's one classification: a client's fault is bad params, the rest an internal error
  if (classify(e).status < 500) return new McpError(ErrorCode.InvalidParams, errorMessage(e));
  return new McpError(ErrorCode.InternalError, `${what}: ${e instanceof Error ? e.name : "Error"}: ${errorMessage(e)}`);
}

/**
 * One MCP session on one rollout. The model-facing surface is the env's tools and the task resource, nothing else:
 * no reward tool and no task choice. Scoring and task choice are the harness's: `serveMcpHttp`'s `/v1` channel, or the
 * handle `serveMcpStdio` returns.
 */
async function openSession(
  env: Env,
  rollouts: McpRollouts,
  transport: Transport,
  first: McpRollout,
  options: { onClosed?(): void },
): Promise<Session> {
  let closed = false;
  const session: Session = { rollout: first, close: async () => {} };
  const task = async (r: McpRollout): Promise<Task> => {
    try {
      return await rollouts.start(r);
    } catch (e) {
      throw toMcpError(e, "could not start the rollout");
    }
  };

  const server = new Server(
    { name: `benchmax-${env.name}`, version: "0.1.0" },
    {
      capabilities: { tools: {}, resources: {}, prompts: {} },
      instructions: typeof env.systemPrompt === "string" ? env.systemPrompt : undefined,
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: env.listTools().map(
      (t): McpTool => ({
        name: t.name,
        description: t.description,
        inputSchema: { type: "object" as const, ...t.parameters },
      }),
    ),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const args = (req.params.arguments ?? {}) as Record<string, unknown>;
    const r = session.rollout;
    await task(r);
    try {
      const out = await rollouts.use(r, () => r.episode!.callTool({ name: req.params.name, arguments: args }));
      r.toolCalls++;
      return toolResultToMcp(out);
    } catch (e) {
      // an env or infrastructure failure is not the model's fault: a JSON-RPC error, not a tool result
      throw toMcpError(e, "tool call failed");
    }
  });
  // clients list prompts at start-up (some treat -32601 as a broken server): there are none to give
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: [] }));
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    throw new McpError(ErrorCode.InvalidParams, `unknown prompt ${req.params.name}: this server has no prompts`);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: [
      {
        uri: TASK_RESOURCE,
        name: "task",
        description: "This session's task prompt and system prompt",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req) => {
    if (req.params.uri !== TASK_RESOURCE)
      throw new McpError(ErrorCode.InvalidParams, `unknown resource ${req.params.uri}`);
    const t = await task(session.rollout);
    const body = { id: t.id, systemPrompt: resolveSystemPrompt(env, t), prompt: t.prompt, messages: t.messages };
    return { contents: [{ uri: TASK_RESOURCE, mimeType: "application/json", text: JSON.stringify(body) }] };
  });

  const close = async () => {
    if (closed) return;
    closed = true;
    if (session.rollout.sessionOwned) await rollouts.release(session.rollout);
    options.onClosed?.();
  };
  server.onclose = () => void close();
  await server.connect(transport);
  session.close = async () => {
    await server.close().catch(() => {});
    await close();
  };
  return session;
}

/** The harness's handle on a stdio session (the model on the other end of stdin/stdout never sees it). */
export interface McpStdioHarness {
  /** The session's rollout: its id and task id (once started). */
  rollout(): { id: string; taskId?: string; toolCalls: number };
  /** Move the session onto a fresh rollout on `taskId` (the next task when omitted); the old one is released. */
  start(taskId?: string): Promise<{ id: string; taskId: string }>;
  /** Score the session's rollout, once: from the final text (see README) or the whole conversation. */
  score(input: { completion?: string; messages?: Message[] }): Promise<RewardOutcome>;
}

/**
 * Serve `env` as an MCP server over stdio: this process's stdin/stdout carry one MCP session, i.e. one rollout at a
 * time. The rollout's task: `_meta["benchmax/task_id"]` in `initialize` is read by the harness that launched this
 * process, else the first of `tasks` / `env.loadTasks()`. The returned handle is the harness channel (`start`,
 * `score`); nothing over stdio scores or picks tasks. `closed` resolves when the client disconnects (end of input) and
 * the rollout has been released.
 */
export async function serveMcpStdio<T extends Task = Task>(
  env: Env<T>,
  options: ServeMcpOptions<T> & { stdin?: Readable; stdout?: Writable; taskId?: string } = {},
): Promise<{ close(): Promise<void>; closed: Promise<void> } & McpStdioHarness> {
  const e = env as unknown as Env;
  const rollouts = new McpRollouts(e, new TaskPicker(e, options.tasks as Task[] | undefined), {
    idleTimeoutMs: Infinity,
  });
  const stdin = options.stdin ?? process.stdin;
  const transport = new StdioServerTransport(stdin, options.stdout ?? process.stdout);
  // the harness may name the task in `initialize` _meta before the first call starts the rollout
  const first = rollouts.create(options.taskId, true);
  let resolveClosed!: () => void;
  const closed = new Promise<void>((r) => (resolveClosed = r));
  const session = await openSession(e, rollouts, transport, first, { onClosed: resolveClosed });
  const sdkOnMessage = transport.onmessage;
  transport.onmessage = (m) => {
    const id = taskIdFromInitialize(m);
    if (id !== undefined && !session.rollout.ready) session.rollout.taskId = id;
    sdkOnMessage?.(m);
  };
  // the client went away (end of input): end the session and release its rollout
  const onEnd = () => void session.close();
  stdin.once("end", onEnd);
  return {
    closed,
    close: async () => {
      stdin.off("end", onEnd);
      await session.close();
      await rollouts.close();
    },
    rollout: () => ({ id: session.rollout.id, taskId: session.rollout.task?.id, toolCalls: session.rollout.toolCalls }),
    start: async (taskId) => {
      const old = session.rollout;
      const r = rollouts.create(taskId, true);
      const t = await rollouts.start(r).catch(async (err) => {
        await rollouts.release(r);
        throw err;
      });
      session.rollout = r;
      await rollouts.release(old);
      return { id: r.id, taskId: t.id };
    },
    score: (input) => rollouts.reward(session.rollout, input),
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
  /** Live rollouts one client (remote address) may hold (default: maxRollouts). */
  maxRolloutsPerClient?: number;
  /** At capacity, a client under its fair share takes the place of other clients' rollouts idle this long (30 s). */
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
  /** Live rollouts at most (default 1024): a new session or rollout beyond it answers 503. */
  maxRollouts?: number;
  /** Release a rollout (and end its sessions) after this long without a request (ms). Default 10 min. */
  sessionIdleMs?: number;
  /** Largest request body in bytes (default 8 MiB). */
  maxBodyBytes?: number;
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

function bearerOf(req: IncomingMessage): string | undefined {
  const h = req.headers.authorization;
  if (!h) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(h.trim());
  return m ? m[1]!.trim() : undefined;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

interface HttpSession {
  transport: StreamableHTTPServerTransport;
  session?: Session;
  /** Opened with a rollout's own token: only that rollout's token may use the session. */
  boundToken?: string;
}

/**
 * Serve `env` as a streamable-HTTP MCP server at `http://host:port/mcp`, plus the harness channel and `GET /health`.
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
): Promise<{ url: string; close(): Promise<void> }> {
  const env = env0 as unknown as Env;
  const originPolicy = edgePolicy(options, process.env.BENCHMAX_HOST ?? "127.0.0.1");
  const { token, bindHost } = originPolicy;
  const maxSessionsPerRollout = options.maxSessionsPerRollout ?? 4;
  const maxBody = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const rollouts = new McpRollouts(env, new TaskPicker(env, options.tasks as Task[] | undefined), {
    maxRollouts: options.maxRollouts,
    maxRolloutsPerClient: options.maxRolloutsPerClient,
    reclaimIdleMs: options.reclaimIdleMs,
    idleTimeoutMs: options.sessionIdleMs,
  });
  const sessions = new Map<string, HttpSession>();
  /** Every session from its `initialize` on (initialized or not): what the session caps count. */
  const live = new Set<HttpSession>();
  const drop = async (entry: HttpSession) => {
    if (!live.delete(entry)) return;
    const id = entry.transport.sessionId;
    if (id && sessions.get(id) === entry) sessions.delete(id);
    await entry.session?.close();
  };
  const endSession = async (id: string) => {
    const s = sessions.get(id);
    if (!s) return;
    sessions.delete(id);
    live.delete(s);
    await s.session?.close();
  };
  // a rollout released by the idle sweep ends its sessions too
  const sweep = setInterval(
    () => {
      for (const [id, s] of sessions) if (s.session?.rollout.released) void endSession(id);
    },
    Math.max(10, Math.min(rollouts.idleTimeoutMs / 2, 30_000)),
  );
  sweep.unref();

  /** Who is calling: the operator (or anyone, with no token configured), a rollout's token holder, or no one. */
  const caller = (req: IncomingMessage): { operator: boolean; rollout?: McpRollout } | HarnessError => {
    const presented = bearerOf(req);
    if (!token) return { operator: true };
    if (!presented) return new HarnessError(401, "UNAUTHORIZED", "missing Authorization: Bearer <token>");
    if (sameSecret(presented, token)) return { operator: true };
    const r = rollouts.ofToken(presented);
    if (r) return { operator: false, rollout: r };
    return new HarnessError(403, "FORBIDDEN", "wrong bearer token");
  };

  async function harness(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const who = caller(req);
    if (who instanceof HarnessError) throw who;
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
      const s = typeof sid === "string" ? sessions.get(sid) : undefined;
      if (sid !== undefined && !s?.session)
        throw new HarnessError(404, "UNKNOWN_SESSION", `unknown MCP session ${String(sid)}`);
      const r = rollouts.create(taskId as string | undefined, false, clientOf(req));
      let task: Task;
      try {
        task = await rollouts.start(r);
      } catch (e) {
        await rollouts.release(r);
        throw e;
      }
      if (s?.session) {
        const old = s.session.rollout;
        s.session.rollout = r;
        s.boundToken = undefined;
        if (old.sessionOwned) await rollouts.release(old);
      }
      return sendJson(res, 201, {
        rolloutId: r.id,
        token: r.token,
        taskId: task.id,
        systemPrompt: resolveSystemPrompt(env, task),
      });
    }
    const m = /^\/v1\/rollouts\/([^/]+)(?:\/(reward|release))?$/.exec(path);
    if (!m) throw new HarnessError(404, "NOT_FOUND", `no route ${method} ${path}`);
    const tok = req.headers["x-rollout-token"];
    const r = rollouts.get(decodeURIComponent(m[1]!), typeof tok === "string" ? tok : undefined);
    if (!m[2] && method === "GET") {
      return sendJson(res, 200, {
        rolloutId: r.id,
        taskId: r.task?.id ?? null,
        toolCalls: r.toolCalls,
        scored: r.scoring,
      });
    }
    if ((!m[2] && method === "DELETE") || (m[2] === "release" && method === "POST")) {
      await rollouts.release(r);
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
      const out = await rollouts.reward(r, {
        completion: body.completion as string | undefined,
        messages: messages as Message[] | undefined,
      });
      return sendJson(res, 200, out);
    }
    throw new HarnessError(405, "METHOD_NOT_ALLOWED", `${method} ${path} is not allowed`);
  }

  async function mcp(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const who = caller(req);
    if (who instanceof HarnessError) {
      jsonError(res, who.status, ErrorCode.InvalidRequest, who.message);
      return;
    }
    let body: unknown;
    if (req.method === "POST") {
      const text = await readBody(req, maxBody);
      try {
        body = JSON.parse(text);
      } catch {
        jsonError(res, 400, ErrorCode.ParseError, "request body is not valid JSON");
        return;
      }
    }
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const s = sessions.get(sid);
      if (!s) {
        jsonError(res, 404, ErrorCode.InvalidRequest, `unknown or expired MCP session ${sid}`);
        return;
      }
      // a rollout-token holder uses its own session only; the operator any
      if (!who.operator && (!s.boundToken || who.rollout?.token !== s.boundToken)) {
        jsonError(res, 403, ErrorCode.InvalidRequest, "this MCP session belongs to another rollout");
        return;
      }
      if (s.session) s.session.rollout.lastUsed = Date.now();
      await s.transport.handleRequest(req, res, body);
      return;
    }
    const first = Array.isArray(body) ? body[0] : body;
    if (req.method !== "POST" || (first as { method?: string })?.method !== "initialize") {
      jsonError(res, 400, ErrorCode.InvalidRequest, "no MCP session: send an initialize request first");
      return;
    }
    // every session counts against maxRollouts; one rollout token holds a few sessions at most (the oldest gives way)
    if (who.rollout) {
      const own = [...live].filter((e) => e.boundToken === who.rollout!.token);
      for (const e of own.slice(0, Math.max(0, own.length - maxSessionsPerRollout + 1))) await drop(e);
    }
    let rollout: McpRollout;
    if (who.rollout) rollout = who.rollout;
    else {
      const header = req.headers["x-benchmax-task-id"];
      const taskId =
        taskIdFromInitialize(first) ??
        (typeof header === "string" ? header : undefined) ??
        url.searchParams.get("task_id") ??
        undefined;
      try {
        rollout = rollouts.create(taskId, true, clientOf(req));
      } catch (e) {
        const he = e as HarnessError;
        if (he.status === 503) res.setHeader("retry-after", "1");
        jsonError(res, he.status ?? 500, ErrorCode.InternalError, errorMessage(e));
        return;
      }
    }
    // sessions of released rollouts (reclaimed, expired) give way before the session count is checked
    if (live.size >= rollouts.maxRollouts) {
      for (const e of [...live]) if (e.session?.rollout.released) await drop(e);
    }
    if (live.size >= rollouts.maxRollouts) {
      if (rollout.sessionOwned) await rollouts.release(rollout);
      res.setHeader("retry-after", "1");
      jsonError(res, 503, ErrorCode.InternalError, `server at capacity (${rollouts.maxRollouts} MCP sessions)`);
      return;
    }
    const entry: HttpSession = {
      boundToken: who.rollout?.token,
      transport: new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, entry);
        },
        onsessionclosed: (id) => void endSession(id),
      }),
    };
    live.add(entry);
    entry.session = await openSession(env, rollouts, entry.transport, rollout, {
      onClosed: () => void drop(entry),
    });
    if (rollout.sessionOwned) {
      res.setHeader(ROLLOUT_ID_HEADER, rollout.id);
      res.setHeader(ROLLOUT_TOKEN_HEADER, rollout.token);
    }
    await entry.transport.handleRequest(req, res, body);
    // an initialize the SDK refused opened no session
    if (!entry.transport.sessionId) await drop(entry);
  }

  const http = createServer(serverOptions(options), async (req, res) => {
    try {
      const url = new URL(req.url ?? "/", "http://localhost");
      if (url.pathname === "/health" && req.method === "GET") {
        sendJson(res, 200, { status: "ok", env: env.name, sessions: sessions.size, rollouts: rollouts.active });
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
      await mcp(req, res, url);
    } catch (e) {
      options.log?.(`mcp http: ${errorMessage(e)}`);
      if (res.headersSent) {
        res.end();
        return;
      }
      if (e instanceof HarnessError) {
        if (e.status === 503) res.setHeader("retry-after", "1");
        sendJson(res, e.status, { error: { message: e.message, code: e.code } });
      } else sendJson(res, 500, { error: { message: errorMessage(e), code: "EXECUTION_ERROR" } });
    }
  });
  const guard = guardConnections(http, options);
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port, bindHost, () => resolve());
  });
  const addr = http.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}/mcp`,
    close: async () => {
      clearInterval(sweep);
      guard.stop();
      await Promise.all([...sessions.keys()].map(endSession));
      await Promise.all([...live].map(drop));
      await rollouts.close();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
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
