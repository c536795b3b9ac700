/** Upper bounds (ms) of the latency histogram buckets; the last bucket is +Inf. */
export const LATENCY_BUCKETS_MS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000];

import type { PromMetrics } from "./prometheus.js";

/** Counters and a tool-call latency histogram, cheap enough for the hot path. */
export class ServerMetrics {
  readonly startedAt = Date.now();
  /** The prom-client metrics behind `/metrics` in the Prometheus format (set by `serveEnv`). */
  prom?: PromMetrics;
  requests = 0;
  rolloutsCreated = 0;
  rolloutsReleased = 0;
  rolloutsExpired = 0;
  /** Idle rollouts released at capacity to admit a client under its fair share. */
  rolloutsReclaimed = 0;
  toolCalls = 0;
  toolErrors = 0;
  rewards = 0;
  /** Requests answered 4xx (bad input). */
  clientErrors = 0;
  /** Requests answered 5xx (env or infra failures). */
  serverErrors = 0;
  private readonly counts = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
  private sumMs = 0;

  observeToolCall(ms: number, isError: boolean, tool?: string): void {
    this.prom?.toolCall(tool, ms, isError);
    this.toolCalls++;
    if (isError) this.toolErrors++;
    this.sumMs += ms;
    let i = 0;
    while (i < LATENCY_BUCKETS_MS.length && ms > LATENCY_BUCKETS_MS[i]!) i++;
    this.counts[i]!++;
  }

  /** The latency at quantile q (0..1), as the upper bound of the bucket that holds it. */
  quantile(q: number): number | null {
    const total = this.counts.reduce((a, b) => a + b, 0);
    if (total === 0) return null;
    const rank = q * total;
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return i < LATENCY_BUCKETS_MS.length ? LATENCY_BUCKETS_MS[i]! : Number.POSITIVE_INFINITY;
    }
    return null;
  }

  snapshot(activeRollouts: number): Record<string, unknown> {
    return {
      uptimeS: (Date.now() - this.startedAt) / 1000,
      activeRollouts,
      rolloutsCreated: this.rolloutsCreated,
      rolloutsReleased: this.rolloutsReleased,
      rolloutsExpired: this.rolloutsExpired,
      rolloutsReclaimed: this.rolloutsReclaimed,
      requests: this.requests,
      toolCalls: this.toolCalls,
      toolErrors: this.toolErrors,
      rewards: this.rewards,
      errors: { client: this.clientErrors, server: this.serverErrors },
      toolCallLatencyMs: {
        buckets: LATENCY_BUCKETS_MS.map((le, i) => ({ le, count: this.counts[i] })).concat([
          { le: "+Inf" as unknown as number, count: this.counts[LATENCY_BUCKETS_MS.length] },
        ]),
        count: this.toolCalls,
        sum: this.sumMs,
        p50: this.quantile(0.5),
        p99: this.quantile(0.99),
      },
    };
  }

  /** The same counters in the Prometheus text format. */
  prometheus(activeRollouts: number): string {
    const lines: string[] = [];
    const metric = (name: string, type: string, help: string, value: number) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
    };
    metric("benchmax_active_rollouts", "gauge", "Live rollouts.", activeRollouts);
    metric("benchmax_rollouts_created_total", "counter", "Rollouts created (forks included).", this.rolloutsCreated);
    metric("benchmax_rollouts_expired_total", "counter", "Rollouts released after idling.", this.rolloutsExpired);
    metric("benchmax_requests_total", "counter", "HTTP requests.", this.requests);
    metric("benchmax_tool_errors_total", "counter", "Tool calls that returned isError.", this.toolErrors);
    metric("benchmax_client_errors_total", "counter", "Requests answered 4xx.", this.clientErrors);
    metric("benchmax_server_errors_total", "counter", "Requests answered 5xx.", this.serverErrors);
    const h = "benchmax_tool_call_duration_ms";
    lines.push(`# HELP ${h} Tool-call latency on the server (ms).`, `# TYPE ${h} histogram`);
    let cumulative = 0;
    LATENCY_BUCKETS_MS.forEach((le, i) => {
      cumulative += this.counts[i]!;
      lines.push(`${h}_bucket{le="${le}"} ${cumulative}`);
    });
    lines.push(`${h}_bucket{le="+Inf"} ${this.toolCalls}`, `${h}_sum ${this.sumMs}`, `${h}_count ${this.toolCalls}`);
    return `${lines.join("\n")}\n`;
  }
}
