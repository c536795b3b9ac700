import type { RolloutService } from "../service/index.js";
import { errorAnswer, type McpAnswer } from "./mcp-exchange.js";
import { callToolIn, type McpScope, mcpErrorOf, type ToolsCallParams } from "./mcp-server.js";

/** A `tools/call` request with nothing in it the SDK `Server` would do more for than call the handler. */
export interface PlainToolsCall {
  jsonrpc: "2.0";
  id: string | number;
  method: "tools/call";
  params: ToolsCallParams & { session_id?: string };
}

/**
 * Is `msg` a plain `tools/call`: a request (a string or integer id) whose `params` has a string `name`, `arguments`
 * absent or an object, and neither `_meta` (a progress token, a related task) nor `task` (task-augmented execution)?
 * For such a call the SDK `Server` (1.32.2) does no more than check the request against `CallToolRequestSchema` (which
 * accepts it), call the handler with the request as sent, and check the result against `CallToolResultSchema`. Any other message, a malformed
 * `tools/call` included, is for the SDK `Server` to answer.
 */
export function isPlainToolsCall(msg: unknown): msg is PlainToolsCall {
  const m = msg as Partial<PlainToolsCall> | null;
  if (m === null || typeof m !== "object" || m.method !== "tools/call" || m.jsonrpc !== "2.0") return false;
  if (typeof m.id !== "string" && !Number.isSafeInteger(m.id)) return false;
  const p = m.params as Record<string, unknown> | undefined;
  if (p === null || typeof p !== "object" || Array.isArray(p) || typeof p.name !== "string") return false;
  if (p._meta !== undefined || p.task !== undefined) return false;
  const a = p.arguments;
  return a === undefined || (typeof a === "object" && a !== null && !Array.isArray(a));
}

/**
 * The answer to a plain `tools/call`, without the SDK `Server` in between: the same handler (`callToolIn`), and its
 * result or error in the JSON-RPC answer the SDK's `Protocol` builds. On Node 20 the SDK's own path costs about
 * 25 µs a call more (an `AbortController`, two zod parses, a chain of promises): 1.65× the server CPU of the
 * hand-written JSON-RPC this replaced. `mcp-tools-call.test.ts` holds the two answers equal, call by call.
 */
export async function answerToolsCall(
  service: RolloutService,
  scope: McpScope,
  msg: PlainToolsCall,
): Promise<McpAnswer> {
  try {
    const result = await callToolIn(service, scope, msg.params);
    return { result, jsonrpc: "2.0", id: msg.id };
  } catch (e) {
    const err = mcpErrorOf(e);
    const answer = errorAnswer(msg.id, err.code, err.message);
    if (err.data !== undefined) answer.error!.data = err.data;
    return answer;
  }
}
