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
});
