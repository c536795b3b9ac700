import { describe, expect, it } from "vitest";
import type { RolloutResult } from "../rollout-result.js";
import { type LatestRollout, LiveSeries, MAX_POINTS, MAX_TOOLS, type SeriesState } from "./live-series.js";

/** The merged series as state (what a fleet watch draws): `LiveSeries.merge(...).toState()`. */
const mergeSeriesStates = (states: SeriesState[], o: { latest?: LatestRollout[] } = {}) =>
  LiveSeries.merge(states, o.latest).toState();

/** A deterministic pseudo-random stream (rewards are binary fractions, so sums are exact in any order). */
function rng(seed: number) {
  let x = seed >>> 0;
  return () => {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    return x / 2 ** 32;
  };
}

function rollout(i: number, rand: () => number, over: Partial<RolloutResult> = {}, tools = 10): RolloutResult {
  const r = rand();
  const outcome = r < 0.08 ? "env_error" : r < 0.12 ? "infra_error" : r < 0.2 ? "truncated" : "completed";
  const reward = [0, 0.25, 0.5, 1][Math.floor(rand() * 4)]!;
  const scored = outcome === "completed" || outcome === "truncated";
  return {
    taskId: `t${i % 11}`,
    rolloutId: `r${i}`,
    groupId: `g${Math.floor(i / 4)}`,
    sample: i % 4,
    attempt: 0,
    outcome,
    ...(scored ? { reward, rewards: { exact: reward, format: reward === 0 ? 0 : 1 } } : { error: "boom" }),
    turns: 1 + (i % 3),
    toolCalls: i % 5,
    toolErrors: 0,
    durationMs: 1,
    toolLatencyMs: { [`tool${i % tools}`]: [0.5 + (i % 40), 3] },
    messages: [{ role: "assistant", content: "x".repeat(i % 17) }],
    ...over,
  };
}

/** Everything a snapshot draws but the latest rollouts (the fleet watch orders those itself). */
const curves = (s: LiveSeries) => {
  const { latest: _latest, ...rest } = s.snapshot();
  return rest;
};

describe("LiveSeries.merge: several sources' series as the one series of all their rollouts", () => {
  it("equals one series fed every rollout, across bucket widths, coarsening and groups split over sources", () => {
    const rand = rng(7);
    const one = new LiveSeries(1);
    const parts = [new LiveSeries(1), new LiveSeries(1), new LiveSeries(1)];
    // source 0 covers steps 0–299, source 1 steps 200–999, source 2 a few late steps: their widths differ (1, 2, 1)
    // and the union needs a wider one; a group's rollouts land on two sources (a migrated rollout's forks)
    for (let i = 0; i < 6000; i++) {
      const step = Math.floor(i / 6);
      const src = step < 200 ? 0 : step < 300 ? i % 2 : i % 97 === 0 ? 2 : 1;
      const r = rollout(i, rand, { trainerStep: step });
      one.add(r);
      parts[src]!.add(r);
    }
    const widths = parts.map((p) => p.toState().width);
    expect(new Set(widths).size).toBeGreaterThan(1);
    const merged = LiveSeries.fromState(mergeSeriesStates(parts.map((p) => p.toState())));
    expect(merged.total).toBe(6000);
    expect(curves(merged)).toEqual(curves(one));
    expect(merged.snapshot().x.length).toBeLessThanOrEqual(MAX_POINTS);
  });

  it("keeps at most MAX_TOOLS tool names: a source's own 'other' and the tools past the cap are drawn as 'other'", () => {
    const rand = rng(9);
    const parts = [new LiveSeries(1), new LiveSeries(1)];
    let calls = 0;
    for (let i = 0; i < 400; i++) {
      // each source names the tools in another order, so their first twelve differ
      const r = rollout(i, rand, { trainerStep: i % 7 }, 20);
      parts[i % 2 === 0 && i < 200 ? 0 : 1]!.add(r);
      calls += 2;
    }
    const snap = LiveSeries.fromState(mergeSeriesStates(parts.map((p) => p.toState()))).snapshot();
    expect(Object.keys(snap.toolLatency)).toHaveLength(MAX_TOOLS + 1);
    expect(Object.keys(snap.toolLatency)).toContain("other");
    const state = mergeSeriesStates(parts.map((p) => p.toState()));
    let binned = 0;
    for (const b of state.buckets)
      for (const pairs of Object.values(b[10])) for (let k = 1; k < pairs.length; k += 2) binned += pairs[k]!;
    expect(binned).toBe(calls);
  });

  it("an empty source changes nothing; no sources with rollouts is an empty series", () => {
    const rand = rng(3);
    const a = new LiveSeries(1);
    const one = new LiveSeries(1);
    for (let i = 0; i < 50; i++) {
      const r = rollout(i, rand, { trainerStep: i % 5 });
      a.add(r);
      one.add(r);
    }
    const merged = LiveSeries.fromState(mergeSeriesStates([new LiveSeries(1).toState(), a.toState()]));
    expect(curves(merged)).toEqual(curves(one));
    const empty = LiveSeries.fromState(mergeSeriesStates([new LiveSeries(1).toState(), new LiveSeries(1).toState()]));
    expect(empty.snapshot()).toMatchObject({ total: 0, x: [], latest: [] });
  });

  it("runs without steps pool each source's k-th bucket; with mixed axes only the step sources are drawn", () => {
    const rand = rng(11);
    const a = new LiveSeries(1);
    const b = new LiveSeries(1);
    for (let i = 0; i < 40; i++) a.add(rollout(i, rand, { reward: 1, outcome: "completed" }));
    for (let i = 0; i < 20; i++) b.add(rollout(i, rand, { reward: 0, outcome: "completed" }));
    const pooled = LiveSeries.fromState(mergeSeriesStates([a.toState(), b.toState()])).snapshot();
    expect(pooled.axis).toBe("rollout");
    expect(pooled.total).toBe(60);
    expect(pooled.x).toEqual(Array.from({ length: 40 }, (_, k) => k));
    expect(pooled.reward.slice(0, 20)).toEqual(Array(20).fill(0.5));
    expect(pooled.reward.slice(20)).toEqual(Array(20).fill(1));
    const stepped = new LiveSeries(1);
    for (let i = 0; i < 10; i++) stepped.add(rollout(i, rand, { trainerStep: 3 }));
    const mixed = LiveSeries.fromState(mergeSeriesStates([a.toState(), stepped.toState()])).snapshot();
    expect(mixed.axis).toBe("step");
    expect(mixed.x).toEqual([3]);
    expect(mixed.total).toBe(50);
  });

  it("carries the latest rollouts it is given, at most keepLatest of them", () => {
    const a = new LiveSeries(1, 3);
    const rand = rng(5);
    for (let i = 0; i < 5; i++) a.add(rollout(i, rand, { trainerStep: 1 }));
    const rows = a.toState().latest.map((r) => ({ ...r, node: "n1" }));
    const state = mergeSeriesStates([a.toState()], { latest: [...rows, ...rows] });
    expect(state.latest).toHaveLength(3);
    expect(
      LiveSeries.fromState(state)
        .snapshot()
        .latest.map((r) => (r as { node?: string }).node),
    ).toEqual(["n1", "n1", "n1"]);
  });
});
