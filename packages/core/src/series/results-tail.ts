import { closeSync, existsSync, openSync, readSync, statSync } from "node:fs";
import type { RolloutResult } from "../rollout-result.js";

const NL = 0x0a;

/**
 * Follows a run dir's results.jsonl as it grows (an `eval` in progress, or a `serve --record` directory), a MiB at a
 * time from the last offset, feeding each complete line to `onLine`. Lines are split on bytes (a UTF-8 newline never
 * sits inside a multi-byte character), so `committed` is always the byte offset just past the last complete line: a
 * torn last line waits for its end, and a checkpoint taken at `committed` resumes exactly there.
 */
export class ResultsTail {
  private pos: number;
  private carry: Buffer = Buffer.alloc(0);
  private readonly buf = Buffer.allocUnsafe(1 << 20);
  /** Whether the last poll stopped at its byte budget with more of the file left. */
  behind = false;
  /** Set when the file shrank below what was read (truncated or replaced): reading started again at 0. */
  restarted = 0;

  constructor(
    readonly path: string,
    private readonly onLine: (r: RolloutResult) => void,
    /** Where to start: the offset of a line start (a checkpoint's), default 0. */
    start = 0,
    /** Called before reading starts again at 0 after the file shrank (the caller drops what it built). */
    private readonly onRestart?: () => void,
  ) {
    this.pos = start;
  }

  /** Bytes of the file consumed through the last complete line. */
  get committed(): number {
    return this.pos - this.carry.length;
  }

  /** Read what was appended since the last poll, at most `maxBytes` of it (the rest on the next poll). */
  poll(maxBytes = Number.POSITIVE_INFINITY): number {
    this.behind = false;
    if (!existsSync(this.path)) return 0;
    const size = statSync(this.path).size;
    if (size < this.pos) {
      this.pos = 0;
      this.carry = Buffer.alloc(0);
      this.restarted++;
      this.onRestart?.();
    }
    if (size === this.pos) return 0;
    const fd = openSync(this.path, "r");
    let lines = 0;
    let read = 0;
    try {
      for (;;) {
        if (read >= maxBytes) {
          this.behind = this.pos < size;
          break;
        }
        const n = readSync(fd, this.buf, 0, this.buf.length, this.pos);
        if (n === 0) break;
        read += n;
        this.pos += n;
        const chunk = this.carry.length
          ? Buffer.concat([this.carry, this.buf.subarray(0, n)])
          : this.buf.subarray(0, n);
        let start = 0;
        for (let nl = chunk.indexOf(NL); nl >= 0; nl = chunk.indexOf(NL, start)) {
          const line = chunk.toString("utf8", start, nl).trim();
          start = nl + 1;
          if (!line) continue;
          try {
            const r = JSON.parse(line) as RolloutResult;
            if (r && typeof r.taskId === "string" && typeof r.outcome === "string") {
              this.onLine(r);
              lines++;
            }
          } catch {
            /* a malformed line is skipped; the run dir's own readers report it */
          }
        }
        // the torn end is copied out: `buf` is reused by the next read
        this.carry = Buffer.from(chunk.subarray(start));
      }
    } finally {
      closeSync(fd);
    }
    return lines;
  }
}
