import type { Env } from "@benchmax/core";
import { schemaOf } from "./openenv.js";
import type { ROUTES, RoutePath } from "./routes.js";

type Op = Record<string, unknown>;

const json = (schema: Record<string, unknown>, description = "OK") => ({
  description,
  content: { "application/json": { schema } },
});
const obj = { type: "object" };
const errorBody = {
  type: "object",
  properties: {
    error: {
      type: "object",
      properties: { message: { type: "string" }, code: { type: "string" }, type: { type: "string" } },
    },
  },
};
const validation = {
  type: "object",
  properties: {
    detail: {
      type: "array",
      items: {
        type: "object",
        properties: {
          type: { type: "string" },
          loc: { type: "array", items: { anyOf: [{ type: "string" }, { type: "integer" }] } },
          msg: { type: "string" },
          input: {},
        },
        required: ["type", "loc", "msg"],
      },
    },
  },
};
const stepResult = {
  type: "object",
  properties: { observation: obj, reward: { type: ["number", "null"] }, done: { type: "boolean" } },
  required: ["observation", "done"],
};
const rolloutId = [
  { name: "id", in: "path", required: true, schema: { type: "string" } },
  { name: "X-Rollout-Token", in: "header", required: true, schema: { type: "string" } },
];
const body = (schema: Record<string, unknown>, required = true) => ({
  required,
  content: { "application/json": { schema } },
});

/**
 * The OpenAPI 3.1 document of every route `serveEnv` answers (`GET /openapi.json`). `openenv validate --url` reads
 * `info.version` and the path set from it: with `/reset`, `/step` and `/state` listed the server is in OpenEnv's
 * simulation mode (src/openenv/cli/_validation.py).
 */
export function openApiDocument(env: Env, version = "1.0.0"): Record<string, unknown> {
  const s = schemaOf(env) as { action: Record<string, unknown>; state: Record<string, unknown> };
  const auth = [{ bearer: [] }, { basic: [] }];
  const openenv = (summary: string, op: Op): Op => ({ tags: ["OpenEnv"], summary, security: auth, ...op });
  const v1 = (summary: string, op: Op): Op => ({ tags: ["Rollout API"], summary, security: auth, ...op });
  // typed by the route table: a route missing here, or one not in the table, does not compile
  const paths: { [P in RoutePath]: { [M in (typeof ROUTES)[P][number]]: Op } } = {
    "/health": {
      get: {
        tags: ["Health"],
        summary: "Health check (no token needed)",
        responses: {
          "200": json({ type: "object", properties: { status: { const: "healthy" } } }),
          "503": json({ type: "object", properties: { status: { const: "draining" } } }, "Draining"),
        },
      },
    },
    "/metadata": {
      get: openenv("Environment metadata", {
        responses: {
          "200": json({
            type: "object",
            properties: { name: { type: "string" }, description: { type: "string" }, tools: { type: "array" } },
            required: ["name", "description"],
          }),
        },
      }),
    },
    "/schema": {
      get: openenv("JSON Schemas of the action, observation and state", {
        responses: {
          "200": json({
            type: "object",
            properties: { action: obj, observation: obj, state: obj },
            required: ["action", "observation", "state"],
          }),
        },
      }),
    },
    "/reset": {
      post: openenv("Start an episode", {
        requestBody: body(
          {
            type: "object",
            properties: {
              seed: { type: ["integer", "null"], minimum: 0, description: "picks the dataset task deterministically" },
              episode_id: { type: ["string", "null"], maxLength: 255, description: "the episode (rollout) id to use" },
              task_id: { type: "string" },
            },
          },
          false,
        ),
        responses: { "200": json(stepResult), "422": json(validation, "Validation error") },
      }),
    },
    "/step": {
      post: openenv("Act in an episode", {
        requestBody: body({
          type: "object",
          properties: {
            action: s.action,
            episode_id: { type: "string" },
            rollout_token: { type: "string" },
            timeout_s: { type: ["number", "null"] },
            request_id: { type: ["string", "null"] },
          },
          required: ["action"],
        }),
        responses: {
          "200": json(stepResult),
          "409": json(errorBody, "Several episodes are live and the step names none"),
          "422": json(validation, "Validation error"),
        },
      }),
    },
    "/state": {
      get: openenv("State of an episode", {
        parameters: [
          { name: "episode_id", in: "query", required: false, schema: { type: "string" } },
          { name: "X-Rollout-Token", in: "header", required: false, schema: { type: "string" } },
        ],
        responses: { "200": json(s.state), "409": json(errorBody, "Several episodes are live") },
      }),
    },
    "/mcp": {
      post: openenv("MCP JSON-RPC 2.0: initialize, tools/list, tools/call, openenv/session/create|close", {
        requestBody: body({
          type: "object",
          properties: {
            jsonrpc: { const: "2.0" },
            method: { type: "string" },
            params: obj,
            id: { type: ["string", "integer", "null"] },
          },
        }),
        responses: {
          "200": json({ type: "object", properties: { jsonrpc: { const: "2.0" }, result: {}, error: obj, id: {} } }),
          "202": { description: "A notification was accepted" },
        },
      }),
    },
    "/openapi.json": {
      get: { tags: ["Schema"], summary: "This document", security: auth, responses: { "200": json(obj) } },
    },
    "/metrics": {
      get: {
        tags: ["Health"],
        summary: "Counters and latency histograms (JSON, or ?format=prometheus)",
        security: auth,
        responses: { "200": json(obj) },
      },
    },
    "/v1/tools": { get: v1("The env's tools", { responses: { "200": json(obj) } }) },
    "/v1/tasks": {
      get: v1("Dataset tasks without gold data", {
        parameters: [{ name: "limit", in: "query", required: false, schema: { type: "integer", minimum: 0 } }],
        responses: { "200": json(obj) },
      }),
    },
    "/v1/rollouts": {
      post: v1("Create a rollout ({taskId} | {task} | {seed} | {})", {
        requestBody: body(obj, false),
        responses: { "201": json(obj), "400": json(errorBody), "403": json(errorBody), "503": json(errorBody) },
      }),
    },
    "/v1/rollouts/{id}": {
      get: v1("Rollout state", { parameters: rolloutId, responses: { "200": json(s.state) } }),
      delete: v1("Release the rollout", { parameters: rolloutId, responses: { "200": json(obj) } }),
    },
    "/v1/rollouts/{id}/call": {
      post: v1("Run one tool call", { parameters: rolloutId, requestBody: body(obj), responses: { "200": json(obj) } }),
    },
    "/v1/rollouts/{id}/reward": {
      post: v1("Score the rollout (once)", {
        parameters: rolloutId,
        requestBody: body(obj),
        responses: { "200": json(obj), "409": json(errorBody, "Already scored") },
      }),
    },
    "/v1/rollouts/{id}/fork": {
      post: v1("Fork into n children", {
        parameters: rolloutId,
        requestBody: body(obj),
        responses: { "200": json(obj) },
      }),
    },
    "/v1/rollouts/{id}/release": {
      post: v1("Release the rollout", { parameters: rolloutId, responses: { "200": json(obj) } }),
    },
    "/v1/rollouts/{id}/step": {
      post: v1("An OpenEnv action on this rollout", {
        parameters: rolloutId,
        requestBody: body(obj),
        responses: { "200": json(stepResult) },
      }),
    },
    "/v1/group-reward": {
      post: v1("Group-relative rewards", { requestBody: body(obj), responses: { "200": json(obj) } }),
    },
  };
  return {
    openapi: "3.1.0",
    info: {
      title: `benchmax env server: ${env.name}`,
      version,
      description: env.description ?? "",
    },
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer" },
        basic: { type: "http", scheme: "basic", description: "any user name, the token as the password" },
      },
    },
    "x-websocket": {
      "/ws": "OpenEnv session: {type: reset|step|state|close|mcp, data}",
    },
  };
}
