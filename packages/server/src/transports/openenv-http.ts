import type { IncomingMessage } from "node:http";
import { descriptionOf, passThresholdOf, rewardWeightsOf } from "@benchmax/core";
import { readBody } from "../http-body.js";
import { listToolsResult, NO_EPISODE_STATE, resetObservationJson, stateOf, stepRollout } from "../openenv.js";
import { schemaOf } from "../openenv-schema.js";
import type { ServedRollout } from "../service/rollout-service.js";
import { badRequest, conflict } from "../service/service-error.js";
import type { HostContext, RouteHandlers } from "./host-context.js";
import { answerCreate, createFrom, rolloutToken } from "./http-rollouts.js";

/** OpenEnv's HTTP routes (the WebSocket `/ws` is ws-session.ts, `/mcp` the MCP adapter). */
export type OpenEnvHttpRoute = "metadata" | "schema" | "state" | "reset" | "step";

/** OpenEnv's own routes: their validation errors are FastAPI's `422 {"detail": [...]}`. */
const OPENENV_ROUTES = new Set(["/reset", "/step", "/state"]);

export function isOpenEnvRoute(url: string | undefined): boolean {
  if (!url) return false;
  const q = url.indexOf("?");
  return OPENENV_ROUTES.has(q < 0 ? url : url.slice(0, q));
}

/**
 * OpenEnv's HTTP server, mapped onto the rollout service: `/reset` starts an episode (a rollout), `/step` acts in
 * it, `/state` reads it (a finished one's final state too); `/metadata` and `/schema` describe the env.
 */
export function openEnvHttpHandlers(ctx: HostContext): Pick<RouteHandlers, OpenEnvHttpRoute> {
  const { env, service, options, instance, maxBody, send, sendJson } = ctx;

  const metadata = () => ({
    name: env.name,
    description: descriptionOf(env),
    version: options.metadata?.version,
    ...options.metadata,
    tools: env.listTools(),
    rewardWeights: rewardWeightsOf(env),
    passThreshold: passThresholdOf(env),
    systemPrompt: typeof env.systemPrompt === "string" ? env.systemPrompt : null,
    hasFork: !!env.capabilities?.fork,
    hasGroupReward: !!env.capabilities?.groupReward,
    hasParseActions: typeof env.capabilities?.episode?.parseActions === "function",
    instance,
  });

  /**
   * The OpenEnv episode a `/step` or `/state` names (`episode_id` in the body or query, or `X-Episode-Id`), with its
   * rollout token. A request naming none falls back to the one live episode only when exactly one rollout is live and
   * it was started by `/reset`; with several live, it is refused (409) rather than acting on someone else's episode.
   * `undefined` when no rollout is live at all.
   */
  const episodeOf = (
    req: IncomingMessage,
    query: string,
    body?: Record<string, unknown>,
  ): ServedRollout | undefined => {
    let id: unknown = body?.episode_id ?? (req.headers["x-episode-id"] as string | undefined);
    if (id === undefined && query) id = new URLSearchParams(query).get("episode_id") ?? undefined;
    if (id !== undefined && id !== null) {
      if (typeof id !== "string")
        throw badRequest(`"episode_id" must be a string`, "VALIDATION_ERROR", ["body", "episode_id"], id);
      return service.get(id, rolloutToken(req, body));
    }
    if (service.active === 0) return undefined;
    const only = service.active === 1 ? service.rollouts().next().value : undefined;
    if (only?.origin === "reset") return only;
    throw conflict(
      service.active === 1
        ? "the live episode was not started by POST /reset: name it with episode_id and its rollout_token"
        : `${service.active} episodes are live on this server: name yours with "episode_id" and its "rollout_token" (from the /reset observation), or use one WebSocket session per episode`,
      "EPISODE_REQUIRED",
    );
  };

  return {
    metadata: (_req, res) => send(res, 200, metadata()),
    schema: (_req, res) => send(res, 200, schemaOf(env)),
    state: (req, res, _id, query) => {
      // a finished episode's final state stays readable (OpenEnv's session keeps its state after done)
      const named = (req.headers["x-episode-id"] as string | undefined) ?? new URLSearchParams(query).get("episode_id");
      if (named) {
        const final = service.finalState(named, rolloutToken(req));
        if (final) return send(res, 200, stateOf(final));
      }
      const r = episodeOf(req, query) ?? service.finalState(undefined, undefined, "reset");
      send(res, 200, r ? stateOf(r) : NO_EPISODE_STATE);
    },
    reset: async (req, res) => {
      const body = await readBody(req, maxBody);
      const r = await createFrom(ctx, req, body, "reset", { id: body.episode_id as string | undefined });
      answerCreate(ctx, res, r, () => sendJson(res, 200, resetObservationJson(service, r)));
    },
    step: async (req, res, _id, query) => {
      const body = await readBody(req, maxBody);
      if (body.action === undefined) throw badRequest("Field required", "MISSING", ["body", "action"], body);
      const a = body.action as { type?: unknown } | null;
      const r = episodeOf(req, query, body);
      if (!r) {
        // OpenEnv allows a tool list before any reset
        if (a && typeof a === "object" && a.type === "list_tools") return send(res, 200, listToolsResult(env));
        throw conflict("no live episode: POST /reset first", "SESSION_ERROR");
      }
      send(res, 200, await stepRollout(service, r, body.action));
    },
  };
}
