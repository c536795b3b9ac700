import { describe, expect, it } from "vitest";
import { RewardMultiset } from "./reward-multiset.js";
import { maxAtK } from "./rl-stats.js";

const of = (rewards: number[], cap?: number) => {
  const m = new RewardMultiset(cap);
  for (const r of rewards) m.add(r);
  return m;
};

describe("RewardMultiset", () => {
  it("gives the same max@k as the full list for every k (ties, discrete and spread rewards)", () => {
    const cases = [
      [1, 0, 0, 0],
      [0, 0, 0, 0],
      [0.5, 0.25, 1, 0.25, 0, 0.75, 0.5, 0.5],
      Array.from({ length: 37 }, (_, i) => ((i * 7919) % 13) / 13),
    ];
    for (const rewards of cases) {
      const m = of(rewards);
      for (let k = 1; k <= rewards.length; k++) expect(m.maxAtK(k)).toBeCloseTo(maxAtK(rewards, k), 12);
    }
  });

  it("keeps at most cap distinct values, and max@k stays within the spread of the merged values", () => {
    const rewards = Array.from({ length: 5000 }, (_, i) => ((i * 2654435761) % 10007) / 10007);
    const m = of(rewards, 64);
    expect((m as unknown as { values: number[] }).values.length).toBeLessThanOrEqual(64);
    expect(m.n).toBe(5000);
    for (const k of [1, 2, 8, 64, 1024]) expect(Math.abs(m.maxAtK(k) - maxAtK(rewards, k))).toBeLessThan(0.02);
    // the mean (max@1) is kept exactly by weighted merges
    expect(m.maxAtK(1)).toBeCloseTo(rewards.reduce((a, b) => a + b, 0) / rewards.length, 9);
  });

  it("refuses k outside 1..n", () => {
    expect(() => of([1, 0]).maxAtK(3)).toThrow(RangeError);
    expect(() => of([1, 0]).maxAtK(0)).toThrow(RangeError);
  });
});
