import type { IncomingMessage, ServerResponse } from "node:http";
import type { Env } from "@benchmax/core";
import type { AccessTokens } from "../auth.js";
import type { DrainableRolloutService } from "../drain.js";
import type { OriginPolicy } from "../edge.js";
import type { ServerMetrics } from "../metrics.js";
import type { PromMetrics } from "../prometheus.js";
import type { RecordFeed } from "../record-feed.js";
import type { RouteSpec } from "../route-spec.js";
import type { ROUTE_LIST, RouteName } from "../routes.js";
import type { ServeEnvOptions } from "../serve-env-options.js";
import type { McpHttpRoute } from "./mcp.js";

/** One route's handler: `id` is the path's `:id` (empty when it has none), `query` the text after `?`. */
export type Handler = (req: IncomingMessage, res: ServerResponse, id: string, query: string) => Promise<void> | void;

/** One handler per route of the list (routes.ts); a route without one, or one without a route, does not compile. */
export type RouteHandlers = { [K in RouteName]: Handler };

/** The names of the routes under one tag of the list: what one adapter answers. */
export type RoutesOf<Tag extends RouteSpec["tag"]> = Extract<(typeof ROUTE_LIST)[number], { tag: Tag }>["name"];

/** The door of the server: `closing` from the start of a drain (or a close), `shuttingDown` once `close()` began. */
export interface Door {
  closing: boolean;
  shuttingDown: boolean;
}

/** How the host writes its JSON answers; each counts client and server errors in the metrics. */
export interface AnswerWriters {
  /** Answer with `body` as JSON. */
  send(res: ServerResponse, status: number, body: unknown): void;
  /** Answer with JSON text already serialized. */
  sendJson(res: ServerResponse, status: number, text: string): void;
  /** Answer an error with its status and code (OpenEnv's routes: a validation error is FastAPI's 422). */
  sendError(res: ServerResponse, e: unknown, req?: IncomingMessage): void;
}

/**
 * What the HTTP host (`serveEnv`) gives its transport adapters: the env and its rollout service, the caller checks,
 * the server's state and its answer writers. Built once per server; an adapter takes the fields it needs as locals.
 */
export interface HostContext extends AnswerWriters {
  env: Env;
  service: DrainableRolloutService;
  options: ServeEnvOptions;
  /** Request bodies larger than this get 413. */
  maxBody: number;
  /** The tokens the server accepts (none: Origin / Host checks instead). */
  access: AccessTokens | undefined;
  originPolicy: OriginPolicy;
  /** This process' id (`x-benchmax-instance`). */
  instance: string;
  metrics: ServerMetrics;
  prom: PromMetrics;
  /** MCP on `/mcp` and `/ws` `{"type": "mcp"}`: the MCP SDK's Server over the rollout service. */
  mcp: McpHttpRoute;
  /** `GET /v1/record/feed`, when recording. */
  feed: RecordFeed | undefined;
  door: Door;
}
