import { randomBytes, timingSafeEqual } from "node:crypto";
import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { join } from "node:path";
import { StringDecoder } from "node:string_decoder";
import { type RolloutResult, UsageError } from "@benchmax/core";
import { chartJsSource } from "./chart-library.js";
import { type FeedSource, feedUrl, followFeed } from "./feed-source.js";
import { listenLoopback } from "./listen-loopback.js";
import { LiveSeries } from "./live-series.js";
import { renderWatchPage } from "./watch-page.js";

export interface WatchOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default a random token; every request needs it (`?token=` or `Authorization: Bearer`). */
  token?: string;
  /** How often the file is polled for new rollouts and a changed snapshot pushed (default 500 ms). */
  pollMs?: number;
  /** Pass threshold for the pass-rate curve (default 1). */
  passThreshold?: number;
  /** Watching a recording server's URL: its token (else the URL's password, `http://benchmax:TOKEN@host`). */
  serverToken?: string;
}

export interface WatchServer {
  /** The dashboard's address, token included. */
  url: string;
  token: string;
  series: LiveSeries;
  close(): Promise<void>;
}

/**
 * Follows a run dir's results.jsonl as it grows (an `eval` in progress, or a `serve --record` directory), a MiB at a
 * time from the last offset, feeding each complete line to `series`. A torn last line waits for its end.
 */
class Tail {
  private offset = 0;
  private carry = "";
  private readonly decoder = new StringDecoder("utf8");
  private readonly buf = Buffer.allocUnsafe(1 << 20);
  constructor(
    private readonly path: string,
    private readonly onLine: (r: RolloutResult) => void,
  ) {}

  /** Whether the last poll stopped at its byte budget with more of the file left. */
  behind = false;

  /** Read what was appended since the last poll, at most `maxBytes` of it (the rest on the next poll). */
  poll(maxBytes = Number.POSITIVE_INFINITY): number {
    this.behind = false;
    if (!existsSync(this.path)) return 0;
    const size = statSync(this.path).size;
    if (size < this.offset) {
      // truncated or replaced: start again
      this.offset = 0;
      this.carry = "";
    }
    if (size === this.offset) return 0;
    const fd = openSync(this.path, "r");
    let lines = 0;
    let read = 0;
    try {
      for (;;) {
        if (read >= maxBytes) {
          this.behind = this.offset < size;
          break;
        }
        const n = readSync(fd, this.buf, 0, this.buf.length, this.offset);
        if (n === 0) break;
        read += n;
        this.offset += n;
        const text = this.carry + this.decoder.write(this.buf.subarray(0, n));
        let start = 0;
        for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
          const line = text.slice(start, nl).trim();
          start = nl + 1;
          if (!line) continue;
          try {
            const r = JSON.parse(line) as RolloutResult;
            if (r && typeof r.taskId === "string" && typeof r.outcome === "string") {
              this.onLine(r);
              lines++;
            }
          } catch {
            /* a malformed line is skipped; the run dir's own readers report it */
          }
        }
        this.carry = text.slice(start);
      }
    } finally {
      closeSync(fd);
    }
    return lines;
  }
}

/** Whether `source` names a recording server (`http(s)://…`) rather than a run dir. */
export function isServerUrl(source: string): boolean {
  return /^https?:\/\//i.test(source);
}

/**
 * `benchmax watch DIR | URL`: a live dashboard on loopback (127.0.0.1 only), behind a token, of a run dir (followed
 * as it grows, polled every `pollMs`) or of a recording server (`serve --record`, followed through its rollout feed
 * over SSE, resumed after a drop). The page carries the first snapshot inline; `/events` (SSE) pushes a new one
 * whenever rollouts arrive.
 */
export async function startWatch(source: string, options: WatchOptions = {}): Promise<WatchServer> {
  const remote = isServerUrl(source);
  const dir = source;
  if (!remote && (!existsSync(dir) || !statSync(dir).isDirectory())) {
    throw new UsageError(`${dir}: no such run directory (or give a recording server's http:// URL)`);
  }
  const token = options.token ?? randomBytes(16).toString("hex");
  const tokenBytes = Buffer.from(token);
  const series = new LiveSeries(options.passThreshold ?? 1);
  const clients = new Set<ServerResponse>();
  let sentVersion = series.version;
  let closed = false;
  const push = () => {
    if (series.version === sentVersion || clients.size === 0) return;
    sentVersion = series.version;
    const msg = `data: ${JSON.stringify(series.snapshot())}\n\n`;
    for (const c of clients) c.write(msg);
  };
  // a large file is read a slice per turn of the event loop, so the page is served (with what is read so far) while
  // the rest comes in; each slice's rollouts reach open pages at the next push
  const SLICE = 1 << 20;
  let lastPush = 0;
  let catching = false;
  const catchUp = () => {
    if (closed || !tail) return;
    tail.poll(SLICE);
    if (performance.now() - lastPush > 1000) {
      lastPush = performance.now();
      push();
    }
    if (tail.behind) setImmediate(catchUp);
    else {
      catching = false;
      push();
    }
  };
  const kick = () => {
    if (catching) return;
    catching = true;
    catchUp();
  };
  let tail: Tail | undefined;
  let feed: FeedSource | undefined;
  let timer: NodeJS.Timeout | undefined;
  if (remote) {
    // rollouts arrive as the feed sends them; open pages get one snapshot per `pollMs` at most
    let scheduled = false;
    feed = await followFeed(
      source,
      (r) => {
        series.add(r);
        if (scheduled) return;
        scheduled = true;
        setTimeout(() => {
          scheduled = false;
          push();
        }, options.pollMs ?? 250).unref();
      },
      { ...(options.serverToken ? { token: options.serverToken } : {}) },
    );
  } else {
    tail = new Tail(join(dir, "results.jsonl"), (r) => series.add(r));
    kick();
    timer = setInterval(kick, options.pollMs ?? 500);
    timer.unref();
  }
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
      sentVersion = Math.min(sentVersion, series.version);
      const html = renderWatchPage(`benchmax watch — ${remote ? feedUrl(source).host : dir}`, series.snapshot(), token);
      res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store" }).end(html);
      return;
    }
    if (url.pathname === "/events") {
      res.writeHead(200, {
        "content-type": "text/event-stream",
        "cache-control": "no-store",
        connection: "keep-alive",
      });
      res.write(`data: ${JSON.stringify(series.snapshot())}\n\n`);
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
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(series.snapshot()));
      return;
    }
    res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
  });
  const port = await listenLoopback(server, options.port);
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    token,
    series,
    async close() {
      closed = true;
      clearInterval(timer);
      feed?.close();
      clearInterval(heartbeat);
      for (const c of clients) c.end();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
