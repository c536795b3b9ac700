import { closeSync, fstatSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import {
  type ArtifactStore,
  type EnvShape,
  passThresholdOf,
  type RolloutResult,
  RunAggregate,
  RunDir,
  SeriesKeeper,
  type SeriesState,
} from "@benchmax/core";
import { PendingLines } from "./pending-lines.js";
import type { PromMetrics } from "./prometheus.js";
import type { RolloutTags } from "./service/rollout-service.js";

/** Most rollouts waiting to be written; past it a finished rollout is dropped (and counted), never buffered. */
const DEFAULT_MAX_QUEUE = 10_000;
/** How long a finished rollout waits for others to share its write (ms). */
const DEFAULT_BATCH_MS = 25;
/** How long a write that failed waits before it is tried again (ms). */
const RETRY_MS = 1000;

/**
 * The tags in a create / reset request: `trainer_step`, `global_step` or `step` (SkyRL's global step, the cookbook's
 * batch index), and `group_id`, at the top level of the body or under `metadata`. Anything else is ignored.
 */
export function tagsOf(body: Record<string, unknown> | undefined): RolloutTags | undefined {
  if (!body) return undefined;
  const meta = body.metadata && typeof body.metadata === "object" ? (body.metadata as Record<string, unknown>) : {};
  const pick = (k: string) => body[k] ?? meta[k];
  const tags: RolloutTags = {};
  for (const k of ["trainer_step", "global_step", "step"]) {
    const v = pick(k);
    const n = typeof v === "string" && v.trim() !== "" ? Number(v) : v;
    if (typeof n === "number" && Number.isFinite(n)) {
      tags.step = n;
      break;
    }
  }
  const g = pick("group_id");
  if ((typeof g === "string" && g.length > 0 && g.length <= 200) || typeof g === "number") tags.group = String(g);
  return tags.step !== undefined || tags.group !== undefined ? tags : undefined;
}

/**
 * A batch of lines just appended to results.jsonl, for the live feed: where it begins in the file, its bytes as
 * written, and per line (offsets in `bytes`) where it ends and where its record without `explain` (what the feed may
 * show) ends, last brace excluded (`PendingLines`). `bytes` is valid only during the call.
 */
export interface RecordedBatch {
  start: number;
  bytes: Buffer;
  ends: readonly number[];
  feedEnds: readonly number[];
}

/**
 * `serve --record DIR`: every finished rollout, from every transport, appended to DIR/results.jsonl as it ends (the
 * lines an eval run dir holds, plus `trainerStep`), with DIR/run.json and a DIR/summary.json rewritten every few
 * seconds and on close. Writing happens off the request path: a rollout's line is encoded when it is added, into a
 * buffer outside the JS heap (`PendingLines`), and the lines added within `batchMs` (25 ms) of the first are appended
 * in one synchronous write (no libuv worker to wake; a page-cache append of a few KB): at most 40 writes a second,
 * whatever the rate. A crash (not a signal: `close` writes what waits) loses the rollouts of the last batch window.
 * Memory is bounded by `maxQueue` lines waiting to be written (past it a rollout is dropped and counted) plus the
 * summary's per-task and per-group aggregates. Subscribers (the live feed) get each written batch.
 *
 * The run's aggregates (summary.json) and the dashboard's series (core's SeriesKeeper) take each rollout when it is
 * added; the series are saved beside the file as watch-series.json only at a write's end (every line they hold is in
 * the file), every few seconds and on close, so `benchmax watch DIR` draws the run without reading results.jsonl, and
 * the feed offers them to `watch URL` (`series`, after writing what waits). Recording into a run dir that already
 * holds rollouts starts from its checkpoint and reads the rest of the file in the background.
 *
 * A write that fails (a full disk) is tried again a second later with the lines added since, from the byte where it
 * stopped, so the file never keeps half a line once a write succeeds; meanwhile new rollouts are dropped past
 * `maxQueue`. Lines still unwritten at `close` are `lost`: counted in summary.json's `recording`, and in its
 * aggregates (which took them when they were added).
 */
export class RolloutRecorder {
  private readonly pending = new PendingLines();
  /** The write of what is pending, due `batchMs` after the first line of the batch (or a retry after a failure). */
  private due?: NodeJS.Timeout;
  private readonly fd: number;
  /** Bytes in results.jsonl: where the next batch begins. */
  private size: number;
  private readonly agg: RunAggregate;
  private readonly startedAt = new Date().toISOString();
  private readonly t0 = Date.now();
  private readonly timer: NodeJS.Timeout;
  /** The summary is not rewritten before this time (see `writeSummary`). */
  private summaryDueAt = 0;
  /** Rollouts written or dropped when the summary was last written: an idle recording does not rewrite it. */
  private summarized = -1;
  private readonly listeners = new Set<(batch: RecordedBatch) => void>();
  /** The kinds of error already shown (each is shown once, not once per rollout). */
  private readonly shown = new Set<"serialize" | "write">();
  /** Rollouts whose lines are in the file. */
  written = 0;
  /** Rollouts never recorded: past `maxQueue`, or a record JSON cannot hold. */
  dropped = 0;
  /** Rollouts recorded (in the aggregates and series) whose lines were still unwritten at `close` (a failing disk). */
  lost = 0;
  private closed = false;
  /** The run dir (core's RunDir): also the store for recorded rollouts' final-state artifacts. */
  readonly runDir: RunDir;
  /** The dashboard's series of what is in results.jsonl, and its checkpoint (watch-series.json). */
  readonly keeper: SeriesKeeper;

  constructor(
    readonly dir: string,
    private readonly env: EnvShape,
    private readonly options: {
      maxQueue?: number;
      /** How long a finished rollout waits for others to share its write (default 25 ms). */
      batchMs?: number;
      summaryEveryMs?: number;
      prom?: PromMetrics;
      /** Least time between two writes of watch-series.json (default 5 s). */
      seriesEveryMs?: number;
      /** Where the served tasks came from (a dataset path; default the env's fixtures) and the settings that shape
       * scores (split, env options): written to run.json, so `benchmax rescore` finds the tasks again. */
      dataset?: string;
      config?: Record<string, unknown>;
    } = {},
  ) {
    mkdirSync(dir, { recursive: true });
    this.runDir = new RunDir(dir);
    this.fd = openSync(this.runDir.resultsPath, "a");
    this.size = fstatSync(this.fd).size;
    this.agg = new RunAggregate(passThresholdOf(env));
    this.keeper = new SeriesKeeper(this.runDir.resultsPath, {
      passThreshold: passThresholdOf(env),
      existing: this.size > 0,
      // a checkpoint only while every line the series holds is in the file
      canSave: () => this.pending.count === 0 && this.lost === 0,
      ...(options.seriesEveryMs !== undefined ? { everyMs: options.seriesEveryMs } : {}),
    });
    writeFileSync(
      join(dir, "run.json"),
      `${JSON.stringify(
        {
          env: env.name,
          dataset: options.dataset ?? "fixtures",
          config: options.config ?? {},
          policy: "served",
          mode: "serve --record",
          startedAt: this.startedAt,
        },
        null,
        2,
      )}\n`,
    );
    this.timer = setInterval(() => {
      if (this.written + this.dropped !== this.summarized && Date.now() >= this.summaryDueAt) this.writeSummary();
    }, options.summaryEveryMs ?? 5000);
    this.timer.unref();
  }

  /**
   * A finished rollout's record, from the rollout service's `onFinished` (every transport): its line is encoded now
   * and written with the batch; the aggregates and series take it now. Past `maxQueue` lines waiting it is dropped
   * and counted, as is a record JSON cannot hold (a cycle, a BigInt): never a crash.
   */
  add(result: RolloutResult): void {
    if (this.closed) return;
    if (this.pending.count >= (this.options.maxQueue ?? DEFAULT_MAX_QUEUE)) {
      this.dropped++;
      this.options.prom?.record("dropped");
      return;
    }
    let bytes: number;
    try {
      bytes = this.pending.add(result);
    } catch (e) {
      this.dropped++;
      this.options.prom?.record("dropped");
      this.showError("serialize", `--record could not serialize rollout ${String(result.rolloutId)}: ${e}`);
      return;
    }
    this.keeper.add(result, bytes);
    this.agg.add(result);
    this.due ??= setTimeout(this.onDue, this.options.batchMs ?? DEFAULT_BATCH_MS);
  }

  /**
   * The dashboard's series of results.jsonl up to `offset` (every line before it), as plain JSON, once what waits is
   * written; undefined while the earlier lines of a run recorded into again are still being read, or while a write
   * fails. Holds `explain` (the feed strips it).
   */
  series(): { offset: number; state: SeriesState } | undefined {
    return this.write() ? this.keeper.state() : undefined;
  }

  /** Call `fn` with each batch once it is in the file; returns the unsubscribe function. */
  subscribe(fn: (batch: RecordedBatch) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private readonly onDue = (): void => {
    this.due = undefined;
    if (!this.write() && !this.closed) this.due = setTimeout(this.onDue, RETRY_MS);
  };

  /** Append what is pending in one write; false when it failed (it stays pending, from the byte it stopped at). */
  private write(): boolean {
    const p = this.pending;
    if (p.count === 0) return true;
    const bytes = p.bytes;
    try {
      while (p.written < bytes.length) p.written += writeSync(this.fd, bytes, p.written, bytes.length - p.written);
    } catch (e) {
      this.showError(
        "write",
        `--record could not write to ${this.runDir.resultsPath} (tried again in ${RETRY_MS} ms): ${e}`,
      );
      return false;
    }
    const start = this.size;
    this.size += bytes.length;
    this.written += p.count;
    this.options.prom?.record("written", p.count);
    if (this.listeners.size) {
      const out: RecordedBatch = { start, bytes, ends: p.ends, feedEnds: p.feedEnds };
      for (const fn of this.listeners) {
        try {
          fn(out);
        } catch {
          /* a subscriber never stops the recording */
        }
      }
    }
    p.clear();
    this.keeper.maybeSave();
    return true;
  }

  private showError(kind: "serialize" | "write", message: string): void {
    if (this.shown.has(kind)) return;
    this.shown.add(kind);
    console.error(`benchmax: ${message}`);
  }

  private writeSummary(): void {
    const t = performance.now();
    this.write(); // the summary counts what the file holds
    this.summarized = this.written + this.dropped;
    try {
      const s = this.agg.summary({
        env: this.env.name,
        policy: "served",
        passThreshold: passThresholdOf(this.env),
        startedAt: this.startedAt,
        durationMs: Date.now() - this.t0,
      });
      // written whole (a temp file renamed): a reader never sees half a summary
      this.runDir.writeSummary({
        ...s,
        recording: { written: this.written, dropped: this.dropped, ...(this.lost ? { lost: this.lost } : {}) },
      } as typeof s);
    } catch {
      /* the next tick tries again */
    }
    // the summary's cost grows with the tasks and groups seen: a slow one waits 200x its time before the next, so
    // rewriting it never takes more than 0.5 % of the process's time
    this.summaryDueAt = Date.now() + 199 * (performance.now() - t);
  }

  /** Where recorded rollouts' final-state artifacts go (content-addressed): the episodes' `artifacts` option. */
  get artifacts(): ArtifactStore {
    return this.runDir;
  }

  /** Write every line waiting now (tests, benchmarks); a failing write leaves them waiting for its retry. */
  async flush(): Promise<void> {
    this.write();
  }

  /** Write what waits, the final summary, and close the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.due) clearTimeout(this.due);
    clearInterval(this.timer);
    if (!this.write()) {
      this.lost = this.pending.count;
      this.options.prom?.record("dropped", this.lost);
      console.error(
        `benchmax: --record lost ${this.lost} rollout(s): their lines could not be written to ${this.runDir.resultsPath}`,
      );
      this.pending.clear();
    }
    this.writeSummary();
    this.keeper.close();
    this.listeners.clear();
    closeSync(this.fd);
  }
}
