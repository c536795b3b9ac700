import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type EnvShape, LiveSeries, loadCheckpoint, ResultsTail, type RolloutResult } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { RolloutRecorder } from "./record.js";
import { RECORD_FEED_PATH, RecordFeed } from "./record-feed.js";

const TOKEN = "live-token";
const env: EnvShape = { name: "live", capabilities: { reward: { passThreshold: 1 } } };

const result = (i: number, extra: Partial<RolloutResult> = {}): RolloutResult => ({
  taskId: `t${i}`,
  rolloutId: `r${i}`,
  groupId: `t${i}@0`,
  sample: 0,
  attempt: 0,
  outcome: "completed",
  turns: 1,
  toolCalls: 0,
  toolErrors: 0,
  durationMs: 1,
  messages: [{ role: "assistant", content: `answer ${i} ü ✓` }],
  rewards: { r: i % 2 },
  reward: i % 2,
  explain: { extracted: `${i}`, gold: `GOLD-${i}` },
  trainerStep: 0,
  ...extra,
});

let dir: string;
let rec: RolloutRecorder;
let feed: RecordFeed;
let server: Server;
let base: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "benchmax-record-live-"));
  rec = new RolloutRecorder(join(dir, "run"), env, { maxQueue: 1000 });
  // no polling in this test: whatever a caught-up client gets, the recorder pushed
  feed = new RecordFeed({ file: rec.runDir.resultsPath, token: TOKEN, pollMs: 3_600_000, live: rec });
  server = createServer((req, res) => feed.handle(req, res));
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  feed.close();
  await rec.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

/** Follow the feed until `want` rollout events arrived; returns their ids and parsed data, and every byte. */
async function follow(want: number, query: string, started: () => void) {
  const ac = new AbortController();
  const res = await fetch(`${base}${RECORD_FEED_PATH}${query}`, {
    headers: { authorization: `Bearer ${TOKEN}` },
    signal: ac.signal,
  });
  expect(res.status).toBe(200);
  started();
  let raw = "";
  const dec = new TextDecoder();
  const events: Array<{ id: number; data: RolloutResult }> = [];
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    raw += dec.decode(chunk, { stream: true });
    events.length = 0;
    for (const block of raw.split("\n\n").slice(0, -1)) {
      const f = Object.fromEntries(
        block
          .split("\n")
          .filter((l) => l.includes(": "))
          .map((l) => [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)]),
      );
      if (f.event === "rollout") events.push({ id: Number(f.id), data: JSON.parse(f.data!) });
    }
    if (events.length >= want) break;
  }
  ac.abort();
  return { events, raw };
}

describe("serve --record: one serialization for the file and the live feed", () => {
  it("pushes each written batch to followers at the end of the file, with byte offsets as ids, never the gold", async () => {
    // two lines already there: a follower from the start reads them from the file, then gets pushes
    rec.add(result(0));
    rec.add(result(1));
    await rec.flush();
    let ready = 0;
    const fromStart = follow(42, "?since=0", () => ready++);
    const fromEnd = follow(40, "?since=end", () => ready++);
    await vi.waitFor(() => expect(ready === 2 && feed.clientCount === 2).toBe(true), { timeout: 10_000 });
    // many rollouts finished in one turn of the event loop, then more one at a time
    for (let i = 2; i < 22; i++) rec.add(result(i));
    await rec.flush();
    for (let i = 22; i < 42; i++) {
      rec.add(result(i));
      await rec.flush();
    }
    const [a, b] = await Promise.all([fromStart, fromEnd]);
    expect(a.events.map((e) => e.data.rolloutId)).toEqual(Array.from({ length: 42 }, (_, i) => `r${i}`));
    expect(b.events.map((e) => e.data.rolloutId)).toEqual(Array.from({ length: 40 }, (_, i) => `r${i + 2}`));
    for (const { raw } of [a, b]) expect(raw).not.toMatch(/GOLD|explain/);
    // each id is the byte offset just past its line in results.jsonl, where a resumed follower starts
    const text = readFileSync(rec.runDir.resultsPath);
    const ends: number[] = [];
    for (let nl = text.indexOf(0x0a); nl >= 0; nl = text.indexOf(0x0a, nl + 1)) ends.push(nl + 1);
    expect(a.events.map((e) => e.id)).toEqual(ends);
    expect(b.events.map((e) => e.id)).toEqual(ends.slice(2));
    const lines = text.toString("utf8").trim().split("\n");
    expect(lines).toHaveLength(42);
    expect(JSON.parse(lines[7]!).explain.gold).toBe("GOLD-7");
    expect(rec.written).toBe(42);
  });

  it("counts a record JSON cannot hold as dropped, and keeps recording", async () => {
    const bad = result(99, { metadata: { n: 1n } as unknown as Record<string, unknown> });
    const before = { written: rec.written, dropped: rec.dropped };
    const err = vi.spyOn(console, "error").mockImplementation(() => {});
    rec.add(bad);
    rec.add(result(100));
    await rec.flush();
    err.mockRestore();
    expect(rec.dropped - before.dropped).toBe(1);
    expect(rec.written - before.written).toBe(1);
    const last = readFileSync(rec.runDir.resultsPath, "utf8").trim().split("\n").at(-1)!;
    expect(JSON.parse(last).rolloutId).toBe("r100");
  });
});

describe("serve --record: the summary", () => {
  it("is rewritten only when rollouts were recorded since the last one", async () => {
    vi.useFakeTimers();
    const d = mkdtempSync(join(tmpdir(), "benchmax-record-summary-"));
    try {
      const r = new RolloutRecorder(join(d, "run"), env, { summaryEveryMs: 1000, batchMs: 10 });
      const writes = vi.spyOn(r.runDir, "writeSummary");
      await vi.advanceTimersByTimeAsync(5000);
      // the first tick writes the empty recording's summary; an idle server rewrites nothing after it
      expect(writes).toHaveBeenCalledTimes(1);
      r.add(result(1));
      await vi.advanceTimersByTimeAsync(20);
      expect(r.written).toBe(1);
      await vi.advanceTimersByTimeAsync(5000);
      expect(writes).toHaveBeenCalledTimes(2);
      expect(JSON.parse(readFileSync(join(d, "run", "summary.json"), "utf8")).n).toBe(1);
      await r.close();
      expect(writes).toHaveBeenCalledTimes(3);
    } finally {
      vi.useRealTimers();
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe("serve --record: the dashboard's series (watch-series.json, since=series)", () => {
  /** The SSE events of `query` until `want` rollouts came (or the stream was read whole). */
  async function events(url: string, want: number) {
    const ac = new AbortController();
    const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` }, signal: ac.signal });
    expect(res.status).toBe(200);
    let raw = "";
    const dec = new TextDecoder();
    let out: Array<{ event?: string; id?: string; data?: string }> = [];
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      raw += dec.decode(chunk, { stream: true });
      out = raw
        .split("\n\n")
        .slice(0, -1)
        .map((block) =>
          Object.fromEntries(
            block
              .split("\n")
              .filter((l) => l.includes(": "))
              .map((l) => [l.slice(0, l.indexOf(": ")), l.slice(l.indexOf(": ") + 2)]),
          ),
        )
        .filter((e) => e.event);
      if (out.filter((e) => e.event === "rollout").length >= want) break;
    }
    ac.abort();
    return { raw, out };
  }

  it("offers the series of every rollout written (no gold), then only later rollouts; saved on close and taken again on restart", async () => {
    const d = mkdtempSync(join(tmpdir(), "benchmax-record-series-"));
    const srv = createServer();
    try {
      const r = new RolloutRecorder(join(d, "run"), env, { batchMs: 1 });
      const f = new RecordFeed({ file: r.runDir.resultsPath, token: TOKEN, pollMs: 3_600_000, live: r });
      srv.on("request", (req, res) => f.handle(req, res));
      await new Promise<void>((ok) => srv.listen(0, "127.0.0.1", ok));
      const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}${RECORD_FEED_PATH}?since=series`;
      for (let i = 0; i < 30; i++) r.add(result(i, { trainerStep: Math.floor(i / 10) }));
      await r.flush();
      const size = statSync(r.runDir.resultsPath).size;
      const pending = events(url, 5);
      await vi.waitFor(() => expect(f.clientCount).toBe(1), { timeout: 10_000 });
      for (let i = 30; i < 35; i++) r.add(result(i, { trainerStep: 3 }));
      await r.flush();
      const { raw, out } = await pending;
      expect(out[0]!.event).toBe("series");
      expect(Number(out[0]!.id)).toBe(size);
      const state = JSON.parse(out[0]!.data!);
      const s = LiveSeries.fromState(state);
      expect(s.total).toBe(30);
      expect(s.snapshot().x).toEqual([0, 1, 2]);
      expect(state.latest.at(-1).rolloutId).toBe("r29");
      expect(out.filter((e) => e.event === "rollout").map((e) => JSON.parse(e.data!).rolloutId)).toEqual([
        "r30",
        "r31",
        "r32",
        "r33",
        "r34",
      ]);
      expect(raw).not.toMatch(/GOLD|explain/);

      // closed: the checkpoint covers the whole file and draws what reading it draws (explain and all)
      f.close();
      await r.close();
      const full = new LiveSeries(1);
      new ResultsTail(r.runDir.resultsPath, (x) => full.add(x)).poll();
      const cp = loadCheckpoint(join(d, "run"));
      expect(cp).toMatchObject({ status: "loaded", offset: statSync(r.runDir.resultsPath).size });
      expect(cp.series!.snapshot()).toEqual(full.snapshot());
      expect(JSON.stringify(cp.series!.snapshot().latest)).toContain("GOLD-34");

      // recording into the same dir again: the series start from the checkpoint, not from an empty file
      const again = new RolloutRecorder(join(d, "run"), env, { batchMs: 1 });
      expect(again.keeper.current).toBe(true);
      again.add(result(35, { trainerStep: 3 }));
      await again.flush();
      expect(again.series()!.state.count).toBe(36);
      await again.close();
      // a feed without a recorder offers the run dir's checkpoint
      const fromDisk = new RecordFeed({ file: r.runDir.resultsPath, token: TOKEN, pollMs: 3_600_000 });
      srv.removeAllListeners("request");
      srv.on("request", (req, res) => fromDisk.handle(req, res));
      const disk = await events(url, 0);
      expect(Number(disk.out[0]!.id)).toBe(statSync(r.runDir.resultsPath).size);
      expect(LiveSeries.fromState(JSON.parse(disk.out[0]!.data!)).total).toBe(36);
      expect(disk.raw).not.toMatch(/GOLD|explain/);
      fromDisk.close();
    } finally {
      srv.closeAllConnections();
      await new Promise((ok) => srv.close(ok));
      rmSync(d, { recursive: true, force: true });
    }
  });

  it("without series to offer, since=series says so (null) and sends the whole recording", async () => {
    const d = mkdtempSync(join(tmpdir(), "benchmax-record-noseries-"));
    const srv = createServer();
    try {
      const r = new RolloutRecorder(join(d, "run"), env, { batchMs: 1 });
      for (let i = 0; i < 3; i++) r.add(result(i));
      await r.close();
      rmSync(join(d, "run", "watch-series.json"));
      const f = new RecordFeed({ file: r.runDir.resultsPath, token: TOKEN, pollMs: 3_600_000 });
      srv.on("request", (req, res) => f.handle(req, res));
      await new Promise<void>((ok) => srv.listen(0, "127.0.0.1", ok));
      const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}${RECORD_FEED_PATH}?since=series`;
      const { out } = await events(url, 3);
      expect(out[0]).toEqual({ event: "series", data: "null" });
      expect(out.filter((e) => e.event === "rollout")).toHaveLength(3);
      f.close();
    } finally {
      srv.closeAllConnections();
      await new Promise((ok) => srv.close(ok));
      rmSync(d, { recursive: true, force: true });
    }
  });
});
