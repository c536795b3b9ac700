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

describe("RunAggregate: RL numbers", () => {
  const group = (taskId: string, rewards: number[], meta?: Record<string, string | number>) =>
    rewards.map((reward, i) =>
      result(taskId, {
        rolloutId: `${taskId}#${i}`,
        sample: i,
        reward,
        rewards: { correct: reward },
        ...(meta ? { taskMeta: meta } : {}),
        usage: { prompt_tokens: 100, completion_tokens: 10 * (i + 1), total_tokens: 100 + 10 * (i + 1) },
        messages: [
          { role: "user", content: "q" },
          { role: "assistant", content: "x".repeat(5 * (i + 1)) },
        ],
      }),
    );

  it("gives pass@k, max@k, group std, the zero-variance share, tokens and response length", () => {
    const agg = new RunAggregate(1);
    for (const r of [
      ...group("a", [1, 0, 0, 0], { level: "Level 1", type: "Algebra" }),
      ...group("b", [0, 0, 0, 0], { level: "Level 5", type: "Algebra" }),
      ...group("c", [1, 1, 1, 1], { level: "Level 5", type: "Geometry" }),
    ])
      agg.add(r);
    const s = agg.summary({ env: "e", policy: "p" });
    expect(Object.keys(s.rl!.passAtK)).toEqual(["1", "2", "4"]);
    // a: pass@1 .25, pass@2 .5, pass@4 1; b: 0; c: 1
    expect(s.rl!.passAtK["1"]).toBeCloseTo((0.25 + 0 + 1) / 3, 12);
    expect(s.rl!.passAtK["2"]).toBeCloseTo((0.5 + 0 + 1) / 3, 12);
    expect(s.rl!.passAtK["4"]).toBeCloseTo((1 + 0 + 1) / 3, 12);
    expect(s.rl!.maxAtK["4"]).toBeCloseTo(2 / 3, 12);
    expect(s.rl!.groups).toBe(3);
    expect(s.rl!.zeroVarianceShare).toBeCloseTo(2 / 3, 12);
    expect(s.rl!.groupRewardStd).toBeCloseTo(Math.sqrt(3 / 16) / 3, 12);
    expect(s.tokens!.completion!.mean).toBeCloseTo(25, 12);
    expect(s.tokens!.completion!.max).toBe(40);
    expect(s.responseChars!.p50).toBe(15);
    expect(s.breakdown!.level).toEqual({
      "Level 1": { n: 4, scored: 4, meanReward: 0.25, passRate: 0.25 },
      "Level 5": { n: 8, scored: 8, meanReward: 0.5, passRate: 0.5 },
    });
    expect(Object.keys(s.breakdown!.type!)).toEqual(["Algebra", "Geometry"]);
  });

  it("has no rl block with one sample per task, and drops id-like metadata fields", () => {
    const agg = new RunAggregate(1);
    for (let i = 0; i < 60; i++) agg.add(result(`t${i}`, { reward: 1, taskMeta: { uid: `u${i}`, split: "test" } }));
    const s = agg.summary({ env: "e", policy: "p" });
    expect(s.rl).toBeUndefined();
    expect(s.tokens).toBeUndefined();
    expect(Object.keys(s.breakdown!)).toEqual(["split"]);
    expect(s.breakdown!.split!.test!.n).toBe(60);
  });

  it("drops a field whose every value names one task (an instruction, a file path), whatever the group size", () => {
    const agg = new RunAggregate(2);
    for (let i = 0; i < 10; i++)
      for (let g = 0; g < 2; g++)
        agg.add(result(`t${i}`, { reward: g, taskMeta: { instruction: `do thing ${i}`, kind: i % 2 ? "a" : "b" } }));
    const s = agg.summary({ env: "e", policy: "p" });
    expect(Object.keys(s.breakdown!)).toEqual(["kind"]);
  });

  it("counts unscored rollouts in a slice's n but not in its pass rate", () => {
    const agg = new RunAggregate(1);
    agg.add(result("a", { reward: 1, taskMeta: { split: "dev" } }));
    agg.add(result("b", { outcome: "env_error", error: "x", taskMeta: { split: "dev" } }));
    const s = agg.summary({ env: "e", policy: "p" });
    expect(s.breakdown!.split!.dev).toEqual({ n: 2, scored: 1, meanReward: 1, passRate: 1 });
  });
});

describe("RunAggregate: memory bounded by tasks, not rollouts", () => {
  it("keeps bounded state per task and per group over a long training-style stream", () => {
    const agg = new RunAggregate(1);
    // 5 tasks, each sampled in 8,000 groups of 4 (a long run): 160,000 rollouts
    for (let g = 0; g < 40_000; g++)
      for (let i = 0; i < 4; i++)
        agg.add(result(`t${g % 5}`, { groupId: `step${g}`, reward: (g + i) % 4 === 0 ? 1 : 0 }));
    const inner = agg as unknown as {
      groups: { openCount: number };
      tasks: Map<string, { rewards: { n: number; maxAtK(k: number): number } }>;
    };
    expect(inner.groups.openCount).toBeLessThanOrEqual(16_384);
    expect(inner.tasks.get("t0")!.rewards.n).toBe(32_000);
    const s = agg.summary({ env: "e", policy: "p" });
    expect(s.n).toBe(160_000);
    expect(s.rl!.groups).toBe(40_000);
    // every group holds exactly one pass in four: std √(3/16), none flat
    expect(s.rl!.groupRewardStd).toBeCloseTo(Math.sqrt(3 / 16), 9);
    expect(s.rl!.zeroVarianceShare).toBe(0);
    expect(s.rl!.passAtK["1"]).toBeCloseTo(0.25, 12);
  });
});
