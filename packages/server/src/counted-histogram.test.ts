import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { CountedHistogram } from "./counted-histogram.js";

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
const REWARD = [-1, -0.5, 0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1, 2, 5];

/** Ours and prom-client's Histogram, each in a registry of its own, fed the same calls. */
function pair(labelNames: string[], buckets: number[]) {
  const ours = new Registry();
  const theirs = new Registry();
  const h = new CountedHistogram("t_seconds", "Some latency.", buckets, labelNames, ours);
  const ref = new Histogram({ name: "t_seconds", help: "Some latency.", labelNames, buckets, registers: [theirs] });
  const same = async () => {
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  };
  return { ours, theirs, h, ref, same };
}

describe("CountedHistogram", () => {
  it("exposes the same text as prom-client's Histogram fed the same calls (two labels)", async () => {
    const { ours, theirs, h, ref, same } = pair(["tool", "error"], BUCKETS);
    await same();
    // values on bucket bounds, between them, past the last, in mixed (tool, error) order; a quoted tool name
    const calls: [string, boolean, number][] = [
      ["add", false, 0.0005],
      ['say "hi"\\n', true, 0.0006],
      ["add", true, 70],
      ["unknown", false, 0.0123],
      ["add", false, 1],
      ["add", false, 0.3],
      ["unknown", false, 0],
    ];
    for (const [tool, isError, s] of calls) {
      h.observe(s, tool, isError ? "true" : "false");
      ref.observe({ tool, error: isError ? "true" : "false" }, s);
    }
    await same();
    ours.resetMetrics();
    theirs.resetMetrics();
    await same();
  });

  it("one label: series in the order of their first call", async () => {
    const { h, ref, same } = pair(["phase"], BUCKETS);
    for (const [phase, s] of [
      ["step", 0.002],
      ["init", 0.0001],
      ["step", 3],
      ["reward", 100],
      ["init", 0.01],
    ] as const) {
      h.observe(s, phase);
      ref.observe({ phase }, s);
    }
    await same();
  });

  it("no label: the zero series shows before any call (not after a reset), negative buckets count", async () => {
    const { ours, theirs, h, ref, same } = pair([], REWARD);
    await same();
    for (const v of [1, 0, -0.7, -2, 0.5, 0.99, 4]) {
      h.observe(v);
      ref.observe(v);
    }
    await same();
    // past the last bound: only +Inf counts it (prom-client 15.1.3 also counts it in an `le="-1"` bucket, since
    // its "no bound" marker is -1: a bug not copied)
    h.observe(7);
    const text = await ours.metrics();
    expect(text).toContain('t_seconds_bucket{le="-1"} 1\n');
    expect(text).toContain('t_seconds_bucket{le="5"} 7\n');
    expect(text).toContain('t_seconds_bucket{le="+Inf"} 8\n');
    ref.observe(-3); // keep the two in step for the reset below
    ours.resetMetrics();
    theirs.resetMetrics();
    await same();
    h.observe(1);
    ref.observe(1);
    await same();
  });

  it("a series handle kept across a reset lists its series again from zero on its next call, in call order", async () => {
    const { ours, theirs, h, ref, same } = pair(["tool", "error"], BUCKETS);
    const add = h.series("add", "false");
    const sub = h.series("sub", "true");
    add.observe(0.002);
    sub.observe(3);
    ref.observe({ tool: "add", error: "false" }, 0.002);
    ref.observe({ tool: "sub", error: "true" }, 3);
    await same();
    ours.resetMetrics();
    theirs.resetMetrics();
    await same();
    // after the reset: sub first now, then add; the handles and observe() by label reach the same series
    sub.observe(0.1);
    h.observe(0.2, "add", "false");
    add.observe(7);
    ref.observe({ tool: "sub", error: "true" }, 0.1);
    ref.observe({ tool: "add", error: "false" }, 0.2);
    ref.observe({ tool: "add", error: "false" }, 7);
    await same();
    expect(h.series("add", "false")).toBe(add);
  });
});
