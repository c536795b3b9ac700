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
import type { PromMetrics } from "./prometheus.js";
import type { RolloutTags } from "./service/rollout-service.js";

/** Most rollouts waiting to be written; past it a finished rollout is dropped (and counted), never buffered. */
const DEFAULT_MAX_QUEUE = 10_000;
/** How long a finished rollout waits for others to share its write (ms). */
const DEFAULT_BATCH_MS = 25;

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
 * A batch of lines just appended to results.jsonl, for the live feed: where it begins in the file, the byte offset
 * past each line (the line's feed event id), and each line without its `explain` (what the feed may show).
 */
export interface RecordedBatch {
  start: number;
  ends: number[];
  lines: string[];
}

/**
 * A finished rollout as its results.jsonl line and as the feed shows it (without `explain`: the gold beside the
 * extracted answer, diff lines that may quote gold values), serialized once: the file's line is the feed's with
 * `explain` appended.
 */
export function recordLines(r: RolloutResult): { file: string; feed: string } {
  const explain = r.explain;
  if (explain === undefined) {
    const s = JSON.stringify(r);
    return { file: s, feed: s };
  }
  r.explain = undefined;
  let feed: string;
  try {
    feed = JSON.stringify(r);
  } finally {
    r.explain = explain;
  }
  const ex = JSON.stringify(explain);
  if (ex === undefined) return { file: feed, feed };
  return { file: feed === "{}" ? `{"explain":${ex}}` : `${feed.slice(0, -1)},"explain":${ex}}`, feed };
}

/**
 * `serve --record DIR`: every finished rollout, from every transport, appended to DIR/results.jsonl as it ends (the
 * lines an eval run dir holds, plus `trainerStep`), with DIR/run.json and a DIR/summary.json rewritten every few
 * seconds and on close. Writing happens off the request path: the rollouts finished within `batchMs` (25 ms) of the
 * first are serialized once each and appended in one synchronous write (no libuv worker to wake; a page-cache
 * append of a few KB): at most 40 writes a second, whatever the rate. A crash (not a signal: `close` writes what
 * waits) loses the rollouts of the last batch window. Memory is bounded by `maxQueue` rollouts waiting to be written (past it they are dropped and counted)
 * plus the summary's per-task and per-group aggregates. Subscribers (the live feed) get each written batch.
 *
 * The dashboard's series are kept as each batch is written (core's SeriesKeeper) and saved beside the file as
 * watch-series.json every few seconds and on close, so `benchmax watch DIR` draws the run without reading
 * results.jsonl, and the feed offers them to `watch URL` (`series`). Recording into a run dir that already holds
 * rollouts starts from its checkpoint and reads the rest of the file in the background.
 */
export class RolloutRecorder {
  private queue: RolloutResult[] = [];
  private writing?: Promise<void>;
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
  private writeErrorShown = false;
  written = 0;
  dropped = 0;
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
   * A finished rollout's record, from the rollout service's `onFinished` (every transport): queued to be written.
   * Past `maxQueue` waiting it is dropped and counted.
   */
  add(result: RolloutResult): void {
    if (this.closed) return;
    if (this.queue.length >= (this.options.maxQueue ?? DEFAULT_MAX_QUEUE)) {
      this.dropped++;
      this.options.prom?.record("dropped");
      return;
    }
    this.queue.push(result);
    this.kick();
  }

  /**
   * The dashboard's series of results.jsonl up to `offset` (every line before it), as plain JSON; undefined while
   * the earlier lines of a run recorded into again are still being read. Holds `explain` (the feed strips it).
   */
  series(): { offset: number; state: SeriesState } | undefined {
    return this.keeper.state();
  }

  /** Call `fn` with each batch once it is in the file; returns the unsubscribe function. */
  subscribe(fn: (batch: RecordedBatch) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private kick(): void {
    if (this.writing || this.queue.length === 0) return;
    this.writing = this.drain().finally(() => {
      this.writing = undefined;
      this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.queue.length) {
      // the rollouts released within the window join the batch: one write for them all
      await new Promise((res) => setTimeout(res, this.options.batchMs ?? DEFAULT_BATCH_MS));
      const batch = this.queue;
      this.queue = [];
      this.writeBatch(batch);
    }
  }

  private writeBatch(batch: RolloutResult[]): void {
    const files: string[] = [];
    const feeds: string[] = [];
    const kept: RolloutResult[] = [];
    for (const r of batch) {
      try {
        const l = recordLines(r);
        files.push(l.file);
        feeds.push(l.feed);
        kept.push(r);
      } catch (e) {
        this.lost(1, e); // a record JSON cannot hold (a cycle, a BigInt): counted, never a crash
      }
    }
    if (!kept.length) return;
    files.push("");
    const buf = Buffer.from(files.join("\n"));
    try {
      writeAll(this.fd, buf);
    } catch (e) {
      this.lost(kept.length, e);
      try {
        this.size = fstatSync(this.fd).size; // a torn write: the next batch's offsets start where the file ends
      } catch {
        /* the file is gone: later writes fail and are counted too */
      }
      return;
    }
    const start = this.size;
    this.size += buf.length;
    this.keeper.appended(kept, start, this.size);
    for (const r of kept) this.agg.add(r);
    this.written += kept.length;
    this.options.prom?.record("written", kept.length);
    if (this.listeners.size === 0) return;
    const ends: number[] = [];
    for (let nl = buf.indexOf(0x0a); nl >= 0; nl = buf.indexOf(0x0a, nl + 1)) ends.push(start + nl + 1);
    const out: RecordedBatch = { start, ends, lines: feeds };
    for (const fn of this.listeners) {
      try {
        fn(out);
      } catch {
        /* a subscriber never stops the recording */
      }
    }
  }

  private lost(n: number, e: unknown): void {
    this.dropped += n;
    this.options.prom?.record("dropped", n);
    if (!this.writeErrorShown) {
      this.writeErrorShown = true;
      console.error(`benchmax: --record could not write ${n} rollout(s) to ${this.runDir.resultsPath}: ${e}`);
    }
  }

  private writeSummary(): void {
    const t = performance.now();
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
      this.runDir.writeSummary({ ...s, recording: { written: this.written, dropped: this.dropped } } as typeof s);
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

  /** Wait until every queued rollout is written (tests, benchmarks). */
  async flush(): Promise<void> {
    while (this.writing) await this.writing;
  }

  /** Write what is queued, the final summary, and close the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    clearInterval(this.timer);
    this.writeSummary();
    this.keeper.close();
    this.listeners.clear();
    closeSync(this.fd);
  }
}

/** Write all of `buf` at the end of the file `fd` (opened for appending). */
function writeAll(fd: number, buf: Buffer): void {
  for (let at = 0; at < buf.length; ) at += writeSync(fd, buf, at, buf.length - at);
}
