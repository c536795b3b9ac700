import { describe, expect, it } from "vitest";
import { GroupSpread } from "./group-spread.js";
import { populationStd } from "./rl-stats.js";

describe("GroupSpread", () => {
  it("gives the mean population std and the zero-variance share of groups with two or more rewards", () => {
    const s = new GroupSpread();
    const groups: Record<string, number[]> = { a: [1, 0, 0, 0], b: [0, 0, 0, 0], c: [1, 1, 1, 1], d: [0.5] };
    for (const [id, rs] of Object.entries(groups)) for (const r of rs) s.add(id, r);
    const out = s.summary();
    expect(out.groups).toBe(3);
    expect(out.zeroVarianceShare).toBeCloseTo(2 / 3, 12);
    expect(out.groupRewardStd).toBeCloseTo((populationStd([1, 0, 0, 0]) + 0 + 0) / 3, 12);
  });

  it("holds at most maxOpen groups, closing the oldest into the totals with the same figures", () => {
    const bounded = new GroupSpread(8);
    const unbounded = new GroupSpread(1_000_000);
    // 1,000 groups of 4, interleaved two groups at a time as a trainer's batches arrive
    for (let g = 0; g < 1000; g += 2)
      for (let i = 0; i < 4; i++)
        for (const id of [g, g + 1]) {
          const r = (id * 31 + i * 17) % 5 === 0 ? 1 : (id % 3) / 2;
          bounded.add(`g${id}`, r);
          unbounded.add(`g${id}`, r);
        }
    expect(bounded.openCount).toBeLessThanOrEqual(8);
    const a = bounded.summary();
    const b = unbounded.summary();
    expect(a.groups).toBe(1000);
    expect(a.groups).toBe(b.groups);
    expect(a.groupRewardStd).toBeCloseTo(b.groupRewardStd!, 12);
    expect(a.zeroVarianceShare).toBeCloseTo(b.zeroVarianceShare!, 12);
  });

  it("has no figures without a group of two", () => {
    const s = new GroupSpread();
    s.add("x", 1);
    expect(s.summary()).toEqual({ groups: 0, groupRewardStd: null, zeroVarianceShare: null });
  });
});
