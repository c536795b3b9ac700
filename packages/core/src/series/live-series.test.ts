import { describe, expect, it } from "vitest";
import type { RolloutResult } from "../rollout-result.js";
import { LiveSeries, latencyQuantile, MAX_POINTS, MAX_TOOLS } from "./live-series.js";

const result = (i: number, over: Partial<RolloutResult>): RolloutResult => ({
  taskId: `t${i % 7}`,
  rolloutId: `r${i}`,
  groupId: `g${i >> 1}`,
  sample: i % 2,
  attempt: 0,
  outcome: "completed",
  reward: 1,
  rewards: { correct: 1 },
  turns: 1,
  toolCalls: 2,
  toolErrors: 0,
  durationMs: 1,
  messages: [{ role: "assistant", content: "abcd" }],
  ...over,
});

describe("LiveSeries", () => {
  it("draws one point per trainer step while they fit, with pass rate, error rate and zero-variance share", () => {
    const s = new LiveSeries(1);
    // step 1: group g0 = [1, 0], g1 = [1, 1]; step 2: one env_error
    for (const [i, reward] of [1, 0, 1, 1].entries()) {
      s.add(result(i, { trainerStep: 1, reward, rewards: { correct: reward } }));
    }
    s.add(result(4, { trainerStep: 2, outcome: "env_error", reward: undefined, rewards: undefined, error: "boom" }));
    s.add(result(5, { trainerStep: 2 }));
    const snap = s.snapshot();
    expect(snap.axis).toBe("step");
    expect(snap.x).toEqual([1, 2]);
    expect(snap.passRate).toEqual([0.75, 1]);
    expect(snap.errorRate).toEqual([0, 0.5]);
    expect(snap.zeroVarianceShare).toEqual([0.5, null]);
    expect(snap.components.correct).toEqual([0.75, 1]);
    expect(snap.responseChars).toEqual([4, 4]);
    expect(snap.latest[0]!.rolloutId).toBe("r5");
  });

  it("stays at most MAX_POINTS points over 100,000 steps, and merging keeps the means", () => {
    const s = new LiveSeries(1);
    let sum = 0;
    for (let i = 0; i < 100_000; i++) {
      const reward = (i % 8) / 8;
      sum += reward;
      s.add(result(i, { trainerStep: i, reward, rewards: { correct: reward } }));
    }
    const snap = s.snapshot();
    expect(snap.x.length).toBeLessThanOrEqual(MAX_POINTS);
    expect(snap.x.length).toBeGreaterThan(MAX_POINTS / 2);
    expect(snap.width).toBe(256);
    expect(snap.total).toBe(100_000);
    // every bucket holds whole periods of eight steps, so each mean is the period's mean 3.5 / 8
    for (const r of snap.reward.slice(0, -1)) expect(r).toBeCloseTo(3.5 / 8, 9);
    expect(snap.latest).toHaveLength(30);
    expect(sum / 100_000).toBeCloseTo(3.5 / 8, 9);
  });

  it("uses the rollout's order as the axis when no trainer step is sent", () => {
    const s = new LiveSeries(1);
    for (let i = 0; i < 5; i++) s.add(result(i, {}));
    expect(s.snapshot().axis).toBe("rollout");
    expect(s.snapshot().x).toEqual([0, 1, 2, 3, 4]);
  });

  it("draws per-tool p50 and p95 latency per step, within the bins' 12 %, merged when buckets coarsen", () => {
    const s = new LiveSeries(1);
    // step 1: search takes 1..100 ms (p50 50, p95 95), calc 2 ms; step 2: search 10x slower
    for (let i = 0; i < 100; i++) {
      s.add(result(i, { trainerStep: 1, toolLatencyMs: { search: [i + 1], ...(i % 10 ? {} : { calc: [2, 2] }) } }));
      s.add(result(i, { trainerStep: 2, toolLatencyMs: { search: [(i + 1) * 10] } }));
    }
    const lat = s.snapshot().toolLatency;
    expect(Object.keys(lat)).toEqual(["calc", "search"]);
    const near = (got: number | null, want: number) => {
      expect(got).not.toBeNull();
      expect(Math.abs(got! - want) / want).toBeLessThan(0.12);
    };
    near(lat.search!.p50[0]!, 50);
    near(lat.search!.p95[0]!, 95);
    near(lat.search!.p50[1]!, 500);
    near(lat.search!.p95[1]!, 950);
    near(lat.calc!.p50[0]!, 2);
    expect(lat.calc!.p50[1]).toBeNull();
    // past MAX_POINTS steps the buckets merge: the merged p50 covers both halves
    const c = new LiveSeries(1);
    for (let step = 0; step < MAX_POINTS * 2; step++)
      c.add(result(step, { trainerStep: step, toolLatencyMs: { t: [100] } }));
    const cl = c.snapshot();
    expect(cl.width).toBe(2);
    for (const v of cl.toolLatency.t!.p50) near(v, 100);
  });

  it("keeps at most MAX_TOOLS tool names (a model's made-up names go under other) and ignores malformed timings", () => {
    const s = new LiveSeries(1);
    const names = Array.from({ length: MAX_TOOLS + 5 }, (_, i) => `tool${i}`);
    s.add(result(0, { toolLatencyMs: Object.fromEntries(names.map((n) => [n, [1]])) }));
    s.add(result(1, { toolLatencyMs: { x: "nope" } as unknown as Record<string, number[]> }));
    s.add(result(2, { toolLatencyMs: { tool0: [-1, Number.NaN] } }));
    const lat = s.snapshot().toolLatency;
    expect(Object.keys(lat)).toHaveLength(MAX_TOOLS + 1);
    expect(lat.other).toBeDefined();
    expect(latencyQuantile(new Uint32Array(90), 0.5)).toBeNull();
  });
});
