import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LiveSeries, MAX_POINTS } from "./live-series.js";
import { fullScan, recordedLines, recordedRow } from "./recorded-rows.js";
import { ResultsTail } from "./results-tail.js";
import { CHECKPOINT_FILE, loadCheckpoint, saveCheckpoint } from "./series-checkpoint.js";

const row = recordedRow;
const lines = (from: number, to: number) => recordedLines(from, to);

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "benchmax-checkpoint-"));
  path = join(dir, "results.jsonl");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Read `path` into a fresh series and save a checkpoint at the last complete line. */
function checkpointNow(passThreshold = 1): { series: LiveSeries; offset: number } {
  const series = new LiveSeries(passThreshold);
  const tail = new ResultsTail(path, (r) => series.add(r));
  tail.poll();
  expect(saveCheckpoint(dir, series, tail.committed)).toBe(true);
  return { series, offset: tail.committed };
}

describe("LiveSeries state", () => {
  it("round-trips through JSON: the same snapshot, and the same series after more rollouts (coarsening included)", () => {
    const a = new LiveSeries(1);
    for (let i = 0; i < 3000; i++) a.add(row(i));
    const b = LiveSeries.fromState(JSON.parse(JSON.stringify(a.toState())));
    expect(b.snapshot()).toEqual(a.snapshot());
    expect(b.toState()).toEqual(a.toState());
    // 3000 rollouts span 188 steps; 12,000 more pass MAX_POINTS steps, so buckets merge after the restore
    for (let i = 3000; i < 15_000; i++) {
      a.add(row(i));
      b.add(row(i));
    }
    expect(a.snapshot().width).toBeGreaterThan(1);
    expect(a.snapshot().x.length).toBeLessThanOrEqual(MAX_POINTS);
    expect(b.snapshot()).toEqual(a.snapshot());
  });

  it("refuses a state of another shape or with values out of range", () => {
    const a = new LiveSeries(1);
    for (let i = 0; i < 50; i++) a.add(row(i));
    const good = JSON.parse(JSON.stringify(a.toState()));
    const broken = [
      { ...good, v: 2 },
      { ...good, width: 3 },
      { ...good, buckets: [[...good.buckets[0].slice(0, 12)]] },
      { ...good, buckets: [[0, -1, ...good.buckets[0].slice(2)]] },
      { ...good, latest: [{ rolloutId: 1 }] },
      { ...good, buckets: [good.buckets[0].map((x: unknown, i: number) => (i === 10 ? { tool0: [999, 1] } : x))] },
      null,
    ];
    for (const s of broken) expect(() => LiveSeries.fromState(s)).toThrow(/series state/);
  });
});

describe("the watch checkpoint (watch-series.json)", () => {
  it("is absent at first: the file is read from the start", () => {
    writeFileSync(path, lines(0, 10));
    expect(loadCheckpoint(dir, 1)).toEqual({ offset: 0, status: "none" });
  });

  it("appended: loads, reads on from its offset, and ends equal to a full read (a torn line at save time included)", () => {
    writeFileSync(path, lines(0, 500));
    // a line half written when the checkpoint is taken: the checkpoint stops before it
    const next = lines(500, 501);
    appendFileSync(path, next.slice(0, 40));
    const { offset } = checkpointNow();
    expect(offset).toBe(Buffer.byteLength(lines(0, 500)));
    appendFileSync(path, next.slice(40) + lines(501, 900));

    const cp = loadCheckpoint(dir, 1);
    expect(cp.status).toBe("loaded");
    expect(cp.offset).toBe(offset);
    const series = cp.series!;
    expect(series.total).toBe(500);
    let read = 0;
    new ResultsTail(
      path,
      (r) => {
        series.add(r);
        read++;
      },
      cp.offset,
    ).poll();
    expect(read).toBe(400);
    expect(series.snapshot()).toEqual(fullScan(path).snapshot());
  });

  it("truncated below its offset: stale, read again", () => {
    writeFileSync(path, lines(0, 300));
    checkpointNow();
    writeFileSync(path, lines(0, 100));
    expect(loadCheckpoint(dir, 1)).toEqual({ offset: 0, status: "stale" });
  });

  it("rewritten with other rows (as long, or longer): stale, read again", () => {
    writeFileSync(path, lines(0, 300));
    const { offset } = checkpointNow();
    // same length, one byte changed near the end (the probe before the offset)
    const text = readFileSync(path, "utf8");
    const at = text.lastIndexOf('"rolloutId":"r29');
    writeFileSync(path, `${text.slice(0, at)}"rolloutId":"x29${text.slice(at + 16)}`);
    expect(Buffer.byteLength(readFileSync(path))).toBe(offset);
    expect(loadCheckpoint(dir, 1).status).toBe("stale");
    // a different run in its place: its first bytes differ
    writeFileSync(path, lines(1, 1000));
    expect(loadCheckpoint(dir, 1).status).toBe("stale");
    // results.jsonl gone
    rmSync(path);
    expect(loadCheckpoint(dir, 1).status).toBe("stale");
  });

  it("damaged, or made with another pass threshold: not used", () => {
    writeFileSync(path, lines(0, 200));
    checkpointNow(0.5);
    expect(loadCheckpoint(dir, 1).status).toBe("other-settings");
    expect(loadCheckpoint(dir, 0.5).status).toBe("loaded");
    const raw = readFileSync(join(dir, CHECKPOINT_FILE), "utf8");
    writeFileSync(join(dir, CHECKPOINT_FILE), raw.slice(0, raw.length / 2));
    expect(loadCheckpoint(dir, 0.5).status).toBe("unreadable");
    writeFileSync(join(dir, CHECKPOINT_FILE), JSON.stringify({ ...JSON.parse(raw), offset: -5 }));
    expect(loadCheckpoint(dir, 0.5).status).toBe("unreadable");
  });
});
