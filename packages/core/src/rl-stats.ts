/**
 * Group statistics an RL engineer reads first: unbiased pass@k and max@k per task (Chen et al. 2021, "Evaluating
 * Large Language Models Trained on Code", eq. 1 and its numerically stable product form), and per-group reward spread.
 */

/** Unbiased pass@k of one task with `n` samples of which `c` passed: 1 − C(n−c, k) / C(n, k). */
export function passAtK(n: number, c: number, k: number): number {
  if (k < 1 || k > n) throw new RangeError(`pass@k needs 1 ≤ k ≤ n (k=${k}, n=${n})`);
  if (n - c < k) return 1;
  let miss = 1;
  for (let i = n - c + 1; i <= n; i++) miss *= 1 - k / i;
  return 1 - miss;
}

/**
 * Unbiased expected maximum reward of k samples drawn without replacement from a task's `rewards`: with the rewards
 * sorted ascending, the i-th (1-based) is the maximum of C(i−1, k−1) of the C(n, k) subsets.
 */
export function maxAtK(rewards: readonly number[], k: number): number {
  const n = rewards.length;
  if (k < 1 || k > n) throw new RangeError(`max@k needs 1 ≤ k ≤ n (k=${k}, n=${n})`);
  const sorted = [...rewards].sort((a, b) => a - b);
  // w_i = C(i−1, k−1) / C(n, k), built from w_n = k / n downwards: w_{i−1} = w_i · (i−k) / (i−1)
  let w = k / n;
  let sum = 0;
  for (let i = n; i >= k; i--) {
    sum += w * sorted[i - 1]!;
    if (i > 1) w = (w * (i - k)) / (i - 1);
  }
  return sum;
}

/** The k values reported for tasks with up to `maxN` samples: powers of two up to maxN, and maxN itself. */
export function kValues(maxN: number): number[] {
  const ks: number[] = [];
  for (let k = 1; k <= maxN && k <= 1024; k *= 2) ks.push(k);
  if (maxN <= 1024 && ks[ks.length - 1] !== maxN) ks.push(maxN);
  return ks;
}

/** Population standard deviation. */
export function populationStd(values: readonly number[]): number {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return Math.sqrt(values.reduce((a, b) => a + (b - mean) ** 2, 0) / values.length);
}
