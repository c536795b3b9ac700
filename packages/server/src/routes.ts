import { z } from "zod";
import * as W from "./wire-schemas.js";

export type Method = "GET" | "POST" | "DELETE";

/** One HTTP route of `serveEnv`: the router registers it, `/openapi.json` documents it. */
export interface RouteSpec {
  /** The handler's name (serve-env.ts has one handler per name; a missing one does not compile). */
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

const err = { "400": W.ErrorBody, "401": W.ErrorBody, "403": W.ErrorBody };
const onRollout = { ...err, "404": W.ErrorBody, "409": W.ErrorBody };
const openenvErr = { "409": W.ErrorBody, "422": W.ValidationBody };

/** Every HTTP route `serveEnv` answers, declared once. */
export const ROUTE_LIST = [
  {
    name: "health",
    method: "GET",
    path: "/health",
    summary: "Health check (no token needed)",
    tag: "Health",
    public: true,
    responses: { "200": W.HealthBody, "503": W.HealthBody },
  },
  {
    name: "metadata",
    method: "GET",
    path: "/metadata",
    summary: "Environment metadata",
    tag: "OpenEnv",
    responses: { "200": W.MetadataBody },
  },
  {
    name: "schema",
    method: "GET",
    path: "/schema",
    summary: "JSON Schemas of the action, observation and state",
    tag: "OpenEnv",
    responses: { "200": W.SchemaBody },
  },
  {
    name: "reset",
    method: "POST",
    path: "/reset",
    summary: "Start an episode",
    tag: "OpenEnv",
    body: W.ResetBody,
    optionalBody: true,
    responses: { "200": W.StepResultBody, ...openenvErr, "503": W.ErrorBody },
  },
  {
    name: "step",
    method: "POST",
    path: "/step",
    summary: "Act in an episode",
    tag: "OpenEnv",
    body: W.StepBody,
    responses: { "200": W.StepResultBody, ...openenvErr },
  },
  {
    name: "state",
    method: "GET",
    path: "/state",
    summary: "State of an episode (a finished one's final state stays readable)",
    tag: "OpenEnv",
    query: { episode_id: W.StateBody.shape.episode_id },
    responses: { "200": W.StateBody, "409": W.ErrorBody },
  },
  {
    name: "mcp",
    selfAuth: true,
    method: "POST",
    path: "/mcp",
    summary: "MCP JSON-RPC 2.0: initialize, tools/list, tools/call, openenv/session/create|close",
    tag: "OpenEnv",
    body: W.JsonRpcBody,
    responses: { "200": W.AnyObject, "202": "A notification was accepted" },
  },
  {
    name: "mcpStream",
    selfAuth: true,
    method: "GET",
    path: "/mcp",
    summary: "MCP streamable HTTP: the session's server-to-client event stream (Mcp-Session-Id header)",
    tag: "OpenEnv",
    responses: { "200": "text/event-stream", "400": W.AnyObject },
  },
  {
    name: "mcpClose",
    selfAuth: true,
    method: "DELETE",
    path: "/mcp",
    summary: "MCP streamable HTTP: end the session (Mcp-Session-Id header)",
    tag: "OpenEnv",
    responses: { "200": "Session closed", "400": W.AnyObject },
  },
  {
    name: "openapi",
    method: "GET",
    path: "/openapi.json",
    summary: "This document",
    tag: "Schema",
    responses: { "200": W.AnyObject },
  },
  {
    name: "metrics",
    method: "GET",
    path: "/metrics",
    summary: "Counters and latency histograms (JSON, or ?format=prometheus)",
    tag: "Health",
    responses: { "200": W.AnyObject },
  },
  {
    name: "tools",
    method: "GET",
    path: "/v1/tools",
    summary: "The env's tools",
    tag: "Rollout API",
    responses: { "200": W.ToolsBody },
  },
  {
    name: "tasks",
    method: "GET",
    path: "/v1/tasks",
    summary: "Dataset tasks without gold data (include=systemPrompt: each task's system prompt, no rollout made)",
    tag: "Rollout API",
    query: { limit: z.number().int().min(0), include: z.enum(["systemPrompt"]) },
    responses: { "200": W.TasksBody },
  },
  {
    name: "create",
    method: "POST",
    path: "/v1/rollouts",
    summary: "Create a rollout ({taskId} | {task} | {seed} | {})",
    tag: "Rollout API",
    body: W.CreateRolloutBody,
    optionalBody: true,
    responses: { "201": W.CreatedRollout, ...err, "404": W.ErrorBody, "429": W.ErrorBody, "503": W.ErrorBody },
  },
  {
    name: "rolloutState",
    method: "GET",
    path: "/v1/rollouts/:id",
    summary: "Rollout state",
    tag: "Rollout API",
    rollout: true,
    responses: { "200": W.StateBody, ...onRollout },
  },
  {
    name: "delete",
    method: "DELETE",
    path: "/v1/rollouts/:id",
    summary: "Release the rollout",
    tag: "Rollout API",
    rollout: true,
    responses: { "200": W.Released, ...onRollout },
  },
  {
    name: "call",
    method: "POST",
    path: "/v1/rollouts/:id/call",
    summary: "Run one tool call",
    tag: "Rollout API",
    rollout: true,
    body: W.CallBody,
    responses: { "200": W.ToolResultBody, ...onRollout },
  },
  {
    name: "reward",
    method: "POST",
    path: "/v1/rollouts/:id/reward",
    summary: "Score the rollout, once (the same input again returns the stored outcome)",
    tag: "Rollout API",
    rollout: true,
    body: W.RewardBody,
    responses: { "200": W.ScoreBody, ...onRollout, "500": W.ErrorBody, "502": W.ErrorBody },
  },
  {
    name: "fork",
    method: "POST",
    path: "/v1/rollouts/:id/fork",
    summary: "Fork into n children",
    tag: "Rollout API",
    rollout: true,
    body: W.ForkBody,
    responses: { "200": W.ForkResult, ...onRollout, "501": W.ErrorBody },
  },
  {
    name: "release",
    method: "POST",
    path: "/v1/rollouts/:id/release",
    summary: "Release the rollout",
    tag: "Rollout API",
    rollout: true,
    optionalBody: true,
    responses: { "200": W.Released, ...onRollout },
  },
  {
    name: "rolloutStep",
    method: "POST",
    path: "/v1/rollouts/:id/step",
    summary: "An OpenEnv action on this rollout",
    tag: "Rollout API",
    rollout: true,
    body: W.StepBody,
    responses: { "200": W.StepResultBody, ...onRollout },
  },
  {
    name: "recordFeed",
    method: "GET",
    path: "/v1/record/feed",
    summary:
      "serve --record: each recorded rollout as a Server-Sent Event, without the gold (Last-Event-ID or ?since=)",
    tag: "Rollout API",
    query: { since: z.string() },
    responses: { "200": "text/event-stream: one `rollout` event per results.jsonl line", ...err, "409": W.ErrorBody },
  },
  {
    name: "groupReward",
    method: "POST",
    path: "/v1/group-reward",
    summary: "Group-relative rewards",
    tag: "Rollout API",
    body: W.GroupRewardBody,
    responses: { "200": W.GroupRewardResult, ...err, "501": W.ErrorBody },
  },
] as const satisfies readonly RouteSpec[];

export type RouteName = (typeof ROUTE_LIST)[number]["name"];

/** A route path in OpenAPI form (`/v1/rollouts/{id}`). */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_]+)/g, "{$1}");

/** Every route path (OpenAPI form) and its methods, from the list. */
export const ROUTES: Readonly<Record<string, readonly ("get" | "post" | "delete")[]>> = (() => {
  const out: Record<string, ("get" | "post" | "delete")[]> = {};
  for (const r of ROUTE_LIST) (out[openApiPath(r.path)] ??= []).push(r.method.toLowerCase() as "get");
  return out;
})();
