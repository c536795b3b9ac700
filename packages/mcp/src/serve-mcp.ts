import type { Readable, Writable } from "node:stream";
import type { Env, Message, Task, ToolResult } from "@benchmax/core";
import {
  callToolResult,
  createMcpServer,
  HttpError,
  RolloutService,
  type ScoreOutcome,
  type ServedRollout,
  type ServeEnvOptions,
  serveEnv,
  taskIdFromInitialize,
} from "@benchmax/server";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";

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
  const service = new RolloutService(env, {
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

/**
 * `serveEnv`'s options (the one HTTP host: limits, tokens and client tokens, admission, drain), with a required port
 * and the host defaulting to `$BENCHMAX_HOST` (fleets set BENCHMAX_HOST=0.0.0.0), else 127.0.0.1.
 */
export interface ServeMcpHttpOptions<T extends Task = Task>
  extends Omit<ServeEnvOptions, "tasks" | "port">,
    ServeMcpOptions<T> {
  /** 0 = any free port (read it from the returned url). */
  port: number;
  /** Release a rollout (and end its sessions) after this long without a request (ms); `idleTimeoutMs` too. */
  sessionIdleMs?: number;
}

/**
 * Serve `env` as a streamable-HTTP MCP server at `http://host:port/mcp`: `benchmax serve`'s one HTTP host
 * (`serveEnv`), whose `/mcp` gives every MCP session a rollout of its own, with the harness channel beside it. The
 * same host also answers the rollout API, OpenEnv's routes, `/metrics` and `/health`; this function only returns the
 * MCP endpoint as its URL.
 *
 * - `/mcp`: every MCP session is one rollout. Opened with the operator token (or with none configured), it runs on a
 *   rollout of its own (the task: `_meta["benchmax/task_id"]` in `initialize`, `x-benchmax-task-id`, `?task_id=`, or
 *   the next task), whose id and token come back in the `x-benchmax-rollout-id` / `x-benchmax-rollout-token` headers
 *   of the `initialize` answer. Opened with a rollout's token as its bearer, it runs on that rollout.
 * - The harness channel (operator token): `POST /v1/rollouts {taskId?, session?}` → `{rolloutId, token, taskId}`
 *   (with `session`, an MCP session id, that session moves onto the new rollout); `POST /v1/rollouts/:id/reward
 *   {completion | messages}` scores once; `GET /v1/rollouts/:id` (its state); `POST /v1/rollouts/:id/release`.
 *   Rollout routes also need `X-Rollout-Token`.
 * - It drains as `benchmax serve` does (`drain()`, SIGTERM in `benchmax serve --mcp --port N`).
 */
export async function serveMcpHttp<T extends Task = Task>(
  env: Env<T>,
  options: ServeMcpHttpOptions<T>,
): Promise<McpHttpServer> {
  const { sessionIdleMs, tasks, log: _log, ...rest } = options;
  const s = await serveEnv(env, {
    ...rest,
    host: options.host ?? process.env.BENCHMAX_HOST,
    ...(tasks ? { tasks: tasks as Task[] } : {}),
    ...(sessionIdleMs !== undefined ? { idleTimeoutMs: sessionIdleMs } : {}),
  });
  return {
    url: `${s.url}/mcp`,
    close: () => s.close(),
    drain: (graceMs?: number) => s.drain(graceMs),
    get draining() {
      return s.draining;
    },
    get activeRollouts() {
      return s.activeRollouts;
    },
  };
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
