import { Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { ToolLatencyHistogram } from "./tool-latency-histogram.js";

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

describe("ToolLatencyHistogram", () => {
  it("exposes the same text as prom-client's Histogram fed the same calls", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const h = new ToolLatencyHistogram("t_seconds", "Tool latency.", BUCKETS, ours);
    const ref = new Histogram({
      name: "t_seconds",
      help: "Tool latency.",
      labelNames: ["tool", "error"],
      buckets: BUCKETS,
      registers: [theirs],
    });
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
      h.observe(tool, isError, s);
      ref.observe({ tool, error: isError ? "true" : "false" }, s);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
    ours.resetMetrics();
    theirs.resetMetrics();
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
