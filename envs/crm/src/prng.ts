import { seededRandom } from "@benchmax/core";

/** A small seeded PRNG (core's mulberry32) so the org and its tasks are the same for the same seed. */
export class Prng {
  /** A float in [0, 1). */
  readonly next: () => number;
  constructor(seed: number) {
    this.next = seededRandom(seed >>> 0 || 0x9e3779b9);
  }
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)]!;
  }
  /** Pick with weights (same length as xs). */
  weighted<T>(xs: readonly T[], weights: readonly number[]): T {
    const total = weights.reduce((a, b) => a + b, 0);
    let r = this.next() * total;
    for (let i = 0; i < xs.length; i++) {
      r -= weights[i]!;
      if (r < 0) return xs[i]!;
    }
    return xs[xs.length - 1]!;
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
}
