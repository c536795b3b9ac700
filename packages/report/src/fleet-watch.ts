import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";
import {
  CHECKPOINT_FILE,
  type LatestRollout,
  LiveSeries,
  type LiveSnapshot,
  ResultsTail,
  type RolloutResult,
  type SeriesState,
  UsageError,
} from "@benchmax/core";
import { dashboardServer } from "./dashboard-server.js";
import { FEED_PATH, type FeedSource, feedUrl, followFeed } from "./feed-source.js";
import { listenLoopback } from "./listen-loopback.js";
import { renderWatchPage } from "./watch-page.js";

export interface FleetWatchOptions {
  /** Default 0 (a free port). */
  port?: number;
  /** Default a random token; every request needs it (`?token=` or `Authorization: Bearer`). */
  token?: string;
  /** How often run dirs are polled and a changed snapshot pushed to open pages (default 500 ms). */
  pollMs?: number;
  /** How often each server's `/health` and `/metrics` are read (default 1 s). */
  probeMs?: number;
  /** A probe, or the first connection to a feed, that takes longer than this counts as no answer (default 3 s). */
  probeTimeoutMs?: number;
  /** Wait before a dropped feed is reopened, or an unreachable server tried again (default 1 s). */
  retryMs?: number;
  /** Pass threshold for every source. Default: each source's own (its recorder's series or checkpoint), else 1. */
  passThreshold?: number;
  /** The recording servers' token (a URL's own password, `http://benchmax:TOKEN@host`, wins for that URL). */
  serverToken?: string;
}

/**
 * A node's state: a server `up` (its /health answers 200), `draining` (503 `{status: "draining"}` or
 * `x-benchmax-draining: 1`), `unhealthy` (another answer), `down` (no answer), or `connecting` (not probed yet); a
 * run dir `dir`, or `missing` once it is gone.
 */
export type NodeState = "connecting" | "up" | "draining" | "unhealthy" | "down" | "dir" | "missing";

/** One source of a fleet watch, as the per-node panel shows it. */
export interface FleetNode {
  /** A server's host:port (and path, behind a proxy), or the run dir as given. */
  name: string;
  kind: "server" | "dir";
  state: NodeState;
  /** A server answered its last probe; a run dir exists. */
  reachable: boolean;
  draining: boolean;
  /** The server's instance id (`/health` `instance`, or the `x-benchmax-instance` header). */
  instance?: string;
  /** The instance id seen before the last restart. */
  previousInstance?: string;
  /** How many times the server came back with an instance id other than the one seen before. */
  restarts: number;
  /** Finished rollouts in its recording (read by this watch). */
  rollouts: number;
  /** Those rollouts by outcome (completed, truncated, env_error, infra_error). */
  outcomes: Record<string, number>;
  /** env_error + infra_error. */
  errors: number;
  /**
   * From the server's `/metrics` (its current instance's counters): live rollouts (none while it is down), rollouts
   * created, released and expired (as last read while it is down).
   */
  live?: number;
  created?: number;
  released?: number;
  expired?: number;
  /** Requests the server answered with an error, by code (`benchmax_errors_total` of its Prometheus metrics). */
  errorCodes?: Record<string, number>;
  /** Of those, 404 UNKNOWN_ROLLOUT: calls for a rollout it does not hold (released, expired, or another instance's). */
  unknownRollout?: number;
  /** Of those, 503 DRAINING: new rollouts it refused while draining. */
  drainingRefused?: number;
  /** When the server stopped answering (ISO time), while it is down. */
  downSince?: string;
  /** The last failure to reach it or read its feed. */
  lastError?: string;
}

/** What a fleet watch draws: the merged run's series (each latest rollout with its node) and the per-node panel. */
export interface FleetSnapshot extends LiveSnapshot {
  latest: (LatestRollout & { node: string })[];
  nodes: FleetNode[];
}

export interface FleetWatchServer {
  /** The dashboard's address, token included. */
  url: string;
  token: string;
  /** The merged run and the per-node panel, as the page draws them now (also `GET /snapshot`). */
  snapshot(): FleetSnapshot;
  close(): Promise<void>;
}

interface Source {
  node: FleetNode;
  /** Servers: the feed URL as given (credentials included), the base for /health and /metrics, the token. */
  input: string;
  base?: URL;
  token?: string;
  dir?: string;
  threshold: number;
  series: LiveSeries;
  /** The arrival number of each of the series' latest rollouts, oldest first (they shift together). */
  seqs: number[];
  /** Bumped when the source's series are replaced (a feed reset, a restart, a shrunk file). */
  epoch: number;
  /** Bumped on a restart: a feed of an older generation is closed and its rollouts ignored. */
  gen: number;
  feed?: FeedSource;
  tail?: ResultsTail;
  cached?: { key: string; state: SeriesState };
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());
const errText = (e: unknown) => {
  const c = (e as { cause?: { code?: string } })?.cause?.code;
  return `${(e as Error)?.message ?? String(e)}${c ? ` (${c})` : ""}`;
};

/** The pass threshold a run dir's series were kept with (its checkpoint's), if it has one. */
function dirThreshold(dir: string): number | undefined {
  try {
    const t = (JSON.parse(readFileSync(join(dir, CHECKPOINT_FILE), "utf8")) as { series?: { passThreshold?: unknown } })
      .series?.passThreshold;
    return typeof t === "number" && Number.isFinite(t) ? t : undefined;
  } catch {
    return undefined;
  }
}

/** `benchmax_errors_total{code="…"} N` lines of a Prometheus exposition, by code. */
export function errorCodesOf(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^benchmax_errors_total\{code="((?:[^"\\]|\\.)*)"\}\s+(\S+)/gm)) {
    const v = Number(m[2]);
    if (Number.isFinite(v)) out[m[1]!] = v;
  }
  return out;
}

/**
 * `benchmax watch URL|DIR URL|DIR …`: one dashboard of several sources as one run — recording servers (`serve
 * --record --token`, followed through their rollout feeds) and run dirs (followed as they grow) — on 127.0.0.1
 * behind a token. The curves, totals and outcomes are the merged run's (`LiveSeries.merge`); the per-node panel shows
 * each source's rollouts and outcomes, and for a server what its `/health` and `/metrics` say: reachable, draining,
 * its instance id (a new one after a restart: its feed is read again from the start), live rollouts, rollouts
 * created and released, and requests refused as unknown rollouts or while draining. A server that stops answering
 * stays listed as down, its recorded rollouts still counted; the others go on. Each source is read from its first
 * rollout (the per-node outcome counts need every row), so unlike a single source's watch no saved series are
 * taken. A wrong server token fails the start; a server that cannot be reached is listed as down and tried again,
 * unless no source at all can be read.
 */
export async function startFleetWatch(inputs: string[], options: FleetWatchOptions = {}): Promise<FleetWatchServer> {
  if (inputs.length === 0) throw new UsageError("watch: no source given");
  const pollMs = options.pollMs ?? 500;
  const probeMs = options.probeMs ?? 1000;
  const probeTimeoutMs = options.probeTimeoutMs ?? 3000;
  const retryMs = options.retryMs ?? 1000;
  const token = options.token ?? randomBytes(16).toString("hex");
  const keepLatest = new LiveSeries().keepLatest;

  const sources: Source[] = [];
  const seen = new Set<string>();
  for (const input of inputs) {
    const server = /^https?:\/\//i.test(input);
    let key: string;
    let name: string;
    let base: URL | undefined;
    let srcToken: string | undefined;
    if (server) {
      const u = feedUrl(input);
      srcToken = u.password ? decodeURIComponent(u.password) : options.serverToken;
      u.username = "";
      u.password = "";
      key = u.href;
      base = new URL(u);
      base.pathname = `${base.pathname.slice(0, -FEED_PATH.length).replace(/\/+$/, "")}/`;
      base.search = "";
      name = base.pathname === "/" ? base.host : `${base.host}${base.pathname.replace(/\/$/, "")}`;
    } else {
      if (!existsSync(input) || !statSync(input).isDirectory()) {
        throw new UsageError(`${input}: no such run directory (or give a recording server's http:// URL)`);
      }
      key = resolve(input);
      name = input;
    }
    if (seen.has(key)) throw new UsageError(`${input}: given twice`);
    seen.add(key);
    const threshold = options.passThreshold ?? (server ? undefined : dirThreshold(input)) ?? 1;
    sources.push({
      node: {
        name,
        kind: server ? "server" : "dir",
        state: server ? "connecting" : "dir",
        reachable: !server,
        draining: false,
        restarts: 0,
        rollouts: 0,
        outcomes: {},
        errors: 0,
      },
      input,
      ...(base ? { base } : {}),
      ...(srcToken ? { token: srcToken } : {}),
      ...(server ? {} : { dir: input }),
      threshold,
      series: new LiveSeries(threshold),
      seqs: [],
      epoch: 0,
      gen: 0,
    });
  }

  let closed = false;
  // the page's snapshot name: bumped on every change to what it shows (the series or a node)
  let rev = 0;
  let seriesRev = 0;
  let arrivals = 0;
  const bumpSeries = () => {
    seriesRev++;
    rev++;
  };

  const add = (s: Source, r: RolloutResult) => {
    s.series.add(r);
    s.seqs.push(++arrivals);
    if (s.seqs.length > s.series.keepLatest) s.seqs.shift();
    s.node.rollouts = s.series.total;
    s.node.outcomes[r.outcome] = (s.node.outcomes[r.outcome] ?? 0) + 1;
    if (r.outcome === "env_error" || r.outcome === "infra_error") s.node.errors++;
    bumpSeries();
  };
  const reset = (s: Source) => {
    s.series = new LiveSeries(s.threshold);
    s.seqs = [];
    s.epoch++;
    s.node.rollouts = 0;
    s.node.outcomes = {};
    s.node.errors = 0;
    bumpSeries();
  };

  // ---- servers: the feed (every rollout from the first), kept open; a restart reads it again
  const authHeaders = (s: Source): Record<string, string> => (s.token ? { authorization: `Bearer ${s.token}` } : {});
  /** One attempt to open the feed of `s` for generation `gen`; throws what followFeed throws. */
  const openFeed = async (s: Source, gen: number): Promise<void> => {
    const live = () => !closed && s.gen === gen;
    const feed = await followFeed(
      s.input,
      (r) => {
        if (live()) add(s, r);
      },
      {
        ...(s.token ? { token: s.token } : {}),
        retryMs,
        // the recorder's series are asked for only to learn its pass threshold: refused, the feed is read from its
        // first rollout
        ...(options.passThreshold === undefined
          ? {
              onSeries: (state: unknown) => {
                const t = (state as { passThreshold?: unknown } | null)?.passThreshold;
                if (live() && typeof t === "number" && Number.isFinite(t) && s.series.total === 0) {
                  s.threshold = t;
                  s.series = new LiveSeries(t);
                }
                return false;
              },
            }
          : {}),
        onReset: () => {
          if (live()) reset(s);
        },
      },
    );
    if (!live()) {
      feed.close();
      return;
    }
    s.feed = feed;
    await feed.ready;
  };
  /**
   * Opens the feed of `s`, tried again until it opens, the source restarts or the watch closes. The promise settles
   * after the first attempt, with its error (undefined when it opened).
   */
  const connect = (s: Source): Promise<unknown> => {
    const gen = s.gen;
    let first: (e: unknown) => void = () => {};
    const firstDone = new Promise<unknown>((r) => (first = r));
    void (async () => {
      while (!closed && s.gen === gen && !s.feed) {
        try {
          await openFeed(s, gen);
          if (s.node.lastError && !s.node.lastError.startsWith("/health:")) {
            delete s.node.lastError;
            rev++;
          }
          first(undefined);
          return;
        } catch (e) {
          s.node.lastError = errText(e);
          rev++;
          first(e);
        }
        await sleep(retryMs);
      }
      first(undefined);
    })();
    return firstDone;
  };
  /** A new instance behind the address: its recording is read again from the start. */
  const restart = (s: Source) => {
    s.gen++;
    s.feed?.close();
    s.feed = undefined;
    reset(s);
    void connect(s);
  };

  const probe = async (s: Source): Promise<void> => {
    const n = s.node;
    const before = JSON.stringify(n);
    const signal = AbortSignal.timeout(probeTimeoutMs);
    let res: Response;
    try {
      res = await fetch(new URL("health", s.base), { signal });
    } catch (e) {
      if (n.reachable || n.state === "connecting") n.downSince = new Date().toISOString();
      n.reachable = false;
      n.state = "down";
      n.draining = false;
      // its live rollouts are gone with it; created, released and refused stay as last read
      delete n.live;
      n.lastError = `/health: ${errText(e)}`;
      if (JSON.stringify(n) !== before) rev++;
      return;
    }
    const body = (await res.json().catch(() => ({}))) as {
      status?: unknown;
      instance?: unknown;
      activeRollouts?: unknown;
    };
    const instance =
      typeof body.instance === "string" ? body.instance : (res.headers.get("x-benchmax-instance") ?? undefined);
    n.reachable = true;
    delete n.downSince;
    if (n.lastError?.startsWith("/health:")) delete n.lastError;
    n.draining = (res.status === 503 && body.status === "draining") || res.headers.get("x-benchmax-draining") === "1";
    n.state = n.draining ? "draining" : res.ok ? "up" : "unhealthy";
    if (typeof body.activeRollouts === "number") n.live = body.activeRollouts;
    if (instance) {
      if (n.instance !== undefined && instance !== n.instance) {
        n.restarts++;
        n.previousInstance = n.instance;
        n.instance = instance;
        restart(s);
      }
      n.instance = instance;
    }
    try {
      const m = await fetch(new URL("metrics", s.base), { headers: authHeaders(s), signal });
      if (m.ok) {
        const j = (await m.json()) as Record<string, unknown>;
        const num = (k: string) => (typeof j[k] === "number" ? (j[k] as number) : undefined);
        const set = (field: "live" | "created" | "released" | "expired", k: string) => {
          const v = num(k);
          if (v !== undefined) n[field] = v;
        };
        set("live", "activeRollouts");
        set("created", "rolloutsCreated");
        set("released", "rolloutsReleased");
        set("expired", "rolloutsExpired");
        if (j.draining === true && !n.draining) {
          n.draining = true;
          n.state = "draining";
        }
      } else await m.body?.cancel();
      const p = await fetch(new URL("metrics?format=prometheus", s.base), { headers: authHeaders(s), signal });
      if (p.ok) {
        n.errorCodes = errorCodesOf(await p.text());
        n.unknownRollout = n.errorCodes.UNKNOWN_ROLLOUT ?? 0;
        n.drainingRefused = n.errorCodes.DRAINING ?? 0;
      } else await p.body?.cancel();
    } catch {
      /* the metrics of this round are missed; /health already answered */
    }
    if (JSON.stringify(n) !== before) rev++;
  };
  const probeLoop = async (s: Source) => {
    while (!closed) {
      await sleep(probeMs);
      if (closed) return;
      await probe(s);
    }
  };

  // ---- run dirs: followed as they grow, a slice per turn while behind
  const SLICE = 1 << 20;
  const catching = new Set<Source>();
  const pollDir = (s: Source, again = false) => {
    if (closed || !s.tail || (catching.has(s) && !again)) return;
    const there = existsSync(s.dir!);
    const state: NodeState = there ? "dir" : "missing";
    if (state !== s.node.state || there !== s.node.reachable) {
      s.node.state = state;
      s.node.reachable = there;
      rev++;
    }
    s.tail.poll(SLICE);
    if (s.tail.behind) {
      catching.add(s);
      setImmediate(() => pollDir(s, true));
    } else catching.delete(s);
  };
  for (const s of sources) {
    if (!s.dir) continue;
    s.tail = new ResultsTail(
      join(s.dir, "results.jsonl"),
      (r) => add(s, r),
      0,
      () => reset(s),
    );
    pollDir(s);
  }

  // ---- start: every server tried once; a wrong token (or a server without a feed: not recording) fails the start
  const servers = sources.filter((s) => s.base);
  const firsts = await Promise.all(
    servers.map((s) => Promise.race([connect(s), sleep(probeTimeoutMs).then(() => "timeout" as const)])),
  );
  const refused = firsts
    .map((e, i) => ({ e, s: servers[i]! }))
    .filter(({ e }) => e instanceof UsageError && /HTTP 4\d\d\b/.test(e.message));
  const stop = () => {
    closed = true;
    for (const s of sources) s.feed?.close();
  };
  if (refused.length) {
    stop();
    throw new UsageError(refused.map(({ s, e }) => `${s.node.name}: ${(e as Error).message}`).join("; "));
  }
  await Promise.all(servers.map((s) => probe(s)));
  if (sources.every((s) => s.base && !s.feed && !s.node.reachable)) {
    stop();
    throw new UsageError(
      `none of the sources can be read: ${sources.map((s) => `${s.node.name}: ${s.node.lastError}`).join("; ")}`,
    );
  }
  for (const s of servers) void probeLoop(s);

  // ---- the merged series, made again only when a source's series changed
  let merged: { rev: number; snap: LiveSnapshot } | undefined;
  const stateOf = (s: Source): SeriesState => {
    const key = `${s.gen}.${s.epoch}.${s.series.version}`;
    if (s.cached?.key !== key) s.cached = { key, state: s.series.toState() };
    return s.cached.state;
  };
  const snapshot = (): FleetSnapshot => {
    if (merged?.rev !== seriesRev) {
      const states = sources.map(stateOf);
      // every source's latest rollouts, in the order they arrived, each with its node
      const rows: { seq: number; row: LatestRollout & { node: string } }[] = [];
      sources.forEach((s, i) => {
        const latest = states[i]!.latest;
        const seqs = s.seqs.slice(-latest.length);
        latest.forEach((row, j) => {
          rows.push({ seq: seqs[j] ?? 0, row: { ...row, node: s.node.name } });
        });
      });
      rows.sort((a, b) => a.seq - b.seq);
      const state = LiveSeries.merge(
        states,
        rows.slice(-keepLatest).map((r) => r.row),
      ).toState();
      merged = { rev: seriesRev, snap: LiveSeries.fromState(state).snapshot() };
    }
    return {
      ...merged.snap,
      latest: merged.snap.latest as FleetSnapshot["latest"],
      nodes: sources.map((s) => structuredClone(s.node)),
    };
  };

  // ---- the dashboard
  const title = `benchmax watch — ${sources.length} sources`;
  const dash = dashboardServer({
    token,
    page: () => renderWatchPage(title, snapshot(), token, String(rev)),
    snapshot: () => snapshot(),
    snapshotName: () => String(rev),
  });
  const clients = dash.clients;
  let sentRev = -1;
  const push = () => {
    if (rev === sentRev || clients.size === 0) return;
    sentRev = rev;
    const msg = `data: ${JSON.stringify(snapshot())}\n\n`;
    for (const c of clients) c.write(msg);
  };
  const timer = setInterval(() => {
    for (const s of sources) if (s.tail) pollDir(s);
    push();
  }, pollMs);
  timer.unref();
  const server = dash.server;
  let port: number;
  try {
    port = await listenLoopback(server, options.port);
  } catch (e) {
    stop();
    clearInterval(timer);
    dash.stop();
    throw e;
  }
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    token,
    snapshot,
    async close() {
      if (closed) return;
      stop();
      clearInterval(timer);
      dash.stop();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
