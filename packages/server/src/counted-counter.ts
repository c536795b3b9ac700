import type { Registry } from "prom-client";
import { CountedMetric } from "./counted-metric.js";

/** One series of a `CountedCounter`: a caller that keeps it counts without any label lookup or hash. */
export class CounterSeries {
  value = 0;
  /** The counter's reset count when this series was (re)listed: a handle kept across a reset rejoins it. */
  epoch: number;

  constructor(
    readonly labels: Record<string, string>,
    private readonly owner: CountedCounter,
  ) {
    this.epoch = owner.epoch;
  }

  /** Add `n` (a finite number ≥ 0; 1 by default). */
  inc(n = 1): void {
    if (this.epoch !== this.owner.epoch) this.owner.rejoin(this);
    this.value += n;
  }
}

/**
 * A counter with one label, counted in plain fields on the hot path and handed to prom-client only when `/metrics`
 * is scraped: prom-client's `Counter.inc` hashes its label object on every call. The registry formats what `get()`
 * returns as it formats a prom-client `Counter`'s values (series in the order of their first call, none before it
 * and none after a reset until counted again), so the exposition reads the same.
 */
export class CountedCounter extends CountedMetric<CounterSeries> {
  readonly type = "counter";
  readonly aggregator = "sum";
  private readonly byValue = new Map<string, CounterSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelName: string,
    registry: Registry,
  ) {
    super();
    this.register(registry);
  }

  /** The series with label value `v`, listed from its first call. */
  series(v: string): CounterSeries {
    let s = this.byValue.get(v);
    if (!s) {
      s = new CounterSeries({ [this.labelName]: v }, this);
      this.byValue.set(v, s);
      this.order.push(s);
    }
    return s;
  }

  protected zero(s: CounterSeries): void {
    s.value = 0;
  }

  /** The values as prom-client's `Counter.get()` gives them. */
  async get() {
    const values = this.order.map((s) => ({ value: s.value, labels: { ...s.labels } }));
    return { help: this.help, name: this.name, type: this.type, values, aggregator: this.aggregator };
  }
}
