import { Counter, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CountedCounter } from "./counted-counter.js";

describe("CountedCounter", () => {
  it("exposes the same text and JSON as prom-client's Counter fed the same calls, across a reset", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const c = new CountedCounter("t_total", "Some count.", "outcome", ours);
    const ref = new Counter({ name: "t_total", help: "Some count.", labelNames: ["outcome"], registers: [theirs] });
    const same = async () => {
      expect(await ours.metrics()).toBe(await theirs.metrics());
      expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    };
    await same();
    const done = c.series("completed");
    for (const [o, n] of [
      ["completed", 1],
      ['say "hi"\\n', 1],
      ["env_error", 2.5],
      ["completed", 1],
    ] as const) {
      c.series(o).inc(n);
      ref.inc({ outcome: o }, n);
    }
    await same();
    ours.resetMetrics();
    theirs.resetMetrics();
    await same();
    // a handle kept across the reset counts from zero, listed in the order of the calls after it
    c.series("env_error").inc();
    done.inc();
    ref.inc({ outcome: "env_error" });
    ref.inc({ outcome: "completed" });
    await same();
    expect(await ours.metrics()).toContain('t_total{outcome="completed"} 1\n');
  });
});
