import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { CountedCounter, type CounterSeries } from "./counted-counter.js";
import { CountedHistogram, type HistogramSeries } from "./counted-histogram.js";

/** Latency buckets (seconds), 0.5 ms to 60 s. */
const LATENCY_S = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Reward buckets: the common [0, 1] range finely, and a little beyond on both sides. */
const REWARD = [-1, -0.5, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1, 2, 5];
/** Most distinct values a free-form label (component, error code) may take; past it, "other". */
const MAX_LABEL_VALUES = 64;

export type Phase = "init" | "step" | "reward";

/**
 * The env server's Prometheus metrics through prom-client, in a registry of its own (two servers in one process do
 * not share counters): rollouts by outcome, reward and per-component histograms, tool latency by tool, init / step /
 * reward latency, active rollouts, errors by code, and Node's default process metrics (event-loop delay included).
 * Labels are bounded: tool names only from the env's tool list, components and codes capped; never a rollout or
 * task id.
 */
export class PromMetrics {
  readonly registry = new Registry();
  private readonly seen = new Map<string, Set<string>>();
  // the per-rollout metrics are counted in plain fields and arrays and read by the registry at scrape time
  // (prom-client's inc and observe build a label object and hash it on every call); the exposition is prom-client's
  // own. Their series are kept here by label value, one lookup per call.
  private readonly outcomes: CountedCounter;
  private readonly outcomeSeries = new Map<string, CounterSeries>();
  private readonly rewardSeries: HistogramSeries;
  private readonly componentSeries = new Map<string, HistogramSeries>();
  /** Each listed tool's series, [ok, error], made on first use. Tools outside the list count as "unknown". */
  private readonly toolSeries = new Map<string, [HistogramSeries | undefined, HistogramSeries | undefined]>();
  private readonly phaseSeries: Partial<Record<Phase, HistogramSeries>> = {};
  private readonly reward: CountedHistogram;
  private readonly component: CountedHistogram;
  private readonly toolLatency: CountedHistogram;
  private readonly phases: CountedHistogram;
  private readonly errors: Counter<"code">;
  private readonly recorded: Counter<"result">;

  constructor(options: { toolNames: string[]; activeRollouts: () => number; defaultMetrics?: boolean }) {
    const registers = [this.registry];
    for (const t of options.toolNames) this.toolSeries.set(t, [undefined, undefined]);
    this.toolSeries.set("unknown", [undefined, undefined]);
    this.outcomes = new CountedCounter(
      "benchmax_rollouts_finished_total",
      "Rollouts finished, by outcome (completed, truncated, env_error, infra_error).",
      "outcome",
      this.registry,
    );
    this.reward = new CountedHistogram(
      "benchmax_reward",
      "Combined reward of scored rollouts.",
      REWARD,
      [],
      this.registry,
    );
    this.rewardSeries = this.reward.series();
    this.component = new CountedHistogram(
      "benchmax_reward_component",
      "Each reward component of scored rollouts.",
      REWARD,
      ["component"],
      this.registry,
    );
    this.toolLatency = new CountedHistogram(
      "benchmax_tool_call_seconds",
      "Tool-call latency by tool (tools outside the env's list count as 'unknown').",
      LATENCY_S,
      ["tool", "error"],
      this.registry,
    );
    this.phases = new CountedHistogram(
      "benchmax_phase_seconds",
      "Latency of env init, of one step, and of reward computation.",
      LATENCY_S,
      ["phase"],
      this.registry,
    );
    this.errors = new Counter({
      name: "benchmax_errors_total",
      help: "Requests answered with an error, by error code.",
      labelNames: ["code"],
      registers,
    });
    this.recorded = new Counter({
      name: "benchmax_recorded_rollouts_total",
      help: "Rollouts written by --record (result=written), or dropped because the writer fell behind (result=dropped).",
      labelNames: ["result"],
      registers,
    });
    new Gauge({
      name: "benchmax_active_rollouts_live",
      help: "Live rollouts.",
      registers,
      collect() {
        this.set(options.activeRollouts());
      },
    });
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry, prefix: "benchmax_" });
  }

  /** A label value from a free-form set, capped at MAX_LABEL_VALUES distinct values. */
  private bounded(label: string, value: string): string {
    let s = this.seen.get(label);
    if (!s) this.seen.set(label, (s = new Set()));
    if (s.has(value)) return value;
    if (s.size >= MAX_LABEL_VALUES) return "other";
    s.add(value);
    return value;
  }

  finished(outcome: string, reward?: number, rewards?: Record<string, number>): void {
    let o = this.outcomeSeries.get(outcome);
    if (!o) {
      const label = this.bounded("outcome", outcome);
      o = this.outcomes.series(label);
      if (label === outcome) this.outcomeSeries.set(outcome, o);
    }
    o.inc();
    if (reward !== undefined && Number.isFinite(reward)) this.rewardSeries.observe(reward);
    if (rewards) {
      for (const k in rewards) {
        const v = rewards[k]!;
        if (!Number.isFinite(v)) continue;
        let c = this.componentSeries.get(k);
        // past the cap, new names share "other" (and are not kept, so the map stays bounded)
        if (!c) {
          const label = this.bounded("component", k);
          c = this.component.series(label);
          if (label === k) this.componentSeries.set(k, c);
        }
        c.observe(v);
      }
    }
  }

  toolCall(tool: string | undefined, ms: number, isError: boolean): void {
    if (!Number.isFinite(ms)) return;
    let name = tool ?? "unknown";
    let pair = this.toolSeries.get(name);
    if (!pair) pair = this.toolSeries.get((name = "unknown"))!;
    const i = isError ? 1 : 0;
    const s = (pair[i] ??= this.toolLatency.series(name, isError ? "true" : "false"));
    s.observe(ms / 1000);
  }

  phase(phase: Phase, ms: number): void {
    if (Number.isFinite(ms)) (this.phaseSeries[phase] ??= this.phases.series(phase)).observe(ms / 1000);
  }

  error(code: string): void {
    this.errors.inc({ code: this.bounded("code", code) });
  }

  record(result: "written" | "dropped", n = 1): void {
    this.recorded.inc({ result }, n);
  }

  /** The Prometheus text exposition of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
