import type { Metric, Registry } from "prom-client";

/** One (tool, error) series: per-bucket counts (not cumulative; the last one is +Inf), the sum and the count. */
interface Series {
  readonly labels: { tool: string; error: string };
  readonly counts: number[];
  sum: number;
  count: number;
}

/**
 * The tool-call latency histogram (`benchmax_tool_call_seconds{tool, error}`), counted in plain arrays on the hot
 * path and handed to prom-client only when `/metrics` is scraped: prom-client's `observe` builds a label object and
 * a label hash on every call. The registry formats what `get()` returns exactly as it formats a prom-client
 * `Histogram`'s values (cumulative `_bucket` lines with `le` first, then `_sum` and `_count`, the series' labels
 * after `le`), so the exposition reads the same.
 */
export class ToolLatencyHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  /** Series by tool name: [error "false", error "true"]. */
  private readonly series = [new Map<string, Series>(), new Map<string, Series>()] as const;
  /** Every series in the order of its first call (the order prom-client lists them in). */
  private readonly order: Series[] = [];

  constructor(
    readonly name: string,
    readonly help: string,
    /** Upper bounds, in seconds. */
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /** One call of `tool` that took `seconds` (a finite number). */
  observe(tool: string, isError: boolean, seconds: number): void {
    const byTool = this.series[isError ? 1 : 0];
    let s = byTool.get(tool);
    if (!s) {
      s = {
        labels: { tool, error: isError ? "true" : "false" },
        counts: new Array<number>(this.buckets.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      byTool.set(tool, s);
      this.order.push(s);
    }
    const b = this.buckets;
    let i = 0;
    while (i < b.length && seconds > b[i]!) i++;
    s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }

  reset(): void {
    this.series[0].clear();
    this.series[1].clear();
    this.order.length = 0;
  }

  /** The values as prom-client's `Histogram.get()` gives them (labels `le` first, then the series' own). */
  async get() {
    const bucket = `${this.name}_bucket`;
    const values: {
      labels: Record<string, string | number>;
      value: number;
      metricName: string;
      exemplar: null | undefined;
    }[] = [];
    for (const s of this.order) {
      const { tool, error } = s.labels;
      let acc = 0;
      this.buckets.forEach((le, i) => {
        acc += s.counts[i]!;
        values.push({ labels: { le, tool, error }, value: acc, metricName: bucket, exemplar: null });
      });
      values.push({ labels: { le: "+Inf", tool, error }, value: s.count, metricName: bucket, exemplar: null });
      values.push({ labels: { tool, error }, value: s.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ labels: { tool, error }, value: s.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
