import { appendFileSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ResultsWriter } from "../results-file.js";
import type { RolloutResult } from "../rollout-result.js";
import { fullScan, recordedLines, recordedRow } from "./recorded-rows.js";
import { ResultsTail } from "./results-tail.js";
import { CHECKPOINT_FILE, loadCheckpoint } from "./series-checkpoint.js";
import { SeriesKeeper } from "./series-keeper.js";

/** A recorded rollout with a gold in `explain` (which a series never carries). */
const row = (i: number): RolloutResult => ({ ...recordedRow(i), explain: { gold: `${i + 1}` } });
const lines = (from: number, to: number) => recordedLines(from, to, row);

let dir: string;
let path: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "benchmax-keeper-"));
  path = join(dir, "results.jsonl");
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const until = async (ok: () => boolean) => {
  for (let i = 0; i < 5000 && !ok(); i++) await new Promise((r) => setImmediate(r));
  expect(ok()).toBe(true);
};

describe("eval's ResultsWriter keeps the series", () => {
  it("closed: the checkpoint covers every byte written and draws what a full read of the file draws", async () => {
    const w = await ResultsWriter.open(path, { series: { passThreshold: 0.5 } });
    for (let i = 0; i < 1500; i++) w.write(row(i));
    w.close();
    const cp = loadCheckpoint(dir);
    expect(cp.status).toBe("loaded");
    expect(cp.offset).toBe(statSync(path).size);
    expect(cp.series!.passThreshold).toBe(0.5);
    expect(cp.series!.snapshot()).toEqual(fullScan(path, 0.5).snapshot());
    // a watch asking for another pass threshold does not take it
    expect(loadCheckpoint(dir, 1).status).toBe("other-settings");
  });

  it("writes the checkpoint on its own once `everyMs` went by (fake clock), not before", async () => {
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval", "performance"] });
    try {
      const w = await ResultsWriter.open(path, { series: { passThreshold: 1, everyMs: 5000 } });
      for (let i = 0; i < 100; i++) w.write(row(i));
      vi.advanceTimersByTime(4000);
      expect(existsSync(join(dir, CHECKPOINT_FILE))).toBe(false);
      vi.advanceTimersByTime(2000);
      expect(loadCheckpoint(dir, 1)).toMatchObject({ status: "loaded", offset: statSync(path).size });
      expect(w.keeper!.saves).toBe(1);
      // nothing new: no second write
      vi.advanceTimersByTime(60_000);
      expect(w.keeper!.saves).toBe(1);
      w.close();
    } finally {
      vi.useRealTimers();
    }
  });

  it("killed between two checkpoint writes: the older checkpoint plus the tail after its offset is the whole run", async () => {
    const w = await ResultsWriter.open(path, { series: { passThreshold: 1 } });
    for (let i = 0; i < 700; i++) w.write(row(i));
    expect(w.keeper!.save()).toBe(true);
    const at = statSync(path).size;
    for (let i = 700; i < 1000; i++) w.write(row(i)); // then the process dies: no close, no later checkpoint
    const cp = loadCheckpoint(dir, 1);
    expect(cp).toMatchObject({ status: "loaded", offset: at });
    const s = cp.series!;
    new ResultsTail(path, (r) => s.add(r), cp.offset).poll();
    expect(s.total).toBe(1000);
    expect(s.snapshot()).toEqual(fullScan(path).snapshot());
    w.close();
  });

  it("a resumed run (kept lines rewritten) starts its series from the kept rollouts", async () => {
    writeFileSync(path, lines(0, 300));
    const kept = Array.from({ length: 200 }, (_, i) => row(i));
    const w = await ResultsWriter.open(path, { keep: kept, series: { passThreshold: 1 } });
    for (let i = 200; i < 450; i++) w.write(row(i));
    w.close();
    const cp = loadCheckpoint(dir, 1);
    expect(cp.offset).toBe(statSync(path).size);
    expect(cp.series!.total).toBe(450);
    expect(cp.series!.snapshot()).toEqual(fullScan(path).snapshot());
  });

  it("a checkpoint of an earlier run in the same dir is refused once results.jsonl is rewritten", async () => {
    const w = await ResultsWriter.open(path, { series: { passThreshold: 1 } });
    for (let i = 0; i < 100; i++) w.write(row(i));
    w.close();
    const again = await ResultsWriter.open(path); // a run without the series: the old checkpoint stays on disk
    for (let i = 5; i < 300; i++) again.write(row(i));
    again.close();
    expect(existsSync(join(dir, CHECKPOINT_FILE))).toBe(true);
    expect(loadCheckpoint(dir, 1).status).toBe("stale");
  });
});

describe("SeriesKeeper on a file that already holds lines (serve --record appending to a run)", () => {
  /** A writer appending `from..to` to the file as `serve --record` does: one batch, then `appended`. */
  const append = (k: SeriesKeeper, from: number, to: number) => {
    const start = statSync(path).size;
    const text = lines(from, to);
    appendFileSync(path, text);
    k.appended(
      Array.from({ length: to - from }, (_, j) => row(from + j)),
      start,
      start + Buffer.byteLength(text),
    );
  };

  it("with no checkpoint: reads the earlier lines in the background while batches are appended, then follows", async () => {
    writeFileSync(path, lines(0, 6000)); // > 1 MiB: read over several turns
    const k = new SeriesKeeper(path, { existing: true });
    expect(k.current).toBe(false);
    expect(k.state()).toBeUndefined();
    append(k, 6000, 6100); // appended while the earlier lines are read: taken from the file
    await until(() => k.current);
    append(k, 6100, 6200);
    expect(k.offset).toBe(statSync(path).size);
    expect(k.series.total).toBe(6200);
    expect(k.series.snapshot()).toEqual(fullScan(path).snapshot());
    expect(k.state()!.offset).toBe(k.offset);
    k.close();
    expect(loadCheckpoint(dir, 1)).toMatchObject({ status: "loaded", offset: statSync(path).size });
  });

  it("with a checkpoint: reads only the lines after its offset", async () => {
    const w = await ResultsWriter.open(path, { series: { passThreshold: 1 } });
    for (let i = 0; i < 400; i++) w.write(row(i));
    w.close();
    appendFileSync(path, lines(400, 450)); // written by a process that kept no series
    const k = new SeriesKeeper(path, { existing: true });
    expect(k.offset).toBeGreaterThan(0);
    await until(() => k.current);
    append(k, 450, 500);
    expect(k.series.snapshot()).toEqual(fullScan(path).snapshot());
    k.close();
  });

  it("a batch whose bytes the series did not see (a torn write before it) is read from the file, not skipped", async () => {
    writeFileSync(path, "");
    const k = new SeriesKeeper(path, { existing: true });
    append(k, 0, 10);
    appendFileSync(path, '{"taskId":"t0","rollo'); // a write that failed part way
    append(k, 10, 20);
    await until(() => k.current);
    // the torn line and the next one make one malformed line, skipped as a full read skips it
    expect(k.series.snapshot()).toEqual(fullScan(path).snapshot());
    expect(k.offset).toBe(statSync(path).size);
    k.close();
  });
});
