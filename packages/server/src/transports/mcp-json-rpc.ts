import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { type RolloutService, RolloutServiceError, type ServedRollout } from "../service/index.js";
import { errorAnswer, type McpAnswer, McpExchange } from "./mcp-exchange.js";
import { createMcpServer, type Held, type McpScope } from "./mcp-server.js";
import { answerToolsCall, isPlainToolsCall } from "./mcp-tools-call.js";

/** Who sends a sessionless MCP message, and the session it comes on, if any. */
export interface McpCaller {
  /** The caller's admission identity (see `clientOf`): rollouts it creates count against its share. */
  client?: string;
  /** The WebSocket session's rollout, if any (`/ws` `{"type": "mcp"}`); `POST /mcp` has none. */
  session?(): ServedRollout | undefined;
  /** Start the WebSocket session's episode (the next task) when a tool is called before any reset. */
  startSession?(): Promise<ServedRollout>;
}

/** OpenEnv's session id: `<episode id>.<rollout token>`, so holding one is holding the rollout's capability. */
export function sessionIdOf(r: ServedRollout): string {
  return `${r.id}.${r.token}`;
}

/**
 * MCP without an MCP session, as OpenEnv speaks it: `POST /mcp` (one JSON-RPC message or a batch; errors with status
 * 200, as OpenEnv's server answers them) and the WebSocket `{"type": "mcp", "data": <request>}` message
 * (src/openenv/core/env_server/http_server.py, mcp_types.py). One MCP SDK `Server` answers them all, over an
 * `McpExchange`; each message carries its own scope:
 *
 * - `tools/call` with `session_id` (OpenEnv's `openenv/session/create`, how `MCPToolClient` keeps one episode across
 *   HTTP calls) acts on that rollout; on a WebSocket session, on the session's; else on a throwaway rollout that is
 *   released after the call and never scored.
 * - The harness scores a session's episode on the rollout API (`POST /v1/rollouts/<id>/reward`), never here.
 *
 * A plain `tools/call` (`isPlainToolsCall`: no `_meta`, no `task`, well-formed) is answered by the same handler
 * without the SDK `Server` in between (`answerToolsCall`), the one hot method of this wire; `sdkOnly` turns that off.
 */
export class McpJsonRpc {
  private readonly exchange = new McpExchange<McpScope>();
  private readonly server: Server;
  private readonly ready: Promise<void>;
  /** `server.connect` has finished: messages go straight in (no await per message). */
  private connected = false;
  readonly maxBatch: number;
  private readonly direct: boolean;

  constructor(
    readonly service: RolloutService,
    options: {
      maxBatch?: number;
      /** Answer every message through the SDK `Server`, plain `tools/call` included (the reference answers). */
      sdkOnly?: boolean;
    } = {},
  ) {
    this.maxBatch = options.maxBatch ?? 64;
    this.direct = !options.sdkOnly;
    this.server = createMcpServer({
      service,
      scopeOf: (id) => {
        const scope = this.exchange.contextOf(id);
        if (!scope) throw new McpError(ErrorCode.InternalError, "request without a caller");
        return scope;
      },
    });
    this.ready = this.server.connect(this.exchange).then(() => {
      this.exchange.dispatchTo(this.server);
      this.connected = true;
    });
  }

  /** Answer one message: the answer to a request, `undefined` for a notification. */
  handle(msg: unknown, caller: McpCaller = {}): Promise<McpAnswer | undefined> {
    if (this.direct && isPlainToolsCall(msg))
      return answerToolsCall(this.service, new CallerScope(this, msg, caller), msg);
    if (!this.connected) return this.ready.then(() => this.handle(msg, caller));
    return this.exchange.handle(msg, new CallerScope(this, msg, caller));
  }

  /**
   * Answer a `POST /mcp` body (its text): one message, or a batch of at most `maxBatch`. `undefined` when nothing
   * needs an answer (notifications only: HTTP 202). Malformed JSON is a parse error answer, not an exception.
   */
  handleText(text: string, caller: McpCaller = {}): Promise<McpAnswer | McpAnswer[] | undefined> {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (e) {
      return Promise.resolve(parseError(e));
    }
    return this.handleBody(parsed, caller);
  }

  /** `handleText` for a body already parsed from JSON: one message, or a batch of at most `maxBatch`. */
  async handleBody(parsed: unknown, caller: McpCaller = {}): Promise<McpAnswer | McpAnswer[] | undefined> {
    if (!Array.isArray(parsed)) return this.handle(parsed, caller);
    if (parsed.length > this.maxBatch) {
      return errorAnswer(
        null,
        ErrorCode.InvalidRequest,
        `batch of ${parsed.length} messages: at most ${this.maxBatch} per request`,
      );
    }
    const out = (await Promise.all(parsed.map((m) => this.handle(m, caller)))).filter((x) => x !== undefined);
    return out.length ? out : undefined;
  }

  async close(): Promise<void> {
    await this.server.close().catch(() => {});
  }

  /** The rollout an OpenEnv session id names (its capability: `<episode id>.<rollout token>`). */
  rolloutOfSession(sessionId: string): ServedRollout {
    const dot = sessionId.lastIndexOf(".");
    if (dot <= 0) {
      throw new RolloutServiceError("forbidden", `Unknown session_id: ${sessionId}`, { reason: "FORBIDDEN" });
    }
    return this.service.get(sessionId.slice(0, dot), sessionId.slice(dot + 1));
  }
}

/** A JSON-RPC parse error answer (id null: the id could not be read). */
export function parseError(e: unknown): McpAnswer {
  return errorAnswer(null, ErrorCode.ParseError, `Parse error: ${e instanceof Error ? e.message : String(e)}`);
}

/**
 * The scope of one sessionless message: the rollout its `session_id` names, else the caller's WebSocket session's,
 * else a throwaway rollout. One object per message with its methods on the prototype (no closures per message).
 */
class CallerScope implements McpScope {
  private readonly named: string | undefined;

  constructor(
    private readonly rpc: McpJsonRpc,
    msg: unknown,
    private readonly caller: McpCaller,
  ) {
    const params = (msg as { params?: { session_id?: unknown } } | null)?.params;
    this.named = typeof params?.session_id === "string" ? params.session_id : undefined;
  }

  rollout(): Held | Promise<Held> {
    if (this.named !== undefined) return { rollout: this.rpc.rolloutOfSession(this.named) };
    const own = this.caller.session?.();
    if (own) return { rollout: own };
    return this.started();
  }

  private async started(): Promise<Held> {
    const own = this.caller.startSession ? await this.caller.startSession() : undefined;
    if (own) return { rollout: own };
    // like OpenEnv's stateless /mcp: a throwaway episode, never scored
    return { rollout: await this.rpc.service.create({ client: this.caller.client, origin: "mcp" }), temporary: true };
  }

  async createSession(): Promise<string> {
    const own = this.caller.session?.();
    if (own) return sessionIdOf(own);
    return sessionIdOf(await this.rpc.service.create({ client: this.caller.client, origin: "mcp" }));
  }

  async closeSession(sessionId: string): Promise<void> {
    const r = this.rpc.rolloutOfSession(sessionId);
    if (this.caller.session?.() === r) {
      throw new McpError(ErrorCode.InvalidRequest, "Cannot close active WebSocket-managed session via MCP method");
    }
    await this.rpc.service.release(r);
  }
}
