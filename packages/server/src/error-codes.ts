import { DatasetError, isInfraError } from "@benchmax/core";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { HttpError } from "./http-error.js";
import { RolloutServiceError, type ServiceErrorCode } from "./service/service-error.js";

/**
 * The one place errors become wire codes. Every failure is classified once (`classify`: HTTP status, stable code, and
 * who is at fault), and each transport maps that: HTTP answers it as is, OpenEnv's WebSocket as its error code
 * (`wsCodeOf`), JSON-RPC as its error number (`rpcCodeOf`), OpenEnv HTTP validation failures as FastAPI's 422
 * `{detail}` (`isOpenEnvValidation`). Errors are matched by class and code, never by name.
 */
export interface Classified {
  status: number;
  code: string;
  /** `invalid_request`: the client's (or model's) fault; the rest are the server's, the env's or infrastructure's. */
  type: "invalid_request" | "server_error" | "infra_error" | "env_error";
}

/** The rollout service's codes as HTTP statuses: the HTTP map, once. */
export const HTTP_STATUS: Readonly<Record<ServiceErrorCode, number>> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  too_large: 413,
  client_limit: 429,
  env_error: 500,
  not_supported: 501,
  infra_error: 502,
  capacity: 503,
  timeout: 504,
};

export function classify(e: unknown): Classified {
  if (e instanceof RolloutServiceError) {
    const status = HTTP_STATUS[e.code];
    // a rollout admission reclaimed for another client's fair share: its 404 is infrastructure's, not the caller's
    if (e.reason === "ROLLOUT_RECLAIMED") return { status: HTTP_STATUS[e.code], code: e.reason, type: "infra_error" };
    const type =
      e.code === "env_error"
        ? "env_error"
        : e.code === "infra_error"
          ? "infra_error"
          : status >= 500
            ? "server_error"
            : "invalid_request";
    return { status, code: e.reason, type };
  }
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
  ROLLOUT_RECLAIMED: "SESSION_ERROR",
};

export function wsCodeOf(e: unknown): WsCode {
  const c = classify(e);
  const named = WS_CODES[c.code];
  if (named) return named;
  if (c.status === 503 || c.status === 429) return "CAPACITY_REACHED";
  return c.status >= 500 ? "EXECUTION_ERROR" : "VALIDATION_ERROR";
}

/** JSON-RPC's implementation-defined server error (capacity, limits, infrastructure, a rollout's state). */
export const JSONRPC_SERVER_ERROR = -32000;

/**
 * JSON-RPC (MCP, with the SDK's codes): the caller's bad parameters (400, 401, 403, 404, 422) are invalid params, an
 * env failure an internal error, the rest a server error.
 */
export function rpcCodeOf(e: unknown): number {
  const c = classify(e);
  if (
    c.type === "invalid_request" &&
    (c.status === 400 || c.status === 401 || c.status === 403 || c.status === 404 || c.status === 422)
  ) {
    return ErrorCode.InvalidParams;
  }
  return c.type === "env_error" ? ErrorCode.InternalError : JSONRPC_SERVER_ERROR;
}

/** Wire codes OpenEnv's FastAPI server answers as 422 `{detail}` (request validation) on its own routes. */
const OPENENV_422 = new Set(["VALIDATION_ERROR", "INVALID_JSON", "MISSING", "UNKNOWN_TYPE"]);

/** Does this error become OpenEnv's 422 `{detail: [...]}` on `/reset` `/step` `/state`? */
export function isOpenEnvValidation(e: unknown): e is HttpError | RolloutServiceError {
  const c = classify(e);
  return c.status === 400 && OPENENV_422.has(c.code);
}
