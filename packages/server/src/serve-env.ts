import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Env } from "@benchmax/core";
import { accessTokens } from "./auth.js";
import { DEFAULT_DRAIN_GRACE_MS, DRAINING_HEADER, DrainableRolloutService } from "./drain.js";
import { edgePolicy, guardConnections, serverOptions } from "./edge.js";
import { hostRouteHandlers } from "./host-routes.js";
import { answerWriters } from "./http-answers.js";
import { HttpError } from "./http-error.js";
import { ServerMetrics } from "./metrics.js";
import { PromMetrics } from "./prometheus.js";
import { RolloutRecorder } from "./record.js";
import { RecordFeed } from "./record-feed.js";
import { routeTable } from "./route-table.js";
import type { ServeEnvOptions } from "./serve-env-options.js";
import type { Door, HostContext } from "./transports/host-context.js";
import { McpHttpRoute } from "./transports/mcp.js";
import { mcpHttpHandlers } from "./transports/mcp-http-handlers.js";
import { openEnvHttpHandlers } from "./transports/openenv-http.js";
import { rolloutApiHandlers } from "./transports/rollout-api.js";
import { attachWebSocket } from "./ws-session.js";

export type { ServeEnvOptions } from "./serve-env-options.js";

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

/**
 * A per-process id; clients notice a restarted server by a change of it. A launcher that sets
 * BENCHMAX_INSTANCE_ID=<tag> gets `<tag>.<random>`, so it can tell the server it started from a stale one on the port.
 */
function instanceId(): string {
  const rnd = randomBytes(8).toString("hex");
  const tag = process.env.BENCHMAX_INSTANCE_ID;
  return tag && /^[A-Za-z0-9_-]{1,64}$/.test(tag) ? `${tag}.${rnd}` : rnd;
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
  /** `closing`: the door is closed, set by `drain()` and by `close()`; `shuttingDown`: `close()` has begun. */
  const door: Door = { closing: false, shuttingDown: false };
  let drained: (() => void) | undefined;

  // MCP on `/mcp` and `/ws` `{"type": "mcp"}`: the MCP SDK's Server over the rollout service
  const mcp = new McpHttpRoute(service, { maxBatch, maxSessionsPerRollout: options.maxSessionsPerRollout });
  const { send, sendJson, sendError } = answerWriters(metrics, instance);
  const ctx: HostContext = {
    env,
    service,
    options,
    maxBody,
    access,
    originPolicy,
    instance,
    metrics,
    prom,
    mcp,
    feed,
    door,
    send,
    sendJson,
    sendError,
  };
  // each transport maps its wire onto the service; one handler per route (a missing one does not compile)
  const route = routeTable(
    { ...rolloutApiHandlers(ctx), ...openEnvHttpHandlers(ctx), ...mcpHttpHandlers(ctx), ...hostRouteHandlers(ctx) },
    access,
    originPolicy,
  );

  const settled = () => {
    if (--inflight === 0 && drained) drained();
  };
  const server: Server = createServer(serverOptions(options), (req, res) => {
    metrics.requests++;
    inflight++;
    if (door.closing) res.setHeader(DRAINING_HEADER, "1");
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
    isClosing: () => door.closing,
    isShuttingDown: () => door.shuttingDown,
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
        door.closing = true;
        door.shuttingDown = true;
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
        door.closing = true;
        const left = closed ? service.active : await service.drain(graceMs);
        await handle.close();
        return { left };
      })();
      return draining;
    },
    get draining() {
      return door.closing;
    },
    get activeRollouts() {
      return service.active;
    },
  };
  return handle;
}
