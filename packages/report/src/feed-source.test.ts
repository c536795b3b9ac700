import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { RolloutResult } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { FEED_PATH, feedUrl, followFeed } from "./feed-source.js";

/** A stand-in recording server: events 1..n, each id its number; resumes after Last-Event-ID; drops on demand. */
let events: RolloutResult[] = [];
const streams = new Set<ServerResponse>();
const asked: { auth?: string; last?: string; url?: string }[] = [];
let server: Server;
/** Answer since=series as a server from before it did: 400. */
let oldServer = false;
let base: string;

const rollout = (i: number) => ({ taskId: "t", rolloutId: `r${i}`, outcome: "completed", reward: 1 }) as RolloutResult;
const send = (res: ServerResponse, i: number) =>
  res.write(`id: ${i}\nevent: rollout\ndata: ${JSON.stringify(events[i - 1])}\n\n`);

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    asked.push({
      auth: req.headers.authorization,
      last: req.headers["last-event-id"] as string | undefined,
      url: req.url,
    });
    if (req.headers.authorization !== "Bearer secret") return void res.writeHead(403).end("wrong token");
    if (req.url?.includes("since=series") && oldServer) return void res.writeHead(400).end("since must be an id");
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(": hello\n\nretry: 1000\n\n");
    let from = Number(req.headers["last-event-id"] ?? 0);
    if (req.url?.includes("since=series") && req.headers["last-event-id"] === undefined) {
      // the series of the events so far (a stand-in state: how many), then the events after them
      from = events.length;
      res.write(`id: ${from}\nevent: series\ndata: ${JSON.stringify({ count: from })}\n\n`);
    }
    for (let i = from + 1; i <= events.length; i++) send(res, i);
    streams.add(res);
    req.on("close", () => streams.delete(res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

describe("followFeed", () => {
  it("names the feed under a server's base URL and takes the token from the URL's password", () => {
    expect(feedUrl("http://h:8000").pathname).toBe(FEED_PATH);
    expect(feedUrl("http://h:8000/").pathname).toBe(FEED_PATH);
    expect(feedUrl(`http://h:8000${FEED_PATH}`).pathname).toBe(FEED_PATH);
  });

  it("a wrong token or a server that is down is a usage error at once", async () => {
    await expect(followFeed(base, () => {}, { token: "nope" })).rejects.toThrow(/HTTP 403/);
    await expect(followFeed("http://127.0.0.1:1", () => {}, { token: "x" })).rejects.toThrow(/cannot reach/);
  });

  it("takes every rollout once, in order, across a dropped stream (resumed with Last-Event-ID)", async () => {
    events = [1, 2, 3].map(rollout);
    asked.length = 0;
    const got: string[] = [];
    const f = await followFeed(base.replace("http://", "http://benchmax:secret@"), (r) => got.push(r.rolloutId), {
      retryMs: 10,
    });
    await vi.waitFor(() => expect(got).toEqual(["r1", "r2", "r3"]), { timeout: 10_000, interval: 10 });
    expect(asked[0]).toMatchObject({ auth: "Bearer secret", last: "0" });
    // the server drops the stream; two rollouts finish meanwhile
    for (const s of streams) s.destroy();
    events.push(rollout(4), rollout(5));
    await vi.waitFor(() => expect(got).toEqual(["r1", "r2", "r3", "r4", "r5"]), { timeout: 10_000, interval: 10 });
    expect(asked.at(-1)!.last).toBe("3");
    expect(f.reconnects).toBeGreaterThanOrEqual(1);
    // live events on the open stream
    events.push(rollout(6));
    for (const s of streams) send(s, 6);
    await vi.waitFor(() => expect(got.at(-1)).toBe("r6"), { timeout: 10_000, interval: 10 });
    expect(f.lastEventId).toBe("6");
    f.close();
  });

  it("with onSeries: starts from the server's series and takes only the rollouts after them", async () => {
    events = [1, 2, 3, 4].map(rollout);
    asked.length = 0;
    const got: string[] = [];
    const states: unknown[] = [];
    const f = await followFeed(base, (r) => got.push(r.rolloutId), {
      token: "secret",
      retryMs: 10,
      onSeries: (s) => states.push(s) > 0,
    });
    await f.ready;
    expect(states).toEqual([{ count: 4 }]);
    expect(asked[0]!.url).toContain("since=series");
    expect(asked[0]!.last).toBeUndefined();
    events.push(rollout(5));
    for (const s of streams) send(s, 5);
    await vi.waitFor(() => expect(got).toEqual(["r5"]), { timeout: 10_000, interval: 10 });
    // a drop resumes after the last rollout, never asking for the series again
    for (const s of streams) s.destroy();
    events.push(rollout(6));
    await vi.waitFor(() => expect(got).toEqual(["r5", "r6"]), { timeout: 10_000, interval: 10 });
    expect(asked.at(-1)!.last).toBe("5");
    expect(states).toHaveLength(1);
    f.close();
  });

  it("series refused (another pass threshold, a bad state): the feed is read again from its first rollout", async () => {
    events = [1, 2, 3].map(rollout);
    asked.length = 0;
    const got: string[] = [];
    const f = await followFeed(base, (r) => got.push(r.rolloutId), {
      token: "secret",
      retryMs: 10,
      onSeries: () => false,
    });
    await f.ready;
    await vi.waitFor(() => expect(got).toEqual(["r1", "r2", "r3"]), { timeout: 10_000, interval: 10 });
    expect(asked.at(-1)!.last).toBe("0");
    f.close();
  });

  it("a server from before since=series (400): the feed from its start, series never asked again", async () => {
    events = [1, 2].map(rollout);
    asked.length = 0;
    oldServer = true;
    const got: string[] = [];
    const states: unknown[] = [];
    try {
      const f = await followFeed(base, (r) => got.push(r.rolloutId), {
        token: "secret",
        onSeries: (s) => states.push(s) > 0,
      });
      await f.ready;
      await vi.waitFor(() => expect(got).toEqual(["r1", "r2"]), { timeout: 10_000, interval: 10 });
      expect(states).toEqual([]);
      expect(asked.map((a) => a.last)).toEqual([undefined, "0"]);
      f.close();
    } finally {
      oldServer = false;
    }
  });
});
