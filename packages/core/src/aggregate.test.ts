import { describe, expect, it } from "vitest";
import { RunAggregate, StreamingStats } from "./aggregate.js";
import type { RolloutResult } from "./rollout-result.js";
import { stats } from "./summary.js";

const result = (taskId: string, over: Partial<RolloutResult>): RolloutResult => ({
  taskId,
  rolloutId: `${taskId}#0`,
  groupId: taskId,
  sample: 0,
  attempt: 0,
  outcome: "completed",
  turns: 2,
  toolCalls: 1,
  toolErrors: 0,
  durationMs: 10,
  messages: [],
  ...over,
});

describe("StreamingStats", () => {
  it("is exact up to 10,000 values", () => {
    const xs = Array.from({ length: 5000 }, (_, i) => (i * 7919) % 1000);
    const s = new StreamingStats();
    for (const x of xs) s.add(x);
    const want = stats(xs)!;
    const got = s.stats()!;
    expect(got.p50).toBe(want.p50);
    expect(got.p95).toBe(want.p95);
    expect(got.min).toBe(want.min);
    expect(got.max).toBe(want.max);
    expect(got.mean).toBeCloseTo(want.mean, 9);
    expect(got.std).toBeCloseTo(want.std, 9);
  });

  it("past that, quantiles stay within 1 % from a bounded histogram", () => {
    const xs = Array.from({ length: 50_000 }, (_, i) => 1 + ((i * 7919) % 10_000) / 10);
    const s = new StreamingStats();
    for (const x of xs) s.add(x);
    const want = stats(xs)!;
    const got = s.stats()!;
    expect(Math.abs(got.p50 - want.p50) / want.p50).toBeLessThan(0.01);
    expect(Math.abs(got.p95 - want.p95) / want.p95).toBeLessThan(0.01);
    expect(got.min).toBe(want.min);
    expect(got.max).toBe(want.max);
  });
});

describe("RunAggregate", () => {
  it("counts outcomes, pass rates overall and per task, and never scores errors", () => {
    const a = new RunAggregate(1);
    a.add(result("a", { reward: 1, rewards: { x: 1 } }));
    a.add(result("a", { reward: 0, rewards: { x: 0 }, outcome: "truncated" }));
    a.add(result("b", { outcome: "env_error", error: "EnvError: boom" }));
    a.add(result("b", { outcome: "infra_error", error: "InfraError: 503" }));
    const s = a.summary({ env: "e", policy: "p" });
    expect(s.n).toBe(4);
    expect(s.outcomes).toEqual({ completed: 1, truncated: 1, env_error: 1, infra_error: 1 });
    expect(s.passRate).toBe(0.5);
    expect(s.reward).toEqual({ mean: 0.5, std: 0.5 });
    expect(s.components).toEqual({ x: 0.5 });
    expect(s.tasks).toEqual({
      a: { n: 2, scored: 2, meanReward: 0.5, passRate: 0.5 },
      b: { n: 2, scored: 0, meanReward: null, passRate: null },
    });
    expect(a.firstError).toBe("EnvError: boom");
    expect(() => a.summary({ env: "e", policy: "p", passThreshold: 0.5 })).toThrow(/threshold/);
  });
});
