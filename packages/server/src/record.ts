import { once } from "node:events";
import { createWriteStream, mkdirSync, type WriteStream, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Env,
  explainBestEffort,
  type Message,
  type RolloutResult,
  RunAggregate,
  scalarMeta,
} from "@benchmax/core";
import type { PromMetrics } from "./prometheus.js";
import type { Rollout } from "./rollouts.js";
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

interface Pending {
  r: Rollout;
  /** The episode engine's own record (OpenEnv / ws / MCP-driven episodes); else built from the rollout. */
  fromEpisode?: RolloutResult;
  endedAt: number;
}

/**
 * `serve --record DIR`: every finished rollout, from every transport, appended to DIR/results.jsonl as it ends (the
 * lines an eval run dir holds, plus `trainerStep`), with DIR/run.json and a DIR/summary.json rewritten every few
 * seconds and on close. Writing happens off the request path; memory is bounded by `maxQueue` rollouts waiting
 * to be written (past it they are dropped and counted) plus the summary's per-task and per-group aggregates.
 */
export class RolloutRecorder {
  private readonly queue: Pending[] = [];
  private draining?: Promise<void>;
  private readonly out: WriteStream;
  private readonly agg: RunAggregate;
  private readonly startedAt = new Date().toISOString();
  private readonly t0 = Date.now();
  private readonly timer: NodeJS.Timeout;
  written = 0;
  dropped = 0;
  private closed = false;

  constructor(
    readonly dir: string,
    private readonly env: Env,
    private readonly options: { maxQueue?: number; summaryEveryMs?: number; prom?: PromMetrics } = {},
  ) {
    mkdirSync(dir, { recursive: true });
    this.out = createWriteStream(join(dir, "results.jsonl"), { flags: "a" });
    this.agg = new RunAggregate(env.passThreshold ?? 1);
    writeFileSync(
      join(dir, "run.json"),
      `${JSON.stringify({ env: env.name, policy: "served", mode: "serve --record", startedAt: this.startedAt }, null, 2)}\n`,
    );
    this.timer = setInterval(() => this.writeSummary(), options.summaryEveryMs ?? 5000);
    this.timer.unref();
  }

  /**
   * A rollout was released: queue it when it finished (scored through `/reward`, or its episode ended), else skip it
   * (a fork parent, an abandoned rollout). `episodeEnded` is read before the episode was closed.
   */
  add(r: Rollout, episodeEnded: boolean): void {
    if (this.closed) return;
    const fromEpisode = episodeEnded && r.episode !== undefined;
    if (!fromEpisode && r.reward === undefined) return;
    if (this.queue.length >= (this.options.maxQueue ?? DEFAULT_MAX_QUEUE)) {
      this.dropped++;
      this.options.prom?.record("dropped");
      return;
    }
    const p: Pending = { r, endedAt: Date.now() };
    if (fromEpisode) p.fromEpisode = r.episode!.result();
    this.queue.push(p);
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  private async drain(): Promise<void> {
    // let the request that released the rollout answer first
    await new Promise((res) => setImmediate(res));
    while (this.queue.length) {
      const p = this.queue.shift()!;
      let line: RolloutResult;
      try {
        line = await this.resultOf(p);
      } catch {
        continue;
      }
      this.agg.add(line);
      this.written++;
      this.options.prom?.record("written");
      if (!this.out.write(`${JSON.stringify(line)}\n`)) await once(this.out, "drain");
    }
  }

  private async resultOf(p: Pending): Promise<RolloutResult> {
    const r = p.r;
    const tags = (r as Rollout & { tags?: RolloutTags }).tags;
    const groupId = tags?.group ?? (tags?.step !== undefined ? `${r.task.id}@${tags.step}` : r.task.id);
    let out: RolloutResult;
    if (p.fromEpisode) {
      out = { ...p.fromEpisode, groupId };
    } else {
      const messages = ((r as Rollout & { scoredMessages?: Message[] }).scoredMessages ?? r.messages) as Message[];
      out = {
        taskId: r.task.id,
        rolloutId: r.id,
        groupId,
        sample: 0,
        attempt: 0,
        outcome: "completed",
        reward: r.reward!,
        ...(r.rewards ? { rewards: r.rewards } : {}),
        turns: messages.filter((m) => m.role === "assistant").length,
        toolCalls: r.toolCalls,
        toolErrors: 0,
        durationMs: p.endedAt - r.createdAt,
        messages,
      };
      const meta = scalarMeta(r.task.meta);
      if (meta) out.taskMeta = meta;
      const explain = await explainBestEffort(this.env, r.id, messages, r.task);
      if (explain) out.explain = explain;
    }
    if (tags?.step !== undefined) out.trainerStep = tags.step;
    return out;
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
      writeFileSync(
        join(this.dir, "summary.json"),
        `${JSON.stringify({ ...s, recording: { written: this.written, dropped: this.dropped } }, null, 2)}\n`,
      );
    } catch {
      /* the next tick tries again */
    }
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
