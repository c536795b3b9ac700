import type { Registry } from "prom-client";
import { CountedMetric } from "./counted-metric.js";

/**
 * One series of a `CountedHistogram`: its labels, per-bucket counts (not cumulative; the last one is +Inf), the sum
 * and the count. A caller that keeps the handle observes without any label lookup.
 */
export class HistogramSeries {
  readonly counts: number[];
  sum = 0;
  count = 0;
  /** The histogram's reset count when this series was (re)made: a handle kept across a reset rejoins it. */
  epoch: number;

  constructor(
    readonly labels: Record<string, string>,
    private readonly owner: CountedHistogram,
  ) {
    this.counts = new Array<number>(owner.buckets.length + 1).fill(0);
    this.epoch = owner.epoch;
  }

  /** One value (a finite number). */
  observe(value: number): void {
    if (this.epoch !== this.owner.epoch) this.owner.rejoin(this);
    const bounds = this.owner.buckets;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/**
 * A histogram with up to two labels, counted in plain arrays on the hot path and handed to prom-client only when
 * `/metrics` is scraped: prom-client's `observe` builds a label object and a label hash on every call. The registry
 * formats what `get()` returns exactly as it formats a prom-client `Histogram`'s values (cumulative `_bucket` lines
 * with `le` first, then `_sum` and `_count`, the series' labels after `le`; series in the order of their first call;
 * a histogram without labels shows its zero series before any call, not after a reset), so the exposition reads the same.
 */
export class CountedHistogram extends CountedMetric<HistogramSeries> {
  readonly type = "histogram";
  readonly aggregator = "sum";
  /** Series by first label value, then by second ("" where a label is absent). */
  private readonly byLabel = new Map<string, Map<string, HistogramSeries>>();

  constructor(
    readonly name: string,
    readonly help: string,
    /** Upper bounds. */
    readonly buckets: readonly number[],
    /** At most two label names, in the order `observe` takes their values. */
    private readonly labelNames: readonly string[],
    registry: Registry,
  ) {
    super();
    if (labelNames.length > 2) throw new Error("CountedHistogram takes at most two labels");
    this.register(registry);
    // prom-client shows a histogram without labels at zero from the start (not after a reset)
    if (labelNames.length === 0) this.observe(0);
    const zero = this.order[0];
    if (zero) this.zero(zero);
  }

  /** One value (a finite number) of the series labelled `a` (and `b`), in `labelNames` order. */
  observe(value: number, a = "", b = ""): void {
    this.series(a, b).observe(value);
  }

  /**
   * The series labelled `a` (and `b`), made on its first call (from then on it shows in the exposition). A caller on a
   * hot path keeps it and calls its `observe`; after a `reset`, a kept handle's next call lists it again from zero.
   */
  series(a = "", b = ""): HistogramSeries {
    let byB = this.byLabel.get(a);
    if (!byB) this.byLabel.set(a, (byB = new Map()));
    let s = byB.get(b);
    if (!s) {
      const labels: Record<string, string> = {};
      if (this.labelNames[0] !== undefined) labels[this.labelNames[0]] = a;
      if (this.labelNames[1] !== undefined) labels[this.labelNames[1]] = b;
      s = new HistogramSeries(labels, this);
      byB.set(b, s);
      this.order.push(s);
    }
    return s;
  }

  protected zero(s: HistogramSeries): void {
    s.counts.fill(0);
    s.sum = 0;
    s.count = 0;
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
      let acc = 0;
      this.buckets.forEach((le, i) => {
        acc += s.counts[i]!;
        values.push({ labels: { le, ...s.labels }, value: acc, metricName: bucket, exemplar: null });
      });
      values.push({ labels: { le: "+Inf", ...s.labels }, value: s.count, metricName: bucket, exemplar: null });
      values.push({ labels: { ...s.labels }, value: s.sum, metricName: `${this.name}_sum`, exemplar: undefined });
      values.push({ labels: { ...s.labels }, value: s.count, metricName: `${this.name}_count`, exemplar: undefined });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
