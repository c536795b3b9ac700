import { existsSync, statSync } from "node:fs";
import { dirname } from "node:path";
import type { RolloutResult } from "../rollout-result.js";
import { LiveSeries, type SeriesState } from "./live-series.js";
import { ResultsTail } from "./results-tail.js";
import { loadCheckpoint, saveCheckpoint } from "./series-checkpoint.js";

export interface SeriesKeeperOptions {
  /** The pass threshold of the pass-rate curve (the env's; default 1). */
  passThreshold?: number;
  /**
   * Least time between two checkpoint writes (default 5 s). A write that took t ms waits, past that, until 1,000 t
   * rollouts were added (1 µs of writing per rollout) or 1,000 t ms went by.
   */
  everyMs?: number;
  /**
   * The file already holds lines this writer did not write (a recording appended to): start from its checkpoint, or
   * from 0, and read the rest of the file in the background (`catchUp`). Default false: the file starts empty.
   */
  existing?: boolean;
  /**
   * Whether the file holds every line the series does now (default: always). A writer that hands rollouts over
   * before their lines are written (`serve --record`) says no until they are, and no checkpoint is written meanwhile.
   */
  canSave?: () => boolean;
}

/**
 * The live series of a results.jsonl kept by the process that writes it (eval's ResultsWriter, `serve --record`), so
 * a watch of the run never reads the file to draw it: the writer reports each rollout with the bytes its line took
 * (`appended`), and the series and the byte offset they cover go to watch-series.json (series-checkpoint.ts) off the
 * append path: at most every `everyMs`, and then only once the rollouts added since pay at most 1 µs each for it
 * (a write that took t ms waits for 1,000 t rollouts) or 1,000 t ms went by (0.1 % of the time, for a slow run), and
 * on `close`. The checkpoint's digests are read back from the file at that offset when it is written, so the cost per
 * rollout is the series update alone. A crash between two writes leaves an older checkpoint: a watch reads on from
 * its offset.
 */
export class SeriesKeeper {
  series: LiveSeries;
  /** Bytes of results.jsonl the series holds: every line before it, none after. */
  offset = 0;
  /** The offset of the last checkpoint written (-1: none). */
  savedOffset = -1;
  /** Checkpoints written, and the time the last one took (ms). */
  saves = 0;
  lastSaveMs = 0;
  private readonly path: string;
  private readonly dir: string;
  private savedAt = performance.now();
  /** Rollouts added since the last checkpoint write. */
  private pending = 0;
  private timer?: NodeJS.Timeout;
  /** While the series lags the file (reading lines it did not see appended): the reader, and where the writer is. */
  private tail?: ResultsTail;
  private writerAt = 0;
  private catchNext?: NodeJS.Immediate;
  private catchLater?: NodeJS.Timeout;
  private closed = false;

  constructor(
    resultsPath: string,
    private readonly options: SeriesKeeperOptions = {},
  ) {
    this.path = resultsPath;
    this.dir = dirname(resultsPath);
    const threshold = options.passThreshold ?? 1;
    this.series = new LiveSeries(threshold);
    if (options.existing && existsSync(resultsPath)) {
      const cp = loadCheckpoint(this.dir, threshold);
      if (cp.series) {
        this.series = cp.series;
        this.offset = cp.offset;
        this.savedOffset = cp.offset;
      }
      this.writerAt = statSync(resultsPath).size;
      if (this.writerAt > this.offset) this.startCatchUp();
    }
    this.timer = setInterval(() => this.maybeSave(), Math.min(options.everyMs ?? 5000, 1000));
    this.timer.unref();
  }

  /** Whether the series holds every line written so far (false while the file's earlier lines are being read). */
  get current(): boolean {
    return this.tail === undefined;
  }

  /**
   * Lines the writer appended at `start` (the file's size before them), ending at `end`: `results` are their
   * rollouts, in file order. While the series lags the file they are left to the reader.
   */
  appended(results: readonly RolloutResult[], start: number, end: number): void {
    if (this.closed) return;
    this.writerAt = end;
    if (this.tail || start !== this.offset) {
      if (!this.tail) this.startCatchUp(); // bytes the series never saw (a torn write): read them from the file
      return;
    }
    for (const r of results) this.series.add(r);
    this.pending += results.length;
    this.offset = end;
  }

  /** One rollout appended as `bytes` bytes at the end of what the series holds. */
  add(r: RolloutResult, bytes: number): void {
    if (this.closed) return;
    if (this.tail) {
      this.writerAt += bytes;
      return;
    }
    this.series.add(r);
    this.pending++;
    this.offset += bytes;
    this.writerAt = this.offset;
  }

  /** The series and the offset they cover, as plain JSON (undefined while the series lags the file). */
  state(): { offset: number; state: SeriesState } | undefined {
    return this.tail ? undefined : { offset: this.offset, state: this.series.toState() };
  }

  private startCatchUp(): void {
    this.tail = new ResultsTail(
      this.path,
      (r) => this.series.add(r),
      this.offset,
      () => {
        this.series = new LiveSeries(this.series.passThreshold, this.series.keepLatest);
      },
    );
    this.catchUp();
  }

  /** Read a MiB of the lines the series lacks per turn of the event loop, until it reaches the writer. */
  private catchUp(): void {
    this.catchNext = undefined;
    this.catchLater = undefined;
    const tail = this.tail;
    if (this.closed || !tail) return;
    tail.poll(1 << 20);
    this.offset = tail.committed;
    if (this.offset >= this.writerAt) {
      this.tail = undefined;
      return;
    }
    // behind: the next MiB at the next turn; else a torn line waits for the writer's next append
    if (tail.behind) this.catchNext = setImmediate(() => this.catchUp());
    else this.catchLater = setTimeout(() => this.catchUp(), 200).unref();
  }

  /** Write the checkpoint if one is due (see the class): the writer calls it once its lines are in the file. */
  maybeSave(): void {
    if (this.closed || this.offset === this.savedOffset || this.tail) return;
    const since = performance.now() - this.savedAt;
    if (since < (this.options.everyMs ?? 5000)) return;
    if (this.pending * 0.001 < this.lastSaveMs && since < 1000 * this.lastSaveMs) return;
    this.save();
  }

  /** Write the checkpoint now (when the series holds something new). */
  save(): boolean {
    if (this.tail || this.offset === this.savedOffset || this.options.canSave?.() === false) return false;
    const t = performance.now();
    const ok = saveCheckpoint(this.dir, this.series, this.offset);
    this.lastSaveMs = performance.now() - t;
    this.savedAt = performance.now();
    if (ok) {
      this.pending = 0;
      this.savedOffset = this.offset;
      this.saves++;
    }
    return ok;
  }

  /**
   * The last checkpoint, and no more. A series still reading the file's earlier lines writes none (the previous
   * checkpoint stays: a watch reads on from its offset).
   */
  close(): void {
    if (this.closed) return;
    this.save();
    this.closed = true;
    this.tail = undefined;
    clearInterval(this.timer);
    if (this.catchNext) clearImmediate(this.catchNext);
    if (this.catchLater) clearTimeout(this.catchLater);
  }
}
