import { Counter, collectDefaultMetrics, Gauge, Registry } from "prom-client";
import { CountedHistogram } from "./counted-histogram.js";

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
  private readonly tools: Set<string>;
  private readonly seen = new Map<string, Set<string>>();
  private readonly outcomes: Counter<"outcome">;
  // histograms are counted in plain arrays per call and read by the registry at scrape time (prom-client's observe
  // builds a label object and hashes it on every call); the exposition is prom-client's own
  private readonly reward: CountedHistogram;
  private readonly component: CountedHistogram;
  private readonly toolLatency: CountedHistogram;
  private readonly phases: CountedHistogram;
  private readonly errors: Counter<"code">;
  private readonly recorded: Counter<"result">;

  constructor(options: { toolNames: string[]; activeRollouts: () => number; defaultMetrics?: boolean }) {
    const registers = [this.registry];
    this.tools = new Set(options.toolNames);
    this.outcomes = new Counter({
      name: "benchmax_rollouts_finished_total",
      help: "Rollouts finished, by outcome (completed, truncated, env_error, infra_error).",
      labelNames: ["outcome"],
      registers,
    });
    this.reward = new CountedHistogram(
      "benchmax_reward",
      "Combined reward of scored rollouts.",
      REWARD,
      [],
      this.registry,
    );
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
    this.outcomes.inc({ outcome: this.bounded("outcome", outcome) });
    if (reward !== undefined && Number.isFinite(reward)) this.reward.observe(reward);
    if (rewards) {
      for (const k in rewards) {
        const v = rewards[k]!;
        if (Number.isFinite(v)) this.component.observe(v, this.bounded("component", k));
      }
    }
  }

  toolCall(tool: string | undefined, ms: number, isError: boolean): void {
    const name = tool !== undefined && this.tools.has(tool) ? tool : "unknown";
    if (Number.isFinite(ms)) this.toolLatency.observe(ms / 1000, name, isError ? "true" : "false");
  }

  phase(phase: Phase, ms: number): void {
    if (Number.isFinite(ms)) this.phases.observe(ms / 1000, phase);
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
