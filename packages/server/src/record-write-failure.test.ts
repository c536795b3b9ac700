/**
 * `serve --record` on a disk that fails (ENOSPC): a failed write keeps its lines and is tried again, from the byte it
 * stopped at, so no rollout is lost and no half line stays in the file; what still cannot be written at close is
 * counted as lost in summary.json, and the series checkpoint never claims lines the file lacks.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { EnvShape } from "@benchmax/core";
import { recordedRow as result } from "@benchmax/core/testing";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";

/** How the next writes go: "ok", "fail" (ENOSPC), or "half" (half the bytes, then ENOSPC). */
const disk = vi.hoisted(() => ({ mode: "ok" as "ok" | "fail" | "half", failures: 0 }));
vi.mock("node:fs", async (importOriginal) => {
  const fs = await importOriginal<typeof import("node:fs")>();
  const enospc = () => Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
  const writeSync = ((fd: number, buf: Buffer, offset: number, length: number, ...rest: unknown[]) => {
    if (disk.mode === "fail") {
      disk.failures++;
      throw enospc();
    }
    if (disk.mode === "half" && length > 1) {
      disk.mode = "fail"; // the rest of this write fails
      return (fs.writeSync as (...a: unknown[]) => number)(fd, buf, offset, Math.floor(length / 2), ...rest);
    }
    return (fs.writeSync as (...a: unknown[]) => number)(fd, buf, offset, length, ...rest);
  }) as typeof fs.writeSync;
  return { ...fs, default: { ...fs, writeSync }, writeSync };
});

const { RolloutRecorder } = await import("./record.js");

const env: EnvShape = { name: "disk", capabilities: { reward: { passThreshold: 1 } } };
const dir = mkdtempSync(join(tmpdir(), "benchmax-record-disk-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
afterEach(() => {
  disk.mode = "ok";
  vi.restoreAllMocks();
});

const lines = (path: string) => readFileSync(path, "utf8").split("\n").filter(Boolean);

describe("--record on a failing disk", () => {
  it("keeps a failed write's lines and writes them, whole, once the disk takes them again", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const rec = new RolloutRecorder(join(dir, "retry"), env, { batchMs: 1 });
    rec.add(result(0));
    await rec.flush();
    disk.mode = "half"; // half of the next batch lands, then the disk is full
    for (let i = 1; i <= 4; i++) rec.add(result(i));
    await rec.flush();
    expect(rec.written).toBe(1);
    expect(errors.mock.calls.join("\n")).toMatch(/could not write .*ENOSPC/);
    // a follower asking for the series now gets none: they hold lines the file lacks
    expect(rec.series()).toBeUndefined();
    rec.add(result(5)); // joins the waiting lines
    disk.mode = "ok";
    await vi.waitFor(() => expect(rec.written).toBe(6), { timeout: 10_000 }); // the retry, a second later
    const got = lines(rec.runDir.resultsPath).map((l) => JSON.parse(l).rolloutId);
    expect(got).toEqual(["r0", "r1", "r2", "r3", "r4", "r5"]);
    expect(rec.series()?.offset).toBe(readFileSync(rec.runDir.resultsPath).length);
    await rec.close();
    const summary = JSON.parse(readFileSync(join(dir, "retry", "summary.json"), "utf8"));
    expect(summary.recording).toEqual({ written: 6, dropped: 0 });
    expect(summary.n).toBe(6);
  });

  it("counts what is still unwritten at close as lost, and leaves the checkpoint at what the file holds", async () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => {});
    const rec = new RolloutRecorder(join(dir, "lost"), env, { batchMs: 1, seriesEveryMs: 0 });
    for (let i = 0; i < 2; i++) rec.add(result(i));
    await rec.flush();
    const held = readFileSync(rec.runDir.resultsPath).length;
    disk.mode = "fail";
    for (let i = 2; i < 5; i++) rec.add(result(i));
    await rec.close();
    expect(rec.lost).toBe(3);
    expect(errors.mock.calls.join("\n")).toMatch(/lost 3 rollout\(s\)/);
    expect(lines(rec.runDir.resultsPath)).toHaveLength(2);
    const summary = JSON.parse(readFileSync(join(dir, "lost", "summary.json"), "utf8"));
    expect(summary.recording).toEqual({ written: 2, dropped: 0, lost: 3 });
    // the aggregates took every rollout when it was added: the summary says which of them the file lacks
    expect(summary.n).toBe(5);
    const checkpoint = join(dir, "lost", "watch-series.json");
    expect(existsSync(checkpoint)).toBe(true);
    expect(JSON.parse(readFileSync(checkpoint, "utf8")).offset).toBe(held);
  });
});
