/** Rewards within this of each other count as one value (a group with no spread). */
const EPS = 1e-9;

interface OpenGroup {
  n: number;
  mean: number;
  m2: number;
  min: number;
  max: number;
}

/**
 * Per-group reward spread in bounded memory: each group keeps five numbers (Welford's mean and M2, min, max, count),
 * and at most `maxOpen` groups stay open. Past that the oldest group is closed into the totals: groups finish in
 * roughly the order they start, so an open group that old is done. A late member of a closed group opens a new one.
 */
export class GroupSpread {
  private readonly open = new Map<string, OpenGroup>();
  private closed = { groups: 0, stdSum: 0, flat: 0 };

  constructor(private readonly maxOpen = 16_384) {}

  add(groupId: string, reward: number): void {
    let g = this.open.get(groupId);
    if (!g) {
      if (this.open.size >= this.maxOpen) this.closeOldest();
      this.open.set(groupId, (g = { n: 0, mean: 0, m2: 0, min: reward, max: reward }));
    }
    g.n++;
    const d = reward - g.mean;
    g.mean += d / g.n;
    g.m2 += d * (reward - g.mean);
    if (reward < g.min) g.min = reward;
    if (reward > g.max) g.max = reward;
  }

  private closeOldest(): void {
    const [id, g] = this.open.entries().next().value as [string, OpenGroup];
    this.open.delete(id);
    this.closed = count(this.closed, g);
  }

  /** Groups with at least two scored rollouts, their mean population std, and the share with no spread. */
  summary(): { groups: number; groupRewardStd: number | null; zeroVarianceShare: number | null } {
    let t = this.closed;
    for (const g of this.open.values()) t = count(t, g);
    return {
      groups: t.groups,
      groupRewardStd: t.groups ? t.stdSum / t.groups : null,
      zeroVarianceShare: t.groups ? t.flat / t.groups : null,
    };
  }

  /** Groups open now (for tests and memory checks). */
  get openCount(): number {
    return this.open.size;
  }
}

function count(t: { groups: number; stdSum: number; flat: number }, g: OpenGroup) {
  if (g.n < 2) return t;
  return {
    groups: t.groups + 1,
    stdSum: t.stdSum + Math.sqrt(Math.max(0, g.m2 / g.n)),
    flat: t.flat + (g.max - g.min <= EPS ? 1 : 0),
  };
}
