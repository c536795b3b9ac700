import { describe, expect, it } from "vitest";
import { kValues, maxAtK, passAtK, populationStd } from "./rl-stats.js";

/** Brute force over every k-subset, to check the closed forms against their definition. */
function subsets<T>(xs: T[], k: number): T[][] {
  if (k === 0) return [[]];
  if (xs.length < k) return [];
  const [head, ...rest] = xs;
  return [...subsets(rest, k - 1).map((s) => [head!, ...s]), ...subsets(rest, k)];
}

describe("pass@k (Chen et al. 2021)", () => {
  it("matches 1 − C(n−c,k)/C(n,k) on hand-computed cases", () => {
    expect(passAtK(4, 1, 2)).toBeCloseTo(0.5, 12); // 1 − 3/6
    expect(passAtK(4, 0, 4)).toBe(0);
    expect(passAtK(4, 3, 2)).toBe(1); // n − c < k
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 12);
  });
  it("equals the share of k-subsets holding a pass, for every n ≤ 8", () => {
    for (let n = 1; n <= 8; n++)
      for (let c = 0; c <= n; c++)
        for (let k = 1; k <= n; k++) {
          const xs = Array.from({ length: n }, (_, i) => (i < c ? 1 : 0));
          const all = subsets(xs, k);
          const want = all.filter((s) => s.includes(1)).length / all.length;
          expect(passAtK(n, c, k)).toBeCloseTo(want, 10);
        }
  });
  it("refuses k outside 1..n", () => {
    expect(() => passAtK(2, 1, 3)).toThrow(RangeError);
  });
});

describe("max@k", () => {
  it("is the mean over k-subsets of their best reward", () => {
    expect(maxAtK([0, 0.5, 1], 2)).toBeCloseTo(2.5 / 3, 12);
    expect(maxAtK([0, 0.5, 1], 1)).toBeCloseTo(0.5, 12);
    expect(maxAtK([0.2, 0.9, 0.4], 3)).toBeCloseTo(0.9, 12);
    const rs = [0.3, 0.1, 0.9, 0.4, 0.4, 0, 1];
    for (let k = 1; k <= rs.length; k++) {
      const all = subsets(rs, k);
      const want = all.reduce((a, s) => a + Math.max(...s), 0) / all.length;
      expect(maxAtK(rs, k)).toBeCloseTo(want, 10);
    }
  });
});

describe("kValues and std", () => {
  it("reports powers of two and the group size", () => {
    expect(kValues(4)).toEqual([1, 2, 4]);
    expect(kValues(6)).toEqual([1, 2, 4, 6]);
    expect(kValues(1)).toEqual([1]);
  });
  it("population std", () => {
    expect(populationStd([1, 1, 1])).toBe(0);
    expect(populationStd([0, 1])).toBeCloseTo(0.5, 12);
  });
});
