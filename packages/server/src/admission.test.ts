import { describe, expect, it } from "vitest";
import { Admission, type Admitted } from "./admission.js";

/** `n` live entries of `client`, idle since `lastUsed`, added to `admission` and to `live`. */
function hold(admission: Admission<Admitted>, live: Map<number, Admitted>, client: string, n: number, lastUsed = 0) {
  const out: Admitted[] = [];
  for (let i = 0; i < n; i++) {
    const r: Admitted = { client, busy: 0, lastUsed };
    live.set(live.size + Math.random(), r);
    admission.add(r);
    out.push(r);
  }
  return out;
}

describe("Admission", () => {
  it("a client back at 0 entries does not count in the fair share", () => {
    const a = new Admission<Admitted>({ max: 6, reclaimIdleMs: 10 });
    const live = new Map<number, Admitted>();
    // a one-connection client comes and goes: its count falls to 0 many times
    for (let i = 0; i < 5; i++) {
      const [r] = hold(a, new Map(), "gone", 1);
      a.remove(r!);
    }
    expect(a.held("gone")).toBe(0);
    hold(a, live, "greedy", 6);
    // two clients hold or ask for entries ("gone" is not one of them): a fair share of 3, taken from greedy's idle ones
    const freed = a.admit("new", 3, live, 1_000);
    expect(freed).toHaveLength(3);
    expect(freed.every((r) => r.client === "greedy")).toBe(true);
    expect(a.reclaimed).toBe(3);
  });

  it("counts per client through adds and removes, and a remove of nothing held is a no-op", () => {
    const a = new Admission<Admitted>({ max: 10, maxPerClient: 2 });
    const live = new Map<number, Admitted>();
    const [x, y] = hold(a, live, "c", 2);
    expect(a.held("c")).toBe(2);
    expect(() => a.admit("c", 1, live)).toThrow(/at most 2 per client/);
    a.remove(x!);
    a.remove(y!);
    a.remove(y!);
    expect(a.held("c")).toBe(0);
    expect(a.admit("c", 2, live)).toEqual([]);
    hold(a, live, "c", 1);
    expect(a.held("c")).toBe(1);
  });

  it("drops the keys of clients at 0 once there are more than 1,024 of them", () => {
    const a = new Admission<Admitted>({ max: 10 });
    for (let i = 0; i < 3000; i++) {
      const [r] = hold(a, new Map(), `10.0.${i >> 8}.${i & 255}`, 1);
      a.remove(r!);
    }
    const keys = (a as unknown as { byClient: Map<string, number> }).byClient;
    expect(keys.size).toBeLessThanOrEqual(1025);
    expect(a.held("10.0.0.1")).toBe(0);
    // a client still holding entries keeps its count through a drop
    const live = new Map<number, Admitted>();
    hold(a, live, "stays", 2);
    for (let i = 0; i < 1100; i++) {
      const [r] = hold(a, new Map(), `10.1.${i >> 8}.${i & 255}`, 1);
      a.remove(r!);
    }
    expect(a.held("stays")).toBe(2);
  });

  it("at capacity, takes at once from the client most over its share, its least recently used entry first", () => {
    const a = new Admission<Admitted>({ max: 8 });
    const live = new Map<number, Admitted>();
    // every entry used a moment ago: nothing is idle
    const big = hold(a, live, "big", 5, 990);
    big[3]!.lastUsed = 900;
    const mid = hold(a, live, "mid", 3, 980);
    const take = (who: string) => {
      const freed = a.admit(who, 1, live, 1_000);
      for (const r of freed) {
        for (const [k, v] of live) if (v === r) live.delete(k);
        a.remove(r);
      }
      hold(a, live, who, 1, 1_000);
      return freed;
    };
    // 3 clients: a share of 2 each; "big" (5) is most over it, and its least recently used goes first
    expect(take("new")).toEqual([big[3]]);
    expect(take("new")[0]!.client).toBe("big");
    // "new" is at its share now: refused, with why
    expect(() => a.admit("new", 1, live, 1_000)).toThrow(/holds 2, and 3 would be over its fair share of 2/);
    // "mid" (3) is over its share too, and may not take from anyone
    expect(() => a.admit("mid", 1, live, 1_000)).toThrow(/over its fair share/);
    expect(a.held("big")).toBe(3);
    expect(a.held("mid")).toBe(mid.length);
  });

  it("never takes an entry with a request in flight, nor one used within reclaimIdleMs", () => {
    const a = new Admission<Admitted>({ max: 2 });
    const live = new Map<number, Admitted>();
    const [x, y] = hold(a, live, "greedy", 2, 1_000);
    x!.busy = 1;
    y!.busy = 1;
    expect(() => a.admit("new", 1, live, 1_000)).toThrow(/has a request in flight; retry shortly/);
    y!.busy = 0;
    expect(a.admit("new", 1, live, 1_000)).toEqual([y]);
    const b = new Admission<Admitted>({ max: 2, reclaimIdleMs: 30_000 });
    const live2 = new Map<number, Admitted>();
    hold(b, live2, "greedy", 2, 1_000);
    expect(() => b.admit("new", 1, live2, 2_000)).toThrow(/used in the last 30000 ms/);
    expect(b.admit("new", 1, live2, 31_000)).toHaveLength(1);
  });

  it("a fork asks for several entries at once, and takes them from over-share clients without pushing one below", () => {
    const a = new Admission<Admitted>({ max: 9 });
    const live = new Map<number, Admitted>();
    hold(a, live, "a", 6, 0);
    hold(a, live, "b", 3, 0);
    // "c" asks for 3 at once (a rollout forked into 3): a share of 3 each among 3 clients, all taken from "a" (6)
    const freed = a.admit("c", 3, live, 1_000);
    expect(freed).toHaveLength(3);
    expect(freed.every((r) => r.client === "a")).toBe(true);
  });
});
