/**
 * Why a rollout-service call failed, transport-neutral. Each transport maps these codes once (error-codes.ts:
 * HTTP status, JSON-RPC error, OpenEnv `{detail}` / WebSocket code).
 * - bad_request: the caller's input is malformed or refused (a model's or harness's fault).
 * - unauthorized / forbidden: no capability token, or the wrong one.
 * - not_found: no such rollout, task or route.
 * - method_not_allowed, too_large: transport-level refusals.
 * - conflict: the rollout's state forbids it (scored already, done, an id already live).
 * - client_limit: this client holds its share; capacity: the server is full (or draining).
 * - not_supported: the env lacks the feature (fork, group reward).
 * - timeout: a limit the service enforces ran out.
 * - env_error / infra_error: the env (or its task or gold) failed / the infrastructure failed. Never scored.
 */
export type ServiceErrorCode =
  | "bad_request"
  | "unauthorized"
  | "forbidden"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "too_large"
  | "client_limit"
  | "capacity"
  | "not_supported"
  | "timeout"
  | "env_error"
  | "infra_error";

export interface ServiceErrorDetail {
  /** A stable machine-readable reason on the wire (`UNKNOWN_ROLLOUT`, `ALREADY_SCORED`, …); default: the code. */
  reason?: string;
  /** Where in the request the problem is, FastAPI-style (`["body", "action", "tool_name"]`). */
  loc?: Array<string | number>;
  /** The offending input, echoed in a 422 `detail` item. */
  input?: unknown;
  cause?: unknown;
}

/** The rollout service's one typed error: a code every transport maps, and a stable wire reason. */
export class RolloutServiceError extends Error {
  override name = "RolloutServiceError";
  readonly reason: string;
  readonly loc?: Array<string | number>;
  readonly input?: unknown;

  constructor(
    readonly code: ServiceErrorCode,
    message: string,
    detail: ServiceErrorDetail = {},
  ) {
    super(message, detail.cause === undefined ? undefined : { cause: detail.cause });
    this.reason = detail.reason ?? code.toUpperCase();
    if (detail.loc) this.loc = detail.loc;
    if (detail.input !== undefined) this.input = detail.input;
  }
}

export const badRequest = (
  message: string,
  reason = "VALIDATION_ERROR",
  loc?: Array<string | number>,
  input?: unknown,
) => new RolloutServiceError("bad_request", message, { reason, loc, input });
export const notFound = (message: string, reason = "NOT_FOUND") =>
  new RolloutServiceError("not_found", message, { reason });
export const conflict = (message: string, reason = "CONFLICT") =>
  new RolloutServiceError("conflict", message, { reason });
