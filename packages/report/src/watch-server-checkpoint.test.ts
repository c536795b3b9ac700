import { appendFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHECKPOINT_FILE, LiveSeries, loadCheckpoint } from "@benchmax/core";
import { fullScan, recordedLines, recordedRow as row } from "@benchmax/core/testing";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startWatch, type WatchServer } from "./watch-server.js";

const lines = (from: number, to: number) => recordedLines(from, to);

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "benchmax-checkpoint-"));
  path = join(dir, "results.jsonl");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("startWatch with a checkpoint", () => {
  const open: WatchServer[] = [];
  afterEach(async () => {
    for (const w of open.splice(0)) await w.close();
  });
  async function watch(opts: Parameters<typeof startWatch>[1] = {}) {
    const w = await startWatch(dir, { pollMs: 20, ...opts });
    open.push(w);
    return w;
  }
  async function until(ok: () => boolean) {
    for (let i = 0; i < 2000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(ok()).toBe(true);
  }

  it("a restarted watch loads the checkpoint, reads only what was appended, and draws what a full read draws", async () => {
    writeFileSync(path, lines(0, 2000));
    const first = await watch();
    expect(first.startup.checkpoint).toBe("none");
    await until(() => first.caughtUp && first.series.total === 2000);
    await first.close();
    expect(existsSync(join(dir, CHECKPOINT_FILE))).toBe(true);

    appendFileSync(path, lines(2000, 2600));
    const second = await watch();
    expect(second.startup).toMatchObject({ checkpoint: "loaded", fromCheckpoint: 2000, readBeforeListen: 600 });
    await until(() => second.caughtUp && second.series.total === 2600);
    const cold = await watch({ checkpoint: false });
    await until(() => cold.caughtUp && cold.series.total === 2600);
    expect(cold.startup.checkpoint).toBe("off");
    expect(second.series.snapshot()).toEqual(cold.series.snapshot());
    const page = (await (await fetch(second.url.replace("/?", "/snapshot?"))).json()) as { total: number };
    expect(page.total).toBe(2600);
  });

  it("a file that shrinks while watched is read again from the start (nothing counted twice)", async () => {
    writeFileSync(path, lines(0, 400));
    const w = await watch();
    await until(() => w.caughtUp && w.series.total === 400);
    writeFileSync(path, lines(0, 150));
    await until(() => w.caughtUp && w.series.total === 150);
    expect(w.series.snapshot()).toEqual(fullScan(path).snapshot());
    await w.close();
    // the checkpoint now describes the shorter file
    expect(loadCheckpoint(dir, 1)).toMatchObject({ status: "loaded", offset: Buffer.byteLength(lines(0, 150)) });
  });

  it("a stale checkpoint is ignored: the restarted watch reads the new file whole", async () => {
    writeFileSync(path, lines(0, 300));
    const first = await watch();
    await until(() => first.caughtUp && first.series.total === 300);
    await first.close();
    writeFileSync(path, lines(5, 305));
    const second = await watch();
    expect(second.startup.checkpoint).toBe("stale");
    await until(() => second.caughtUp && second.series.total === 300);
    expect(second.series.snapshot()).toEqual(fullScan(path).snapshot());
  });
});

describe("startWatch of a URL: the recording server's series", () => {
  /** A stand-in recording feed: `since=series` gets the series of `rows` 0..seriesAt, then rows after. */
  async function feedServer(total: number, seriesAt: number) {
    const sent: string[] = [];
    const streams = new Set<import("node:http").ServerResponse>();
    const srv = createServer((req, res) => {
      sent.push(req.url ?? "");
      res.writeHead(200, { "content-type": "text/event-stream" });
      let from = Number(req.headers["last-event-id"] ?? 0);
      if (req.url?.includes("since=series") && req.headers["last-event-id"] === undefined) {
        const s = new LiveSeries(1);
        for (let i = 0; i < seriesAt; i++) s.add(row(i));
        res.write(`id: ${seriesAt}\nevent: series\ndata: ${JSON.stringify(s.toState())}\n\n`);
        from = seriesAt;
      }
      for (let i = from; i < total; i++) res.write(`id: ${i + 1}\nevent: rollout\ndata: ${JSON.stringify(row(i))}\n\n`);
      streams.add(res);
      req.on("close", () => streams.delete(res));
    });
    await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
    const close = async () => {
      srv.closeAllConnections();
      await new Promise((r) => srv.close(r));
    };
    return { url, sent, close };
  }
  const full = (n: number, passThreshold = 1) => {
    const s = new LiveSeries(passThreshold);
    for (let i = 0; i < n; i++) s.add(row(i));
    return s;
  };
  async function until(ok: () => boolean) {
    for (let i = 0; i < 2000 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(ok()).toBe(true);
  }

  it("paints from the server's series at once and follows only the rollouts after them", async () => {
    const f = await feedServer(3000, 2900);
    const w = await startWatch(f.url, { serverToken: "t", pollMs: 20 });
    try {
      expect(w.startup).toMatchObject({ checkpoint: "loaded", fromCheckpoint: 2900 });
      await until(() => w.series.total === 3000);
      expect(w.series.snapshot()).toEqual(full(3000).snapshot());
      expect(f.sent).toHaveLength(1);
    } finally {
      await w.close();
      await f.close();
    }
  });

  it("a pass threshold the series were not made with: every rollout is read instead", async () => {
    const f = await feedServer(500, 450);
    const w = await startWatch(f.url, { serverToken: "t", pollMs: 20, passThreshold: 0.5 });
    try {
      await until(() => w.series.total === 500);
      expect(w.startup.checkpoint).toBe("off");
      expect(w.series.snapshot()).toEqual(full(500, 0.5).snapshot());
    } finally {
      await w.close();
      await f.close();
    }
  });
});
