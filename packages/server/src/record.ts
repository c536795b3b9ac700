import { once } from "node:events";
import { createWriteStream, mkdirSync, type WriteStream, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ArtifactStore, type Env, type RolloutResult, RunAggregate, RunDir } from "@benchmax/core";
import type { PromMetrics } from "./prometheus.js";
import type { RolloutTags } from "./service/rollout-service.js";

/** Most rollouts waiting to be written; past it a finished rollout is dropped (and counted), never buffered. */
const DEFAULT_MAX_QUEUE = 10_000;

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
 * `serve --record DIR`: every finished rollout, from every transport, appended to DIR/results.jsonl as it ends (the
 * lines an eval run dir holds, plus `trainerStep`), with DIR/run.json and a DIR/summary.json rewritten every few
 * seconds and on close. Writing happens off the request path; memory is bounded by `maxQueue` rollouts waiting
 * to be written (past it they are dropped and counted) plus the summary's per-task and per-group aggregates.
 */
export class RolloutRecorder {
  private readonly queue: RolloutResult[] = [];
  private draining?: Promise<void>;
  private readonly out: WriteStream;
  private readonly agg: RunAggregate;
  private readonly startedAt = new Date().toISOString();
  private readonly t0 = Date.now();
  private readonly timer: NodeJS.Timeout;
  written = 0;
  dropped = 0;
  private closed = false;
  /** The run dir (core's RunDir): also the store for recorded rollouts' final-state artifacts. */
  readonly runDir: RunDir;

  constructor(
    readonly dir: string,
    private readonly env: Env,
    private readonly options: {
      maxQueue?: number;
      summaryEveryMs?: number;
      prom?: PromMetrics;
      /** Where the served tasks came from (a dataset path; default the env's fixtures) and the settings that shape
       * scores (split, env options): written to run.json, so `benchmax rescore` finds the tasks again. */
      dataset?: string;
      config?: Record<string, unknown>;
    } = {},
  ) {
    mkdirSync(dir, { recursive: true });
    this.runDir = new RunDir(dir);
    this.out = createWriteStream(this.runDir.resultsPath, { flags: "a" });
    this.agg = new RunAggregate(env.passThreshold ?? 1);
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
    this.timer = setInterval(() => this.writeSummary(), options.summaryEveryMs ?? 5000);
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
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  private async drain(): Promise<void> {
    // let the request that released the rollout answer first
    await new Promise((res) => setImmediate(res));
    while (this.queue.length) {
      const line = this.queue.shift()!;
      this.agg.add(line);
      this.written++;
      this.options.prom?.record("written");
      if (!this.out.write(`${JSON.stringify(line)}\n`)) await once(this.out, "drain");
    }
  }

  private writeSummary(): void {
    try {
      const s = this.agg.summary({
        env: this.env.name,
        policy: "served",
        passThreshold: this.env.passThreshold ?? 1,
        startedAt: this.startedAt,
        durationMs: Date.now() - this.t0,
      });
      // written whole (a temp file renamed): a reader never sees half a summary
      this.runDir.writeSummary({ ...s, recording: { written: this.written, dropped: this.dropped } } as typeof s);
    } catch {
      /* the next tick tries again */
    }
  }

  /** Where recorded rollouts' final-state artifacts go (content-addressed): the episodes' `artifacts` option. */
  get artifacts(): ArtifactStore {
    return this.runDir;
  }

  /** Wait until every queued rollout is written (tests, benchmarks). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** Write what is queued, the final summary, and close the file. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.flush();
    this.closed = true;
    clearInterval(this.timer);
    this.writeSummary();
    await new Promise<void>((res) => this.out.end(res));
  }
}
