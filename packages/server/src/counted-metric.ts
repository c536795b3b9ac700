import type { Metric, Registry } from "prom-client";

/** A series of a counted metric: the metric's reset count when it was last listed. */
export interface CountedSeries {
  epoch: number;
}

/**
 * What `CountedCounter` and `CountedHistogram` share: their series listed in the order of their first call, and
 * resets that drop every series from the exposition while handles kept by callers stay good (a kept series' next call
 * lists it again from zero, as a new one would be).
 */
export abstract class CountedMetric<S extends CountedSeries> {
  /** Series in the order of their first call since the last reset. */
  protected readonly order: S[] = [];
  /** Resets so far. */
  epoch = 0;

  /** Register with a prom-client registry, which reads the values at scrape time through `get()`. */
  protected register(registry: Registry): void {
    registry.registerMetric(this as unknown as Metric);
  }

  /** Set a series' values to zero. */
  protected abstract zero(s: S): void;

  /** A series kept across a reset: zeroed and listed again. */
  rejoin(s: S): void {
    this.zero(s);
    s.epoch = this.epoch;
    this.order.push(s);
  }

  /** Drop every series from the exposition; each one's next call lists it again from zero (its handle stays good). */
  reset(): void {
    this.epoch++;
    this.order.length = 0;
  }
}
