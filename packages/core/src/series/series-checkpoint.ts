import { createHash } from "node:crypto";
import { closeSync, openSync, readFileSync, readSync, renameSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { LiveSeries } from "./live-series.js";

/** The watch server's checkpoint in a run dir, beside results.jsonl. */
export const CHECKPOINT_FILE = "watch-series.json";
/** Bytes hashed at the head of results.jsonl and just before the checkpoint's offset. */
const PROBE = 64 * 1024;

/**
 * The downsampled series of results.jsonl up to `offset` (a line boundary), and what validates them against the file:
 * the SHA-256 of its first bytes and of the bytes just before `offset`. results.jsonl is append-only, so a file that
 * still holds those bytes is the same file grown (read on from `offset`); one that is shorter, or whose bytes differ
 * (rewritten, replaced), is read again from the start.
 */
interface Checkpoint {
  v: 1;
  offset: number;
  head: string;
  tail: string;
  series: unknown;
}

/** SHA-256 of `length` bytes of the file at `start` (null when the file holds fewer). */
function hashRange(fd: number, start: number, length: number): string | null {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, start + got);
    if (n === 0) return null;
    got += n;
  }
  return createHash("sha256").update(buf).digest("hex");
}

function probes(fd: number, offset: number): { head: string; tail: string } | null {
  const head = hashRange(fd, 0, Math.min(PROBE, offset));
  const tailStart = Math.max(0, offset - PROBE);
  const tail = hashRange(fd, tailStart, offset - tailStart);
  return head === null || tail === null ? null : { head, tail };
}

export type CheckpointLoad =
  | { series: LiveSeries; offset: number; status: "loaded" }
  | { series?: undefined; offset: 0; status: "none" | "stale" | "unreadable" | "other-settings" };

/**
 * The series saved for `dir`'s results.jsonl, when its checkpoint is still valid for the file: status "loaded" and
 * the offset to read on from. No checkpoint ("none"), a file that no longer matches it ("stale": shorter, rewritten
 * or replaced), a damaged one ("unreadable") or one made with another pass threshold ("other-settings") give no
 * series: the caller reads results.jsonl from the start. `passThreshold` undefined takes the checkpoint's (the
 * writer's env's).
 */
export function loadCheckpoint(dir: string, passThreshold?: number, resultsFile = "results.jsonl"): CheckpointLoad {
  let raw: string;
  try {
    raw = readFileSync(join(dir, CHECKPOINT_FILE), "utf8");
  } catch {
    return { offset: 0, status: "none" };
  }
  let cp: Checkpoint;
  let series: LiveSeries;
  try {
    cp = JSON.parse(raw) as Checkpoint;
    if (cp?.v !== 1 || !Number.isInteger(cp.offset) || cp.offset < 0) throw new Error("shape");
    series = LiveSeries.fromState(cp.series);
  } catch {
    return { offset: 0, status: "unreadable" };
  }
  if (passThreshold !== undefined && series.passThreshold !== passThreshold)
    return { offset: 0, status: "other-settings" };
  let fd: number;
  try {
    fd = openSync(join(dir, resultsFile), "r");
  } catch {
    return { offset: 0, status: "stale" };
  }
  try {
    if (statSync(join(dir, resultsFile)).size < cp.offset) return { offset: 0, status: "stale" };
    const now = probes(fd, cp.offset);
    if (!now || now.head !== cp.head || now.tail !== cp.tail) return { offset: 0, status: "stale" };
  } finally {
    closeSync(fd);
  }
  return { series, offset: cp.offset, status: "loaded" };
}

/**
 * Save `series` as the state of `dir`'s results.jsonl up to `offset` (a line boundary): written whole to a temp file
 * and renamed, so a reader never sees half of it. Returns false when it could not be written (a read-only run dir:
 * the next watch reads the file again).
 */
export function saveCheckpoint(
  dir: string,
  series: LiveSeries,
  offset: number,
  resultsFile = "results.jsonl",
): boolean {
  const path = join(dir, CHECKPOINT_FILE);
  const tmp = `${path}.${process.pid}.tmp`;
  try {
    const fd = openSync(join(dir, resultsFile), "r");
    let p: ReturnType<typeof probes>;
    try {
      p = probes(fd, offset);
    } finally {
      closeSync(fd);
    }
    if (!p) return false;
    const cp: Checkpoint = { v: 1, offset, ...p, series: series.toState() };
    writeFileSync(tmp, JSON.stringify(cp));
    renameSync(tmp, path);
    return true;
  } catch {
    try {
      unlinkSync(tmp);
    } catch {
      /* never written */
    }
    return false;
  }
}
