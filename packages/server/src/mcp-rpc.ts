import { errorMessage } from "@benchmax/core";
import { rpcCodeOf } from "./error-codes.js";
import type { RolloutService, ServedRollout } from "./service/rollout-service.js";
import { RolloutServiceError } from "./service/service-error.js";
import { callToolResult, frameworkErrorOf, hasTool } from "./tool-errors.js";

/**
 * MCP over OpenEnv's JSON-RPC 2.0 endpoints: `POST /mcp` and the WebSocket `{"type": "mcp", "data": <request>}`
 * message (src/openenv/core/env_server/http_server.py, mcp_types.py). Methods: `initialize`, `ping`, `tools/list`,
 * `tools/call`, and OpenEnv's `openenv/session/create` / `openenv/session/close` (how `MCPToolClient` keeps one
 * episode across HTTP calls). Notifications get no answer.
 *
 * The model-facing surface is the env's tools only: no reward, task-choice or gold-data method exists here. A session
 * id is `<episode id>.<rollout token>`, so holding one is holding the rollout's capability; the harness scores the
 * episode on the rollout API (`POST /v1/rollouts/<episode id>/reward` with `X-Rollout-Token`).
 */

export const JSONRPC = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  SERVER_ERROR: -32000,
} as const;

/** The MCP protocol revision answered when a client names none. */
export const MCP_PROTOCOL_VERSION = "2025-06-18";

export type JsonRpcId = string | number | null;
export interface JsonRpcResponse {
  jsonrpc: "2.0";
  id: JsonRpcId;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export const rpcError = (id: JsonRpcId, code: number, message: string, data?: unknown): JsonRpcResponse => ({
  jsonrpc: "2.0",
  id,
  error: data === undefined ? { code, message } : { code, message, data },
});

export interface RpcContext {
  service: RolloutService;
  /** The WebSocket session's rollout, if any (`/ws` `{"type": "mcp"}`); `POST /mcp` has none. */
  session?(): ServedRollout | undefined;
  /** Start the WebSocket session's episode (the next task) when a tool is called before any reset. */
  startSession?(): Promise<ServedRollout>;
  serverName: string;
  instructions?: string;
  /** The caller's remote address: rollouts it creates count against its share (per-client admission). */
  client?: string;
}

export function sessionIdOf(r: ServedRollout): string {
  return `${r.id}.${r.token}`;
}

function rolloutOfSession(ctx: RpcContext, sessionId: string): ServedRollout {
  const dot = sessionId.lastIndexOf(".");
  if (dot <= 0) throw new RolloutServiceError("forbidden", `Unknown session_id: ${sessionId}`, { reason: "FORBIDDEN" });
  return ctx.service.get(sessionId.slice(0, dot), sessionId.slice(dot + 1));
}

/** Answer one JSON-RPC message; `undefined` for a notification. */
export async function handleRpc(ctx: RpcContext, msg: unknown): Promise<JsonRpcResponse | undefined> {
  if (!msg || typeof msg !== "object" || Array.isArray(msg)) {
    return rpcError(null, JSONRPC.INVALID_REQUEST, "Invalid Request: a JSON-RPC 2.0 request must be an object");
  }
  const m = msg as { jsonrpc?: unknown; method?: unknown; params?: unknown; id?: unknown };
  const id: JsonRpcId = typeof m.id === "string" || typeof m.id === "number" ? m.id : null;
  if (m.jsonrpc !== "2.0") return rpcError(id, JSONRPC.INVALID_REQUEST, `Invalid Request: "jsonrpc" must be "2.0"`);
  if (typeof m.method !== "string" || !m.method) {
    return rpcError(id, JSONRPC.INVALID_REQUEST, `Invalid Request: "method" must be a string`);
  }
  const notification = !("id" in m) || m.id === undefined;
  const params = (m.params ?? {}) as Record<string, unknown>;
  if (typeof params !== "object" || Array.isArray(params)) {
    return rpcError(id, JSONRPC.INVALID_PARAMS, "Params must be an object");
  }
  if (m.method.startsWith("notifications/")) return undefined;
  const out = await dispatch(ctx, m.method, params, id).catch((e) => rpcError(id, rpcCodeOf(e), errorMessage(e)));
  return notification ? undefined : out;
}

async function dispatch(
  ctx: RpcContext,
  method: string,
  params: Record<string, unknown>,
  id: JsonRpcId,
): Promise<JsonRpcResponse> {
  const ok = (result: unknown): JsonRpcResponse => ({ jsonrpc: "2.0", id, result });
  const env = ctx.service.env;
  switch (method) {
    case "initialize":
      return ok({
        protocolVersion: typeof params.protocolVersion === "string" ? params.protocolVersion : MCP_PROTOCOL_VERSION,
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: ctx.serverName, version: "0.1.0" },
        ...(ctx.instructions ? { instructions: ctx.instructions } : {}),
      });
    case "ping":
      return ok({});
    case "tools/list":
      return ok({
        tools: env.listTools().map((t) => ({
          name: t.name,
          description: t.description,
          inputSchema: { type: "object", ...t.parameters },
        })),
      });
    case "openenv/session/create": {
      const own = ctx.session?.();
      if (own) return ok({ session_id: sessionIdOf(own) });
      const r = await ctx.service.create({ client: ctx.client, origin: "mcp" });
      return ok({ session_id: sessionIdOf(r) });
    }
    case "openenv/session/close": {
      if (typeof params.session_id !== "string" || !params.session_id) {
        return rpcError(id, JSONRPC.INVALID_PARAMS, "Invalid params - 'session_id' is required");
      }
      const r = rolloutOfSession(ctx, params.session_id);
      if (ctx.session?.() === r) {
        return rpcError(id, JSONRPC.INVALID_REQUEST, "Cannot close active WebSocket-managed session via MCP method");
      }
      await ctx.service.release(r);
      return ok({ session_id: params.session_id, closed: true });
    }
    case "tools/call": {
      const name = params.name;
      if (typeof name !== "string" || !name) return rpcError(id, JSONRPC.INVALID_PARAMS, "Missing 'name' in params");
      const args = params.arguments ?? {};
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        return rpcError(id, JSONRPC.INVALID_PARAMS, "'arguments' must be an object");
      }
      if (!hasTool(env, name)) return rpcError(id, JSONRPC.INVALID_PARAMS, `Tool not found: ${name}`);
      let r: ServedRollout | undefined;
      let temporary = false;
      if (typeof params.session_id === "string") r = rolloutOfSession(ctx, params.session_id);
      else r = ctx.session?.() ?? (ctx.startSession ? await ctx.startSession() : undefined);
      if (!r) {
        // like OpenEnv's stateless /mcp: a throwaway episode, never scored
        r = await ctx.service.create({ client: ctx.client, origin: "mcp" });
        temporary = true;
      }
      const rollout = r;
      try {
        const res = await ctx.service.callTool(rollout, { name, arguments: args as Record<string, unknown> });
        const kind = frameworkErrorOf(res);
        if (kind === "invalid_args") return rpcError(id, JSONRPC.INVALID_PARAMS, callToolResult(res).data as string);
        return ok(callToolResult(res));
      } finally {
        if (temporary) await ctx.service.release(rollout);
      }
    }
    default:
      return rpcError(id, JSONRPC.METHOD_NOT_FOUND, `Method not found: ${method}`);
  }
}
