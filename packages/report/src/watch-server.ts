import { randomBytes } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import {
  type CheckpointLoad,
  LiveSeries,
  loadCheckpoint,
  ResultsTail,
  saveCheckpoint,
  UsageError,
} from "@benchmax/core";
import { dashboardServer } from "./dashboard-server.js";
import { type FeedSource, feedUrl, followFeed } from "./feed-source.js";
import { listenLoopback } from "./listen-loopback.js";
import { renderWatchPage } from "./watch-page.js";

export interface WatchOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default a random token; every request needs it (`?token=` or `Authorization: Bearer`). */
  token?: string;
  /** How often the file is polled for new rollouts and a changed snapshot pushed (default 500 ms). */
  pollMs?: number;
  /**
   * Pass threshold for the pass-rate curve. Default: the one the run's series were kept with (its checkpoint, or the
   * recording server's series: the env's), else 1. One given here that differs from theirs reads every rollout again.
   */
  passThreshold?: number;
  /** Watching a recording server's URL: its token (else the URL's password, `http://benchmax:TOKEN@host`). */
  serverToken?: string;
  /**
   * Watching a run dir: keep the series in a checkpoint beside results.jsonl (core's series-checkpoint.ts), loaded at start
   * when it still matches the file, so a restarted watch reads only what was appended since (default true).
   */
  checkpoint?: boolean;
}

/** What a watch of a run dir did before it listened (bench and tests). */
export interface WatchStartup {
  /**
   * The checkpoint: "loaded", or why the file was read from the start; "off" when disabled. Watching a URL: "loaded"
   * when the server's series were taken, else "off".
   */
  checkpoint: CheckpointLoad["status"] | "off";
  /** Rollouts the loaded checkpoint (or the server's series) held. */
  fromCheckpoint: number;
  /** Milliseconds spent loading and validating the checkpoint. */
  checkpointMs: number;
  /** Rollouts read from results.jsonl before listening (the first MiB past the checkpoint; the rest follows). */
  readBeforeListen: number;
  readMs: number;
}

export interface WatchServer {
  /** The dashboard's address, token included. */
  url: string;
  token: string;
  /** The series drawn (replaced by a fresh one if results.jsonl shrinks and is read again). */
  readonly series: LiveSeries;
  readonly startup: WatchStartup;
  /** Whether the whole of results.jsonl present at the last poll has been read (always true for a URL). */
  readonly caughtUp: boolean;
  close(): Promise<void>;
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
  const passThreshold = options.passThreshold ?? 1;
  const startup: WatchStartup = {
    checkpoint: "off",
    fromCheckpoint: 0,
    checkpointMs: 0,
    readBeforeListen: 0,
    readMs: 0,
  };
  const useCheckpoint = !remote && options.checkpoint !== false;
  let series = new LiveSeries(passThreshold);
  let resumeAt = 0;
  if (useCheckpoint) {
    const t = performance.now();
    const cp = loadCheckpoint(dir, options.passThreshold);
    startup.checkpoint = cp.status;
    if (cp.series) {
      series = cp.series;
      resumeAt = cp.offset;
      startup.fromCheckpoint = cp.series.total;
    }
    startup.checkpointMs = performance.now() - t;
  }
  const dash = dashboardServer({
    token,
    page: () => {
      sentVersion = Math.min(sentVersion, series.version);
      return renderWatchPage(
        `benchmax watch — ${remote ? feedUrl(source).host : dir}`,
        series.snapshot(),
        token,
        snapshotName(),
      );
    },
    snapshot: () => series.snapshot(),
    snapshotName: () => snapshotName(),
  });
  const clients = dash.clients;
  // a snapshot's name: the series' version, and how many times the series was replaced (a shrunk file read again)
  let epoch = 0;
  const snapshotName = () => `${epoch}.${series.version}`;
  let sentVersion = -1;
  let closed = false;
  const push = () => {
    if (series.version === sentVersion || clients.size === 0) return;
    sentVersion = series.version;
    const msg = `data: ${JSON.stringify(series.snapshot())}\n\n`;
    for (const c of clients) c.write(msg);
  };
  // the checkpoint is saved every CHECKPOINT_BYTES read while catching up, then at most every CHECKPOINT_MS while
  // the file grows, and on close
  const CHECKPOINT_BYTES = 64 << 20;
  const CHECKPOINT_MS = 30_000;
  let savedOffset = resumeAt;
  // not before CHECKPOINT_MS: a restart's few appended rows are not saved on the way to listening
  let savedAt = performance.now();
  const checkpoint = (force: boolean) => {
    if (!useCheckpoint || !tail || tail.committed === savedOffset) return;
    const due =
      force ||
      tail.committed - savedOffset >= CHECKPOINT_BYTES ||
      (!tail.behind && performance.now() - savedAt >= CHECKPOINT_MS);
    if (!due) return;
    if (saveCheckpoint(dir, series, tail.committed)) savedOffset = tail.committed;
    savedAt = performance.now();
  };
  // a large file is read a slice per turn of the event loop, so the page is served (with what is read so far) while
  // the rest comes in; each slice's rollouts reach open pages at the next push
  const SLICE = 1 << 20;
  let lastPush = 0;
  let catching = false;
  const catchUp = () => {
    if (closed || !tail) return;
    tail.poll(SLICE);
    checkpoint(false);
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
  let tail: ResultsTail | undefined;
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
      {
        ...(options.serverToken ? { token: options.serverToken } : {}),
        // the server's series so far: the page paints them at once, and only later rollouts come over the feed
        onSeries: (state) => {
          if (state === null) return true;
          let s: LiveSeries;
          try {
            s = LiveSeries.fromState(state);
          } catch {
            return false;
          }
          // a pass threshold asked for that the server's series were not made with: every rollout is read instead
          if (options.passThreshold !== undefined && s.passThreshold !== options.passThreshold) return false;
          series = s;
          epoch++;
          sentVersion = -1;
          startup.fromCheckpoint = s.total;
          startup.checkpoint = "loaded";
          return true;
        },
        onReset: () => {
          series = new LiveSeries(series.passThreshold);
          epoch++;
          sentVersion = -1;
        },
      },
    );
    await feed.ready;
  } else {
    tail = new ResultsTail(
      join(dir, "results.jsonl"),
      (r) => series.add(r),
      resumeAt,
      () => {
        // the file shrank: what was drawn is dropped, and so is the checkpoint's offset
        series = new LiveSeries(series.passThreshold);
        epoch++;
        sentVersion = -1;
        savedOffset = -1;
      },
    );
    const t = performance.now();
    const before = series.total;
    kick();
    startup.readBeforeListen = series.total - before;
    startup.readMs = performance.now() - t;
    timer = setInterval(kick, options.pollMs ?? 500);
    timer.unref();
  }
  const server = dash.server;
  const port = await listenLoopback(server, options.port);
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    token,
    get series() {
      return series;
    },
    startup,
    get caughtUp() {
      return !catching && !tail?.behind;
    },
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(timer);
      checkpoint(true);
      feed?.close();
      dash.stop();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
