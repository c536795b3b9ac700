/**
 * The rewards a task has received, as a multiset in bounded memory, for unbiased max@k (rl-stats.ts): exact while
 * the task has at most `cap` distinct reward values (a 0/1 or a few-valued reward never gets past that); past it,
 * the two closest neighbouring values merge into their weighted mean, so a continuous reward keeps `cap` centroids
 * and max@k is off by at most the spread of a merged pair.
 */
export class RewardMultiset {
  /** Distinct values, ascending, with their counts. */
  private readonly values: number[] = [];
  private readonly counts: number[] = [];
  n = 0;

  constructor(private readonly cap = 256) {}

  add(v: number): void {
    this.n++;
    const vs = this.values;
    let lo = 0;
    let hi = vs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (vs[mid]! < v) lo = mid + 1;
      else hi = mid;
    }
    if (vs[lo] === v) {
      this.counts[lo]!++;
      return;
    }
    vs.splice(lo, 0, v);
    this.counts.splice(lo, 0, 1);
    if (vs.length > this.cap) this.mergeClosest();
  }

  private mergeClosest(): void {
    const vs = this.values;
    const cs = this.counts;
    let best = 0;
    for (let i = 1; i < vs.length - 1; i++) if (vs[i + 1]! - vs[i]! < vs[best + 1]! - vs[best]!) best = i;
    const c = cs[best]! + cs[best + 1]!;
    vs[best] = (vs[best]! * cs[best]! + vs[best + 1]! * cs[best + 1]!) / c;
    cs[best] = c;
    vs.splice(best + 1, 1);
    cs.splice(best + 1, 1);
  }

  /**
   * Unbiased expected maximum of k samples drawn without replacement: with the rewards sorted ascending, the i-th
   * (1-based) is the maximum of C(i−1, k−1) of the C(n, k) subsets, and a run of equal values at ranks a..b carries
   * Σ C(i−1, k−1) = C(b, k) − C(a−1, k) of them (the hockey-stick identity), so the cost is per distinct value.
   */
  maxAtK(k: number): number {
    const n = this.n;
    if (k < 1 || k > n) throw new RangeError(`max@k needs 1 ≤ k ≤ n (k=${k}, n=${n})`);
    let sum = 0;
    let below = 0;
    let prev = 0; // C(below, k) / C(n, k)
    for (let i = 0; i < this.values.length; i++) {
      const top = below + this.counts[i]!;
      const cur = chooseRatio(top, n, k);
      sum += this.values[i]! * (cur - prev);
      prev = cur;
      below = top;
    }
    return sum;
  }
}

/** C(b, k) / C(n, k) for b ≤ n, as the product of (b − j) / (n − j) over j < k (0 when b < k). */
function chooseRatio(b: number, n: number, k: number): number {
  if (b < k) return 0;
  if (b === n) return 1;
  let r = 1;
  for (let j = 0; j < k && r > 0; j++) r *= (b - j) / (n - j);
  return r;
}
