import { timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { chartJsSource } from "./chart-library.js";

/** A live dashboard's HTTP side: the page, its event stream, the chart library and the snapshot, behind a token. */
export interface DashboardServer {
  server: Server;
  /** The pages following `/events` now: write `data: …\n\n` to each to push a change. */
  clients: Set<ServerResponse>;
  /** Stop the heartbeat and end every event stream (the server itself is closed by the caller). */
  stop(): void;
}

/**
 * The HTTP server `benchmax watch` serves (one source or a fleet): every request needs the token (`?token=` or
 * `Authorization: Bearer`, compared in constant time); `/` is the page (`page()`), `/events` a server-sent event
 * stream that starts with the snapshot unless the page says it inlined that one (`since=<snapshotName()>`),
 * `/chart.js` the chart library, `/snapshot` the snapshot as JSON. A comment every 15 s keeps idle streams open.
 */
export function dashboardServer(o: {
  token: string;
  page(): string;
  snapshot(): unknown;
  snapshotName(): string;
}): DashboardServer {
  const tokenBytes = Buffer.from(o.token);
  const clients = new Set<ServerResponse>();
  const heartbeat = setInterval(() => {
    for (const c of clients) c.write(": ping\n\n");
  }, 15_000);
  heartbeat.unref();

  const authorized = (req: IncomingMessage, url: URL): boolean => {
    const h = req.headers.authorization;
    const given = url.searchParams.get("token") ?? (h?.startsWith("Bearer ") ? h.slice(7) : undefined);
    if (!given) return false;
    const b = Buffer.from(given);
    return b.length === tokenBytes.length && timingSafeEqual(b, tokenBytes);
  };

  let chartJs: Buffer | undefined;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (!authorized(req, url)) {
      res.writeHead(401, { "content-type": "text/plain" }).end("token required (?token=…)\n");
      return;
    }
    if (url.pathname === "/") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(o.page());
      return;
    }
    if (url.pathname === "/events") {
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-store",
        connection: "keep-alive",
      });
      // a page that inlined the current snapshot is not sent it again
      if (url.searchParams.get("since") !== o.snapshotName()) res.write(`data: ${JSON.stringify(o.snapshot())}\n\n`);
      clients.add(res);
      req.on("close", () => clients.delete(res));
      return;
    }
    if (url.pathname === "/chart.js") {
      chartJs ??= Buffer.from(chartJsSource());
      res
        .writeHead(200, {
          "content-type": "text/javascript; charset=utf-8",
          "content-length": chartJs.length,
          "cache-control": "private, max-age=86400",
        })
        .end(chartJs);
      return;
    }
    if (url.pathname === "/snapshot") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(o.snapshot()));
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
  return {
    server,
    clients,
    stop() {
      clearInterval(heartbeat);
      for (const c of clients) c.end();
    },
  };
}
