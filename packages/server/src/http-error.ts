/** An error that maps to one HTTP status and a stable machine-readable code. */
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

export const badRequest = (msg: string, code = "VALIDATION_ERROR", loc?: Array<string | number>, input?: unknown) =>
  new HttpError(400, code, msg, loc, input);
export const notFound = (msg: string, code = "NOT_FOUND") => new HttpError(404, code, msg);
export const conflict = (msg: string, code = "CONFLICT") => new HttpError(409, code, msg);

/** FastAPI's validation-error item (`{"detail": [item]}` with status 422), as OpenEnv's server answers. */
export interface ValidationDetail {
  type: string;
  loc: Array<string | number>;
  msg: string;
  input: unknown;
}

/** The 422 body OpenEnv's FastAPI server gives for a request that fails validation. */
export function validationDetail(e: HttpError): { detail: ValidationDetail[] } {
  const type = e.code === "INVALID_JSON" ? "json_invalid" : e.code === "MISSING" ? "missing" : "value_error";
  return { detail: [{ type, loc: e.loc ?? ["body"], msg: e.message, input: e.input ?? null }] };
}
