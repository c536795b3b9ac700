import { DatasetError, isInfraError } from "@benchmax/core";
import { HttpError } from "./http-error.js";
import { JSONRPC } from "./mcp-rpc.js";

/**
 * The one place errors become codes. Every failure is classified once (`classify`: HTTP status, stable code, and who
 * is at fault), and each transport maps that: HTTP answers it as is, OpenEnv's WebSocket as its error code
 * (`wsCodeOf`), JSON-RPC as its error number (`rpcCodeOf`). Errors are matched by class, never by name.
 */
export interface Classified {
  status: number;
  code: string;
  /** `invalid_request`: the client's (or model's) fault; the rest are the server's, the env's or infrastructure's. */
  type: "invalid_request" | "server_error" | "infra_error" | "env_error";
}

export function classify(e: unknown): Classified {
  if (e instanceof HttpError) {
    return { status: e.status, code: e.code, type: e.status >= 500 ? "server_error" : "invalid_request" };
  }
  if (isInfraError(e)) return { status: 502, code: "INFRA_ERROR", type: "infra_error" };
  if (e instanceof DatasetError) return { status: 400, code: "VALIDATION_ERROR", type: "invalid_request" };
  return { status: 500, code: "EXECUTION_ERROR", type: "env_error" };
}

/** OpenEnv's WebSocket error codes. */
export type WsCode =
  | "INVALID_JSON"
  | "UNKNOWN_TYPE"
  | "VALIDATION_ERROR"
  | "EXECUTION_ERROR"
  | "CAPACITY_REACHED"
  | "FACTORY_ERROR"
  | "SESSION_ERROR";

const WS_CODES: Record<string, WsCode> = {
  CAPACITY_REACHED: "CAPACITY_REACHED",
  UNKNOWN_TYPE: "UNKNOWN_TYPE",
  INVALID_JSON: "INVALID_JSON",
  SESSION_ERROR: "SESSION_ERROR",
  EPISODE_DONE: "SESSION_ERROR",
  UNKNOWN_ROLLOUT: "SESSION_ERROR",
};

export function wsCodeOf(e: unknown): WsCode {
  const c = classify(e);
  const named = WS_CODES[c.code];
  if (named) return named;
  if (c.status === 503) return "CAPACITY_REACHED";
  return c.status >= 500 ? "EXECUTION_ERROR" : "VALIDATION_ERROR";
}

/** JSON-RPC: the caller's bad parameters (400, 401, 403, 404, 422), an env failure, or a server error. */
export function rpcCodeOf(e: unknown): number {
  const c = classify(e);
  if (c.status === 400 || c.status === 401 || c.status === 403 || c.status === 404 || c.status === 422) {
    return JSONRPC.INVALID_PARAMS;
  }
  return c.type === "env_error" ? JSONRPC.INTERNAL_ERROR : JSONRPC.SERVER_ERROR;
}
