import { openApiDocument } from "./openapi.js";
import type { HostContext, RouteHandlers } from "./transports/host-context.js";

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

/** What the host answers about itself: `/health` (and the drain), `/metrics`, `/openapi.json`. */
export function hostRouteHandlers(ctx: HostContext): Pick<RouteHandlers, "health" | "metrics" | "openapi"> {
  const { env, service, options, metrics, prom, mcp, door, instance, send } = ctx;
  return {
    health: (_req, res) =>
      send(res, door.closing ? 503 : 200, {
        status: door.closing ? "draining" : "healthy",
        activeRollouts: service.active,
        sessions: mcp.sessions.size,
        instance,
      }),
    metrics: async (req, res, _id, query) => {
      if (wantsPrometheusText(query, req.headers.accept)) {
        const text = metrics.prometheus(service.active) + drainingGauge(door.closing) + (await prom.text());
        res.writeHead(200, { "content-type": "text/plain; version=0.0.4", "content-length": Buffer.byteLength(text) });
        res.end(text);
        return;
      }
      send(res, 200, { ...metrics.snapshot(service.active), draining: door.closing });
    },
    openapi: (_req, res) => send(res, 200, openApiDocument(env, options.metadata?.version as string | undefined)),
  };
}
