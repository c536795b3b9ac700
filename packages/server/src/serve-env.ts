import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  descriptionOf,
  type Env,
  errorMessage,
  type Message,
  passThresholdOf,
  rewardWeightsOf,
  type Task,
  type ToolCallRequest,
} from "@benchmax/core";
import FindMyWay from "find-my-way";
import { accessTokens, presentedSecret } from "./auth.js";
import { CALL_ROUTE, callId } from "./call-route.js";
import { DEFAULT_DRAIN_GRACE_MS, DRAINING_HEADER, DrainableRolloutService, drainingError } from "./drain.js";
import { type ConnectionLimits, checkOrigin, clientOf, edgePolicy, guardConnections, serverOptions } from "./edge.js";
import { classify, isOpenEnvValidation } from "./error-codes.js";
import { HttpError, validationDetail } from "./http-error.js";
import { ServerMetrics } from "./metrics.js";
import { openApiDocument } from "./openapi.js";
import {
  listToolsResult,
  NO_EPISODE_STATE,
  openEnvTools,
  resetObservationJson,
  schemaOf,
  stateOf,
  stepRollout,
} from "./openenv.js";
import { PromMetrics } from "./prometheus.js";
import { RolloutRecorder, tagsOf } from "./record.js";
import { RecordFeed } from "./record-feed.js";
import { ROUTE_LIST, type RouteName, type RouteSpec } from "./routes.js";
import { isMessages, type ServedRollout, type ServiceLimits } from "./service/rollout-service.js";
import { badRequest, conflict, notFound } from "./service/service-error.js";
import { type McpHttpCaller, McpHttpRoute } from "./transports/mcp.js";
import { attachWebSocket, taskRefOf } from "./ws-session.js";

/**
 * `serveEnv`'s options. The rollout limits (`initTimeoutMs`, `toolTimeoutMs`, `rewardTimeoutMs`, `releaseTimeoutMs`,
 * `deadlineMs`) go to the rollout service, which enforces them through core's Episode timers on every transport.
 */
export interface ServeEnvOptions extends ConnectionLimits, ServiceLimits {
  /** Default 127.0.0.1. A non-loopback host with no token is refused unless `insecure`. */
  host?: string;
  /** Serve on a non-loopback host with no token (anyone who reaches the port can drive rollouts). */
  insecure?: boolean;
  /** Without a token: more Host names and Origins to accept besides loopback ones (see `checkOrigin`). */
  allowedHosts?: string[];
  allowedOrigins?: string[];
  /**
   * Live rollouts one client may hold (default: maxRollouts); beyond it 429 CLIENT_LIMIT. A client is the token it
   * presents (see `clientTokens`), or its remote address on a server without a token.
   */
  maxRolloutsPerClient?: number;
  /**
   * At capacity, a client within its fair share (maxRollouts / clients) takes the place of the least recently used
   * rollout of the client most over its share; only rollouts unused this long are taken (default 0: at once).
   */
  reclaimIdleMs?: number;
  /** JSON-RPC messages in one `POST /mcp` batch at most (default 64). */
  maxBatch?: number;
  /**
   * MCP sessions one rollout token may hold open on `/mcp` (default 4): a further `initialize` with that token ends
   * the rollout's oldest session.
   */
  maxSessionsPerRollout?: number;
  /** Default 0 (a free port). */
  port?: number;
  /** Bearer token every endpoint but /health requires (the operator's). */
  token?: string;
  /**
   * More bearer tokens, one per client (needs `token`): each is accepted wherever `token` is, with the same rights,
   * and is a client of its own for admission (fair share, `maxRolloutsPerClient`). Callers sharing a token are one
   * client, whatever their source addresses.
   */
  clientTokens?: string[];
  /** Live rollouts at most (default 1024); beyond it creation answers 503 CAPACITY_REACHED. */
  maxRollouts?: number;
  /** A rollout unused this long is released (default 10 min). */
  idleTimeoutMs?: number;
  /** Request bodies (and WebSocket messages) larger than this get 413 (default 8 MiB). */
  maxBodyBytes?: number;
  /** The dataset `/reset` and `{taskId}` draw from (default: `env.loadTasks()`). */
  tasks?: Task[];
  /** How long `close()` waits for requests in flight (default 10 s). */
  drainTimeoutMs?: number;
  /**
   * How long `drain()` serves the live rollouts at most (default 30 s): it closes once they are all released, or when
   * this much time has passed, whichever comes first.
   */
  drainGraceMs?: number;
  /** Extra metadata for `/metadata` (version, readme_content, …). */
  metadata?: Record<string, unknown>;
  /**
   * Client-built tasks (`{task}` in `/reset` or `/v1/rollouts`) may name host files only under this directory;
   * without it, a client task naming a host path is refused (403 HOST_PATH).
   */
  dataRoot?: string;
  /** `serve --record DIR`: append every finished rollout, from every transport, to DIR as a run dir. */
  record?: string;
  /** What `--record` writes to run.json about the served tasks: the dataset path and score-shaping settings. */
  recordRun?: { dataset?: string; config?: Record<string, unknown> };
}

/** OpenEnv's own routes: their validation errors are FastAPI's `422 {"detail": [...]}`. */
const OPENENV_ROUTES = new Set(["/reset", "/step", "/state"]);

function isOpenEnvRoute(url: string | undefined): boolean {
  if (!url) return false;
  const q = url.indexOf("?");
  return OPENENV_ROUTES.has(q < 0 ? url : url.slice(0, q));
}

export interface EnvServer {
  url: string;
  port: number;
  /**
   * Stop accepting, let requests in flight finish, release every rollout. Does not close the env. During a drain, it
   * cuts the drain's wait short.
   */
  close(): Promise<void>;
  /**
   * Drain (what `benchmax serve` does on SIGTERM): the door closes at once — a new rollout, on any transport, is
   * refused with 503 `DRAINING`, `/health` answers 503 `{status: "draining"}`, and every answer carries
   * `x-benchmax-draining: 1` — while the server keeps listening and serving the live rollouts (steps, tool calls,
   * rewards, forks, release) until none is left or `graceMs` (default `drainGraceMs`, 30 s) has passed; then it
   * closes as `close()` does. Resolves once closed, with the rollouts still live when the grace ran out (0 after a
   * clean drain). Idempotent: a second call gets the first one's promise.
   */
  drain(graceMs?: number): Promise<{ left: number }>;
  /** True from the start of a drain (or a close): new rollouts are refused. */
  readonly draining: boolean;
  /** Live rollouts now. */
  readonly activeRollouts: number;
  /** Counters behind /metrics. */
  readonly metrics: ServerMetrics;
  /** The `--record` writer, when recording. */
  readonly recorder?: RolloutRecorder;
}

const JSON_TYPE = "application/json";

/**
 * Does a `/metrics` request want the Prometheus text format? `?format=prometheus`, or an Accept header that names a
 * Prometheus text type and no JSON. Prometheus' scraper lists its `scrape_protocols` in Accept
 * (`application/openmetrics-text;version=1.0.0;q=0.5,…,text/plain;version=0.0.4;q=0.3,` then any type), so a plain
 * `/metrics` path (a pod annotation's `prometheus.io/path`) gets text too. Any other client (curl's any-type Accept,
 * a browser, JSON) gets JSON.
 */
export function wantsPrometheusText(query: string, accept: string | undefined): boolean {
  if (query.includes("format=prometheus")) return true;
  if (!accept || accept.includes("json")) return false;
  return accept.includes("text/plain") || accept.includes("application/openmetrics-text");
}

/** The drain state as a Prometheus gauge: 1 while draining (new rollouts refused), else 0. */
function drainingGauge(on: boolean): string {
  return (
    "# HELP benchmax_draining 1 while the server drains: new rollouts refused, live ones served until released.\n" +
    `# TYPE benchmax_draining gauge\nbenchmax_draining ${on ? 1 : 0}\n`
  );
}

/**
 * A per-process id; clients notice a restarted server by a change of it. A launcher that sets
 * BENCHMAX_INSTANCE_ID=<tag> gets `<tag>.<random>`, so it can tell the server it started from a stale one on the port.
 */
function instanceId(): string {
  const rnd = randomBytes(8).toString("hex");
  const tag = process.env.BENCHMAX_INSTANCE_ID;
  return tag && /^[A-Za-z0-9_-]{1,64}$/.test(tag) ? `${tag}.${rnd}` : rnd;
}

function readBody(req: IncomingMessage, limit: number): Promise<Record<string, unknown>> {
  return readText(req, limit).then(parseBody);
}

/** A request body's JSON object (`{}` for an empty body). */
function parseBody(text: string): Record<string, unknown> {
  if (text.length === 0) return {};
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new HttpError(
      400,
      "INVALID_JSON",
      `malformed JSON body: ${(e as Error).message}`,
      ["body"],
      text.slice(0, 200),
    );
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) {
    throw badRequest("request body must be a JSON object", "VALIDATION_ERROR", ["body"], v);
  }
  return v as Record<string, unknown>;
}

function readText(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) {
    return Promise.reject(new HttpError(413, "PAYLOAD_TOO_LARGE", `request body over ${limit} bytes`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on("data", (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > limit) {
        failed = true;
        reject(new HttpError(413, "PAYLOAD_TOO_LARGE", `request body over ${limit} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on("error", (e) => {
      if (!failed) reject(new HttpError(400, "BAD_REQUEST", `could not read body: ${e.message}`));
    });
    req.on("end", () => {
      if (failed) return;
      if (size === 0) return resolve("");
      resolve(chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8"));
    });
  });
}

/**
 * Serve an env over HTTP and WebSocket: the benchmax rollout API under `/v1`, OpenEnv's `/reset` `/step`
 * `/state` `/health` `/metadata` `/schema` and `/ws`. See the package README for the mapping.
 */
export async function serveEnv(env: Env, options: ServeEnvOptions = {}): Promise<EnvServer> {
  const metrics = new ServerMetrics();
  const prom: PromMetrics = new PromMetrics({
    toolNames: env.listTools().map((t) => t.name),
    activeRollouts: () => service.active,
  });
  metrics.prom = prom;
  const recorder: RolloutRecorder | undefined = options.record
    ? new RolloutRecorder(options.record, env, { prom, ...options.recordRun })
    : undefined;
  const service: DrainableRolloutService = new DrainableRolloutService(env, {
    ...options,
    metrics,
    ...(recorder ? { artifacts: recorder.artifacts } : {}),
    // outcome metrics and recording, once for every transport
    onFinished: (result) => {
      prom.finished(result.outcome, result.reward, result.rewards);
      recorder?.add(result);
    },
  });
  const maxBody = options.maxBodyBytes ?? 8 * 1024 * 1024;
  const originPolicy = edgePolicy(options);
  const { token, bindHost } = originPolicy;
  const access = accessTokens(token, options.clientTokens);
  const feed = options.record
    ? new RecordFeed({ file: `${options.record}/results.jsonl`, token, ...(recorder ? { live: recorder } : {}) })
    : undefined;
  const maxBatch = options.maxBatch ?? 64;
  const instance = instanceId();
  let inflight = 0;
  /** The door is closed: set by `drain()` and by `close()`. */
  let closing = false;
  /** `close()` has begun: past the drain. */
  let shuttingDown = false;
  let drained: (() => void) | undefined;

  const send = (res: ServerResponse, status: number, body: unknown) => sendJson(res, status, JSON.stringify(body));
  /** Answer with JSON text already serialized. */
  const sendJson = (res: ServerResponse, status: number, text: string) => {
    if (status >= 500) metrics.serverErrors++;
    else if (status >= 400) metrics.clientErrors++;
    // a flat [name, value, …] list: no header object to walk on the hot path
    res.writeHead(status, [
      "content-type",
      JSON_TYPE,
      "content-length",
      String(Buffer.byteLength(text)),
      "x-benchmax-instance",
      instance,
    ]);
    res.end(text);
  };

  const sendError = (res: ServerResponse, e: unknown, req?: IncomingMessage) => {
    if (req && isOpenEnvRoute(req.url) && isOpenEnvValidation(e)) {
      return send(res, 422, validationDetail(e));
    }
    const { status, code, type } = classify(e);
    metrics.prom?.error(code);
    if (status === 413) res.setHeader("connection", "close");
    if (status === 503) res.setHeader("retry-after", "1");
    send(res, status, { error: { message: errorMessage(e), code, type } });
  };

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

  const rolloutToken = (req: IncomingMessage, body?: Record<string, unknown>): string | undefined => {
    const h = req.headers["x-rollout-token"];
    if (typeof h === "string" && h) return h;
    const b = body?.rollout_token ?? body?.rolloutToken;
    return typeof b === "string" ? b : undefined;
  };

  const created = (r: ServedRollout) => ({
    rolloutId: r.id,
    token: r.token,
    taskId: r.task.id,
    systemPrompt: service.systemPrompt(r.task),
    idleTimeoutMs: service.idleTimeoutMs,
    /** The env parses actions its own way: send replies to `/step` rather than parsing tool calls client-side. */
    customActions: typeof env.capabilities?.episode?.parseActions === "function",
    /** Echoed when the client set a turn limit: `/step` then ends the episode there (SkyRL's rule). */
    ...(r.maxTurns !== undefined ? { maxTurns: r.maxTurns } : {}),
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

  // MCP on `/mcp` and `/ws` `{"type": "mcp"}`: the MCP SDK's Server over the rollout service
  const mcp = new McpHttpRoute(service, { maxBatch, maxSessionsPerRollout: options.maxSessionsPerRollout });

  /**
   * Who calls `/mcp`: the operator (a server token, or anyone the Origin/Host policy lets in without tokens), or the
   * holder of a live rollout's own token, whose MCP sessions run on that rollout and nothing else.
   */
  const mcpCaller = (req: IncomingMessage): McpHttpCaller => {
    const auth = req.headers.authorization;
    const refused = access ? access.check(auth) : checkOrigin(req, originPolicy);
    if (!refused) return { operator: true, client: clientOf(req, access) };
    const presented = access && auth ? presentedSecret(auth) : undefined;
    const r = presented ? service.byToken(presented) : undefined;
    if (r && !r.released) return { operator: false, rollout: r, client: clientOf(req) };
    throw refused;
  };

  /** `/mcp`: MCP clients' streamable-HTTP sessions, and OpenEnv's sessionless JSON-RPC (errors with status 200). */
  async function serveMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const caller = mcpCaller(req);
    const text = req.method === "POST" ? await readText(req, maxBody) : undefined;
    return mcp.handle(req, res, text, caller);
  }

  /** A rollout from a create or reset body: its task reference, the caller, its tags. */
  const createFrom = (
    req: IncomingMessage,
    body: Record<string, unknown>,
    origin: "v1" | "reset",
    extra: { maxTurns?: number; id?: string },
  ) => {
    if (closing) throw drainingError(shuttingDown);
    // no `{ ...extra, more }`: Node 20's V8 spends about 1.5 µs on each property added after a leading spread
    return service.create({
      from: taskRefOf(body),
      client: clientOf(req, access),
      tags: tagsOf(body),
      origin,
      id: extra.id,
      maxTurns: extra.maxTurns,
    });
  };

  /**
   * Answer a create, unless its client has gone: it closed the connection before the answer (say, this server hung
   * with the request queued and the client moved the rollout to another server). Such a rollout is released at once,
   * unanswered: nobody holds its token, and it would otherwise stay live until the idle expiry. The check waits two
   * turns of the event loop (setImmediate), so a FIN that came in with the request has been read. (A client that
   * half-closes its side before reading its answer is taken for gone too.)
   */
  const answerCreate = (res: ServerResponse, r: Parameters<typeof service.release>[0], answer: () => void) => {
    // two turns: libuv stops reading a socket at a short read, so a FIN behind the request is read one poll later
    setImmediate(setImmediate, () => {
      const socket = res.socket;
      if (!res.destroyed && socket && !socket.destroyed && !socket.readableEnded) {
        try {
          answer();
        } catch (e) {
          sendError(res, e);
        }
        return;
      }
      void service.release(r).catch(() => undefined);
    });
  };

  /** `POST /v1/rollouts {session, …}`: the harness moves an open MCP session onto a new rollout it picks the task of. */
  const createForSession = async (req: IncomingMessage, res: ServerResponse, body: Record<string, unknown>) => {
    const sid = body.session;
    const unknown = () => new HttpError(404, "UNKNOWN_SESSION", `unknown MCP session ${String(sid)}`);
    if (typeof sid !== "string" || !mcp.sessions.rolloutOf(sid)) throw unknown();
    const r = await createFrom(req, body, "v1", { maxTurns: body.maxTurns as number | undefined });
    if (!(await mcp.sessions.move(sid, r))) {
      await service.release(r);
      throw unknown();
    }
    send(res, 201, created(r));
  };

  type Handler = (req: IncomingMessage, res: ServerResponse, id: string, query: string) => Promise<void> | void;

  /** The rollout a `/v1/rollouts/:id/…` request names, with its capability token. */
  const own = (req: IncomingMessage, id: string, body?: Record<string, unknown>) =>
    service.get(id, rolloutToken(req, body));

  /** One handler per route of the list (routes.ts); a route without one, or one without a route, does not compile. */
  const handlers: { [K in RouteName]: Handler } = {
    health: (_req, res) =>
      send(res, closing ? 503 : 200, {
        status: closing ? "draining" : "healthy",
        activeRollouts: service.active,
        sessions: mcp.sessions.size,
        instance,
      }),
    metadata: (_req, res) => send(res, 200, metadata()),
    schema: (_req, res) => send(res, 200, schemaOf(env)),
    metrics: async (req, res, _id, query) => {
      if (wantsPrometheusText(query, req.headers.accept)) {
        const text = metrics.prometheus(service.active) + drainingGauge(closing) + (await prom.text());
        res.writeHead(200, { "content-type": "text/plain; version=0.0.4", "content-length": Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      send(res, 200, { ...metrics.snapshot(service.active), draining: closing });
    },
    tools: (_req, res) => send(res, 200, { tools: env.listTools(), openenv: openEnvTools(env) }),
    tasks: async (_req, res, _id, query) => {
      const q = new URLSearchParams(query);
      const limit = Number(q.get("limit") ?? Number.POSITIVE_INFINITY);
      // `include=systemPrompt`: each task's system prompt (without the tools section), read without a rollout
      const withPrompt = q.getAll("include").some((v) => v.split(",").includes("systemPrompt"));
      const tasks = (await service.tasks()).slice(0, limit);
      // gold data stays on the server
      send(res, 200, {
        tasks: tasks.map((t) => {
          const row: Record<string, unknown> = { id: t.id, prompt: t.prompt, messages: t.messages, meta: t.meta };
          if (withPrompt) row.systemPrompt = service.systemPrompt(t);
          return row;
        }),
      });
    },
    openapi: (_req, res) => send(res, 200, openApiDocument(env, options.metadata?.version as string | undefined)),
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
    create: async (req, res) => {
      const body = await readBody(req, maxBody);
      if (body.session !== undefined) return createForSession(req, res, body);
      const r = await createFrom(req, body, "v1", { maxTurns: body.maxTurns as number | undefined });
      answerCreate(res, r, () => send(res, 201, created(r)));
    },
    rolloutState: (req, res, id) => send(res, 200, stateOf(own(req, id))),
    delete: async (req, res, id) => {
      await service.release(own(req, id));
      send(res, 200, { released: true });
    },
    call: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      const r = own(req, id, body);
      if (typeof body.name !== "string" || !body.name) throw badRequest(`"name" (the tool name) must be a string`);
      const args = body.arguments ?? {};
      if (typeof args !== "object" || args === null || Array.isArray(args)) {
        throw badRequest(`"arguments" must be an object`);
      }
      const call: ToolCallRequest = { name: body.name, arguments: args as Record<string, unknown> };
      if (typeof body.id === "string") call.id = body.id;
      send(res, 200, await service.callTool(r, call));
    },
    reward: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      const r = own(req, id, body);
      if (body.messages !== undefined) {
        if (!isMessages(body.messages)) throw badRequest(`"messages" must be an array of {role, content} messages`);
        return send(res, 200, await service.score(r, { messages: body.messages }));
      }
      if (typeof body.completion === "string") {
        return send(res, 200, await service.score(r, { completion: body.completion }));
      }
      throw badRequest(`"messages" (the conversation) or "completion" (the final text) is required`);
    },
    fork: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      const kids = await service.fork(own(req, id, body), (body.n ?? 1) as number);
      send(res, 200, { children: kids.map(created) });
    },
    release: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      await service.release(own(req, id, body));
      send(res, 200, { released: true });
    },
    rolloutStep: async (req, res, id) => {
      const body = await readBody(req, maxBody);
      send(res, 200, await stepRollout(service, own(req, id, body), body.action));
    },
    recordFeed: (req, res) =>
      feed ? feed.handle(req, res) : Promise.reject(conflict("not recording: serve --record DIR", "NOT_RECORDING")),
    groupReward: async (req, res) => {
      const body = await readBody(req, maxBody);
      if (!env.capabilities?.groupReward) throw new HttpError(501, "NOT_SUPPORTED", `${env.name} has no group reward`);
      if (!Array.isArray(body.members)) throw badRequest(`"members" must be an array of {messages, rewards}`);
      const task = await service.resolveTask(taskRefOf(body));
      for (const [i, m] of (body.members as unknown[]).entries()) {
        const mm = m as Record<string, unknown> | null;
        if (!mm || typeof mm !== "object" || (mm.messages !== undefined && !isMessages(mm.messages))) {
          throw badRequest(`"members[${i}]" must be {messages: [...], rewards: {...}}`);
        }
        const rw = mm.rewards ?? {};
        if (typeof rw !== "object" || rw === null || Object.values(rw).some((x) => typeof x !== "number")) {
          throw badRequest(`"members[${i}].rewards" must be an object of numbers`);
        }
      }
      const members = (body.members as Array<Record<string, unknown>>).map((m, i) => ({
        rolloutId: typeof m.rolloutId === "string" ? m.rolloutId : `member-${i}`,
        messages: (Array.isArray(m.messages) ? m.messages : []) as Message[],
        rewards: (m.rewards ?? {}) as Record<string, number>,
      }));
      send(res, 200, await service.groupReward(task, members));
    },
    reset: async (req, res) => {
      const body = await readBody(req, maxBody);
      const r = await createFrom(req, body, "reset", { id: body.episode_id as string | undefined });
      answerCreate(res, r, () => sendJson(res, 200, resetObservationJson(service, r)));
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
    mcp: (req, res) => serveMcp(req, res),
    mcpStream: (req, res) => serveMcp(req, res),
    mcpClose: (req, res) => serveMcp(req, res),
  };

  /** The routes, declared once (routes.ts), in find-my-way; another method on a known path is 405. */
  const router = FindMyWay<FindMyWay.HTTPVersion.V1>({ ignoreTrailingSlash: false, caseSensitive: true });
  type Found = { handler: Handler; open: boolean };
  const methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"] as const;
  const notAllowed: Handler = (req) => {
    throw new HttpError(405, "METHOD_NOT_ALLOWED", `${req.method} ${req.url?.split("?")[0]} is not allowed`);
  };
  const declared = new Map<string, Set<string>>();
  /** POST /v1/rollouts/:id/call's store, matched ahead of the router (`callId`): the tool-call hot path. */
  let callStore: Found | undefined;
  /**
   * Routes without a parameter, by method then path, matched ahead of the router: an exact path is what the router
   * would find for it (`/reset` and `/step` run every OpenEnv episode); any other path goes to the router.
   */
  const exact = new Map<string, Map<string, Found>>();
  for (const r of ROUTE_LIST as readonly RouteSpec[]) {
    // a self-authenticating route (`/mcp`) checks its caller in its handler
    const store: Found = { handler: handlers[r.name as RouteName], open: r.public === true || r.selfAuth === true };
    if (r.method === "POST" && r.path === CALL_ROUTE) callStore = store;
    if (!r.path.includes(":") && !r.path.includes("*")) {
      let byPath = exact.get(r.method);
      if (!byPath) exact.set(r.method, (byPath = new Map()));
      byPath.set(r.path, store);
    }
    router.on(r.method, r.path, () => {}, store);
    let set = declared.get(r.path);
    if (!set) declared.set(r.path, (set = new Set()));
    set.add(r.method);
  }
  for (const [path, set] of declared) {
    for (const m of methods) if (!set.has(m)) router.on(m, path, () => {}, { handler: notAllowed, open: false });
  }

  function route(req: IncomingMessage, res: ServerResponse): Promise<void> | void {
    const url = req.url ?? "/";
    const q = url.indexOf("?");
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? "" : url.slice(q + 1);
    // the direct matches: what the router would find for these paths, without its walk and params object
    const id = callStore && req.method === "POST" ? callId(path) : undefined;
    const direct = id !== undefined ? callStore : exact.get(req.method ?? "GET")?.get(path);
    if (direct) {
      if (!direct.open) {
        const authError = access ? access.check(req.headers.authorization) : checkOrigin(req, originPolicy);
        if (authError) throw authError;
      }
      return direct.handler(req, res, id ?? "", query);
    }
    const found = router.find((req.method ?? "GET") as FindMyWay.HTTPMethod, path);
    const store = found?.store as Found | undefined;
    if (!store?.open) {
      const authError = access ? access.check(req.headers.authorization) : checkOrigin(req, originPolicy);
      if (authError) throw authError;
    }
    if (!found || !store) throw notFound(`no route ${req.method} ${path}`);
    return store.handler(req, res, (found.params as { id?: string }).id ?? "", query);
  }

  const settled = () => {
    if (--inflight === 0 && drained) drained();
  };
  const server: Server = createServer(serverOptions(options), (req, res) => {
    metrics.requests++;
    inflight++;
    if (closing) res.setHeader(DRAINING_HEADER, "1");
    // one `then` per request (this is the hot path): settle, or answer the error and settle
    let p: Promise<void> | void;
    try {
      p = route(req, res);
    } catch (e) {
      p = Promise.reject(e);
    }
    Promise.resolve(p).then(settled, (e: unknown) => {
      try {
        if (!res.headersSent) sendError(res, e, req);
        else res.destroy();
        // drop the rest of an oversized body
        if (e instanceof HttpError && e.status === 413) req.resume();
      } finally {
        settled();
      }
    });
  });
  server.keepAliveTimeout = 65_000;
  const guard = guardConnections(server, options);
  const ws = attachWebSocket(server, service, {
    access,
    originPolicy,
    maxPayload: maxBody,
    isClosing: () => closing,
    isShuttingDown: () => shuttingDown,
    mcp: mcp.rpc,
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, bindHost, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  let closed: Promise<void> | undefined;
  let draining: Promise<{ left: number }> | undefined;

  const handle: EnvServer = {
    url: `http://${host}:${addr.port}`,
    port: addr.port,
    metrics,
    ...(recorder ? { recorder } : {}),
    close() {
      closed ??= (async () => {
        closing = true;
        shuttingDown = true;
        service.cut();
        // the rollouts already recorded reach the feed's readers (a drain's last release is in the writer's batch)
        await recorder?.flush();
        feed?.close();
        const stopped = new Promise<void>((r) => server.close(() => r()));
        server.closeIdleConnections();
        if (inflight > 0) {
          await Promise.race([
            new Promise<void>((r) => {
              drained = r;
            }),
            new Promise<void>((r) => setTimeout(r, options.drainTimeoutMs ?? 10_000).unref()),
          ]);
        }
        await ws.close();
        await mcp.close();
        guard.stop();
        server.closeAllConnections();
        await stopped;
        await service.close();
        await recorder?.close();
      })();
      return closed;
    },
    drain(graceMs = options.drainGraceMs ?? DEFAULT_DRAIN_GRACE_MS) {
      draining ??= (async () => {
        // the door: new rollouts are refused from here on, on every transport; the server keeps listening
        closing = true;
        const left = closed ? service.active : await service.drain(graceMs);
        await handle.close();
        return { left };
      })();
      return draining;
    },
    get draining() {
      return closing;
    },
    get activeRollouts() {
      return service.active;
    },
  };
  return handle;
}
