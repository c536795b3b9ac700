import { descriptionOf, type Env } from "@benchmax/core";
import { z } from "zod";
import { schemaOf } from "./openenv-schema.js";
import type { RouteSpec } from "./route-spec.js";
import { ROUTE_LIST } from "./routes.js";

type Json = Record<string, unknown>;

/** A route path in OpenAPI form (`/v1/rollouts/{id}`). */
export const openApiPath = (path: string): string => path.replace(/:([A-Za-z_]+)/g, "{$1}");

/** Every route path (OpenAPI form) and its methods, from the list. */
export const ROUTES: Readonly<Record<string, readonly ("get" | "post" | "delete")[]>> = (() => {
  const out: Record<string, ("get" | "post" | "delete")[]> = {};
  for (const r of ROUTE_LIST) (out[openApiPath(r.path)] ??= []).push(r.method.toLowerCase() as "get");
  return out;
})();

/** A wire schema as JSON Schema (2020-12, what OpenAPI 3.1 uses); request bodies in their input form. */
function jsonSchema(schema: z.ZodType, io: "input" | "output"): Json {
  const out = z.toJSONSchema(schema, { io, unrepresentable: "any" }) as Json;
  delete out.$schema;
  return out;
}

const cache = new WeakMap<z.ZodType, Json>();
const responseSchema = (s: z.ZodType): Json => {
  let j = cache.get(s);
  if (!j) cache.set(s, (j = jsonSchema(s, "output")));
  return j;
};

function operation(r: RouteSpec, action: Json): Json {
  const auth = [{ bearer: [] }, { basic: [] }];
  const op: Json = { tags: [r.tag], summary: r.summary, operationId: r.name };
  if (!r.public) op.security = auth;
  const parameters: Json[] = [];
  for (const m of r.path.matchAll(/:([A-Za-z_]+)/g)) {
    parameters.push({ name: m[1], in: "path", required: true, schema: { type: "string" } });
  }
  if (r.rollout) parameters.push({ name: "X-Rollout-Token", in: "header", required: true, schema: { type: "string" } });
  for (const [name, s] of Object.entries(r.query ?? {})) {
    parameters.push({ name, in: "query", required: false, schema: jsonSchema(s, "input") });
  }
  if (parameters.length) op.parameters = parameters;
  if (r.body) {
    let schema = jsonSchema(r.body, "input");
    // the action's schema names the env's own tools
    if (r.name === "step" || r.name === "rolloutStep") {
      schema = { ...schema, properties: { ...(schema.properties as Json), action } };
    }
    op.requestBody = { required: r.optionalBody !== true, content: { "application/json": { schema } } };
  }
  const responses: Json = {};
  for (const [status, s] of Object.entries(r.responses)) {
    responses[status] =
      typeof s === "string"
        ? { description: s }
        : {
            description: status.startsWith("2") ? "OK" : "Error",
            content: { "application/json": { schema: responseSchema(s) } },
          };
  }
  op.responses = responses;
  return op;
}

/**
 * The OpenAPI 3.1 document of every route `serveEnv` answers (`GET /openapi.json`), generated from the route list
 * (routes.ts) and its zod wire schemas. `openenv validate --url` reads `info.version` and the path set from it: with
 * `/reset`, `/step` and `/state` listed the server is in OpenEnv's simulation mode (src/openenv/cli/_validation.py).
 */
export function openApiDocument(env: Env, version = "1.0.0"): Json {
  const action = (schemaOf(env) as { action: Json }).action;
  const paths: Record<string, Json> = {};
  for (const r of ROUTE_LIST as readonly RouteSpec[]) {
    (paths[openApiPath(r.path)] ??= {})[r.method.toLowerCase()] = operation(r, action);
  }
  return {
    openapi: "3.1.0",
    info: { title: `benchmax env server: ${env.name}`, version, description: descriptionOf(env) },
    paths,
    components: {
      securitySchemes: {
        bearer: { type: "http", scheme: "bearer" },
        basic: { type: "http", scheme: "basic", description: "any user name, the token as the password" },
      },
    },
    "x-websocket": { "/ws": "OpenEnv session: {type: reset|step|state|close|mcp, data}" },
  };
}
