import type { z } from "zod";

export type Method = "GET" | "POST" | "DELETE";

/** One HTTP route of `serveEnv`: the router registers it, `/openapi.json` documents it. */
export interface RouteSpec {
  /** The handler's name (`RouteHandlers` has one handler per name; a missing one does not compile). */
  name: string;
  method: Method;
  /** find-my-way syntax: `/v1/rollouts/:id/call`. */
  path: string;
  summary: string;
  tag: "OpenEnv" | "Rollout API" | "Health" | "Schema";
  /** Answered without the bearer token (and before the Origin/Host check). */
  public?: boolean;
  /**
   * The handler authenticates the caller itself: `/mcp` takes the operator token (or a client token) as every route
   * does, and also a live rollout's own token, which opens MCP sessions on that rollout only.
   */
  selfAuth?: boolean;
  /** Acts on one rollout: its capability token goes in `X-Rollout-Token`. */
  rollout?: boolean;
  body?: z.ZodType;
  /** The body may be omitted. */
  optionalBody?: boolean;
  query?: Record<string, z.ZodType>;
  /** Status → the body's schema (or, for a body-less answer, its description). */
  responses: Record<string, z.ZodType | string>;
}
