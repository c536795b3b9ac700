import type { RolloutServiceError } from "./service/service-error.js";

/**
 * A transport-level refusal with its HTTP status and a stable machine-readable code (a body too large, a method not
 * allowed, a missing bearer token). What the rollout service refuses is a `RolloutServiceError`.
 */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Where in the request the problem is, FastAPI-style (`["body", "action", "tool_name"]`). */
    readonly loc?: Array<string | number>,
    /** The offending input, echoed in a 422 `detail` item. */
    readonly input?: unknown,
  ) {
    super(message);
  }
}

/** FastAPI's validation-error item (`{"detail": [item]}` with status 422), as OpenEnv's server answers. */
export interface ValidationDetail {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
}

/** The 422 body OpenEnv's FastAPI server gives for a request that fails validation. */
export function validationDetail(e: HttpError | RolloutServiceError): { detail: ValidationDetail[] } {
  const code = e instanceof HttpError ? e.code : e.reason;
  const type = code === "INVALID_JSON" ? "json_invalid" : code === "MISSING" ? "missing" : "value_error";
  return { detail: [{ type, loc: e.loc ?? ["body"], msg: e.message, input: e.input ?? null }] };
}
