import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { basename, dirname } from "node:path";
import { loadCheckpoint, type SeriesState } from "@benchmax/core";
import { safeEqual } from "./auth.js";
import { feedEvents } from "./pending-lines.js";
import type { RecordedBatch } from "./record.js";

/** The path a recording server answers the feed on (GET only). */
export const RECORD_FEED_PATH = "/v1/record/feed";

export interface RecordFeedOptions {
  /** The recording's results.jsonl (`serve --record DIR` → DIR/results.jsonl). */
  file: string;
  /** The server's token: the feed answers only a request that presents it. With none, the feed is refused (403). */
  token: string | undefined;
  /** How often the file is checked for new lines (default 250 ms). */
  pollMs?: number;
  /** SSE comment sent to idle clients so proxies keep the stream open (default 15 s). */
  heartbeatMs?: number;
  /** Most feed clients at once; past it 503 (default 32). */
  maxClients?: number;
  /** Most bytes read from the file per client per poll (default 1 MiB); the rest follows on the next polls. */
  chunkBytes?: number;
  /**
   * The recorder writing `file` (`RolloutRecorder`): each batch it writes goes straight to the clients already at
   * the file's end, without reading and re-parsing its lines (clients behind catch up from the file).
   */
  live?: {
    subscribe(fn: (batch: RecordedBatch) => void): () => void;
    /** The dashboard's series of the file up to `offset` (`RolloutRecorder.series`), for `since=series`. */
    series?(): { offset: number; state: SeriesState } | undefined;
  };
}

interface Client {
  res: ServerResponse;
  /** Byte offset of the next line to send: the id of the last event sent. */
  cursor: number;
  busy: boolean;
}

/**
 * A line of results.jsonl as the feed sends it: the reward explanation (the gold beside the extracted answer, and
 * diff lines that may quote gold values) is dropped, since whoever holds the server's token may be the trainer
 * side. Everything else results.jsonl carries is sent as is.
 */
export function feedLine(line: string): string | undefined {
  let r: unknown;
  try {
    r = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!r || typeof r !== "object" || Array.isArray(r)) return undefined;
  const o = r as Record<string, unknown>;
  if (typeof o.taskId !== "string" || typeof o.outcome !== "string") return undefined;
  if (!("explain" in o)) return line;
  delete o.explain;
  return JSON.stringify(o);
}

function presented(req: IncomingMessage, url: URL): string | undefined {
  const h = req.headers.authorization;
  if (h?.startsWith("Bearer ")) return h.slice(7).trim() || undefined;
  return url.searchParams.get("token") ?? undefined;
}

function fail(res: ServerResponse, status: number, code: string, message: string): undefined {
  const body = JSON.stringify({ error: { code, message } });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) }).end(body);
  return undefined;
}

/**
 * A read-only feed of a recording server's finished rollouts, as Server-Sent Events: one `rollout` event per line of
 * results.jsonl (gold removed, see `feedLine`), whose `id` is the byte offset just past that line. A client resumes
 * with `Last-Event-ID` (what EventSource sends on reconnect) or `?since=<id>`; `since=0` (the default) is the whole
 * recording, `since=end` only what comes next. `since=series` starts with one `series` event: the dashboard's series
 * of the recording so far (core's SeriesState, the latest rollouts without `explain`), whose `id` is the offset they
 * cover, then the rollouts after it; without series to offer (none kept, or still being read) the event's data is
 * `null` and the whole recording follows, as with `since=0`.
 * Token-protected: `Authorization: Bearer <token>` or `?token=`.
 *
 * Standalone: `handle(req, res)` answers any request routed to it, so it can be mounted on any server.
 */
export class RecordFeed {
  private readonly clients = new Set<Client>();
  private readonly timer: NodeJS.Timeout;
  private readonly heartbeat: NodeJS.Timeout;
  private readonly buf: Buffer;
  private closed = false;
  private readonly unsubscribe?: () => void;

  constructor(private readonly options: RecordFeedOptions) {
    this.buf = Buffer.allocUnsafe(options.chunkBytes ?? 1 << 20);
    this.unsubscribe = options.live?.subscribe((b) => this.publish(b));
    this.timer = setInterval(() => this.pollAll(), options.pollMs ?? 250);
    this.timer.unref();
    this.heartbeat = setInterval(() => {
      for (const c of this.clients) if (!c.busy) c.res.write(": ping\n\n");
    }, options.heartbeatMs ?? 15_000);
    this.heartbeat.unref();
  }

  get clientCount(): number {
    return this.clients.size;
  }

  handle(req: IncomingMessage, res: ServerResponse): void {
    this.open(req, res);
  }

  /** Answers a refused request with its error, or opens the stream. */
  private open(req: IncomingMessage, res: ServerResponse): undefined {
    const url = new URL(req.url ?? "/", "http://feed.invalid");
    if (req.method !== "GET" && req.method !== "HEAD") {
      return fail(res, 405, "METHOD_NOT_ALLOWED", `${req.method} ${RECORD_FEED_PATH}: the feed is read-only (GET)`);
    }
    const { token } = this.options;
    if (!token) {
      return fail(res, 403, "FORBIDDEN", "the recording feed needs a server token (serve --token or BENCHMAX_TOKEN)");
    }
    const given = presented(req, url);
    if (!given) return fail(res, 401, "UNAUTHORIZED", "missing Authorization: Bearer <token>");
    if (!safeEqual(given, token)) return fail(res, 403, "FORBIDDEN", "wrong token");
    if (this.closed) return fail(res, 503, "UNAVAILABLE", "the server is closing");
    if (this.clients.size >= (this.options.maxClients ?? 32)) {
      return fail(res, 503, "CAPACITY", "too many feed clients; try again later");
    }
    const size = this.size();
    const raw = (req.headers["last-event-id"] as string | undefined) ?? url.searchParams.get("since") ?? "0";
    let cursor: number;
    let first = "";
    if (raw === "series") {
      // always one `series` event first: `null` (and the whole recording after it) when there are none to offer
      const snap = this.seriesSnapshot();
      const ok = snap !== undefined && snap.offset <= size;
      cursor = ok ? snap.offset : 0;
      first = ok ? `id: ${snap.offset}\nevent: series\ndata: ${snap.data}\n\n` : "event: series\ndata: null\n\n";
    } else if (raw === "end") cursor = this.lineStartBefore(size);
    else if (/^\d{1,15}$/.test(raw)) {
      cursor = Number(raw);
      if (cursor > size || !this.atLineStart(cursor)) {
        return fail(res, 400, "BAD_REQUEST", `since=${raw} is not the id of an event of this recording`);
      }
    } else {
      return fail(res, 400, "BAD_REQUEST", `since must be an event id (a byte offset), "end" or "series", not ${raw}`);
    }
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    if (req.method === "HEAD") {
      res.end();
      return;
    }
    res.write(`retry: 1000\n\n${first}`);
    const c: Client = { res, cursor, busy: false };
    this.clients.add(c);
    const drop = () => this.clients.delete(c);
    req.on("close", drop);
    res.on("close", drop);
    void this.pump(c);
  }

  /**
   * The series to start a `since=series` stream with: the recorder's (current to the byte), else the run dir's
   * checkpoint when it still matches the file; the latest rollouts' `explain` (the gold) removed.
   */
  private seriesSnapshot(): { offset: number; data: string } | undefined {
    let snap = this.options.live?.series?.();
    if (!snap && !this.options.live?.series) {
      const cp = loadCheckpoint(dirname(this.options.file), undefined, basename(this.options.file));
      if (cp.series) snap = { offset: cp.offset, state: cp.series.toState() };
    }
    if (!snap) return undefined;
    const latest = snap.state.latest.map(({ explain: _gold, ...rest }) => rest);
    return { offset: snap.offset, data: JSON.stringify({ ...snap.state, latest }) };
  }

  private size(): number {
    return existsSync(this.options.file) ? statSync(this.options.file).size : 0;
  }

  private read(fd: number, at: number, n: number): number {
    return readSync(fd, this.buf, 0, Math.min(n, this.buf.length), at);
  }

  /** Whether `offset` is where a line of the file begins (0, or just past a newline). */
  private atLineStart(offset: number): boolean {
    if (offset === 0) return true;
    const fd = openSync(this.options.file, "r");
    try {
      return this.read(fd, offset - 1, 1) === 1 && this.buf[0] === 0x0a;
    } finally {
      closeSync(fd);
    }
  }

  /** The start of the line `size` falls in (a torn last line is sent once it is whole). */
  private lineStartBefore(size: number): number {
    if (size === 0) return 0;
    const fd = openSync(this.options.file, "r");
    try {
      let end = size;
      while (end > 0) {
        const start = Math.max(0, end - this.buf.length);
        const n = this.read(fd, start, end - start);
        const nl = this.buf.subarray(0, n).lastIndexOf(0x0a);
        if (nl >= 0) return start + nl + 1;
        end = start;
      }
      return 0;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * A batch just written to the file: sent, rendered once, to every client whose cursor is where it begins and that
   * is not already sending; any other client reads it from the file on its next poll.
   */
  private publish(batch: RecordedBatch): void {
    if (this.closed || this.clients.size === 0) return;
    let out: Buffer | undefined;
    for (const c of this.clients) {
      if (c.busy || c.cursor !== batch.start) continue;
      out ??= feedEvents(batch.start, batch.bytes, batch.ends, batch.feedEnds);
      c.cursor = batch.start + batch.bytes.length;
      if (!c.res.write(out)) {
        // a slow client: nothing more is pushed to it until it drains; then it catches up from the file
        c.busy = true;
        void drained(c.res).then(() => {
          c.busy = false;
          void this.pump(c);
        });
      }
    }
  }

  private pollAll(): void {
    if (this.clients.size === 0) return;
    for (const c of this.clients) if (!c.busy) void this.pump(c);
  }

  /** Send `c` the whole lines between its cursor and the file's end, a chunk at a time, waiting on backpressure. */
  private async pump(c: Client): Promise<void> {
    if (c.busy || this.closed) return;
    c.busy = true;
    try {
      for (;;) {
        if (!this.clients.has(c)) return;
        const size = this.size();
        if (size < c.cursor) {
          // the recording was replaced: start again from its beginning
          c.cursor = 0;
          c.res.write("event: reset\ndata: {}\n\n");
        }
        if (size <= c.cursor) return;
        const fd = openSync(this.options.file, "r");
        let n: number;
        try {
          n = this.read(fd, c.cursor, size - c.cursor);
        } finally {
          closeSync(fd);
        }
        const last = this.buf.subarray(0, n).lastIndexOf(0x0a);
        if (last < 0) {
          if (n < this.buf.length) return; // a torn last line: wait for its end
          // one line longer than a chunk: skip it, it cannot be sent
          c.cursor += n;
          continue;
        }
        const text = this.buf.toString("utf8", 0, last + 1);
        let out = "";
        let at = c.cursor;
        let start = 0;
        for (let nl = text.indexOf("\n"); nl >= 0; nl = text.indexOf("\n", start)) {
          const line = text.slice(start, nl);
          at += Buffer.byteLength(line) + 1;
          start = nl + 1;
          const data = line.trim() ? feedLine(line) : undefined;
          if (data) out += `id: ${at}\nevent: rollout\ndata: ${data}\n\n`;
        }
        c.cursor += last + 1;
        if (out && !c.res.write(out)) await drained(c.res);
      }
    } catch {
      this.clients.delete(c);
      c.res.destroy();
    } finally {
      c.busy = false;
    }
  }

  /** End every stream and stop polling. */
  close(): void {
    this.closed = true;
    this.unsubscribe?.();
    clearInterval(this.timer);
    clearInterval(this.heartbeat);
    for (const c of this.clients) c.res.end();
    this.clients.clear();
  }
}

/** Resolves when `res` drains its buffered output or closes. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}
