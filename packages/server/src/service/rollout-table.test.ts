import { describe, expect, it } from "vitest";
import { RolloutTable, slotOf } from "./rollout-table.js";

interface E {
  id: string;
  token: string;
  tokenBytes: Buffer;
  slot: number;
}

function minted(t: RolloutTable<E>, chosen?: string): E {
  const slot = t.claim();
  const token = `tok${Math.random().toString(36).slice(2)}~${slot}`;
  const e = {
    id: chosen ?? `r_${Math.random().toString(36).slice(2)}.${slot}`,
    token,
    tokenBytes: Buffer.from(token),
    slot,
  };
  t.add(e);
  return e;
}

describe("slotOf", () => {
  it("reads only a canonical decimal suffix after the separator", () => {
    expect(slotOf("r_abc.0", ".")).toBe(0);
    expect(slotOf("r_abc.17", ".")).toBe(17);
    expect(slotOf("a.b.123456789", ".")).toBe(123456789);
    expect(slotOf("tok~5", "~")).toBe(5);
    for (const bad of ["r_abc", "r_abc.", "r_abc.07", "r_abc.1x", "r_abc.-1", "r_abc.1234567890", ".", "r_abc. 1"]) {
      expect(slotOf(bad, ".")).toBe(-1);
    }
    expect(slotOf("tok.5", "~")).toBe(-1);
    expect(slotOf("r_abc~5", ".")).toBe(-1);
  });
});

describe("RolloutTable", () => {
  it("finds minted rollouts by id and by token, reuses freed slots, and iterates the live ones", () => {
    const t = new RolloutTable<E>();
    const a = minted(t);
    const b = minted(t);
    expect([a.slot, b.slot]).toEqual([0, 1]);
    expect(t.get(a.id)).toBe(a);
    expect(t.byToken(b.token)).toBe(b);
    expect(t.size).toBe(2);
    expect(t.remove(a)).toBe(true);
    expect(t.remove(a)).toBe(false);
    expect(t.get(a.id)).toBeUndefined();
    expect(t.byToken(a.token)).toBeUndefined();
    const c = minted(t);
    expect(c.slot).toBe(0);
    // the freed slot's old id and token name the slot, but not its new rollout
    expect(t.get(a.id)).toBeUndefined();
    expect(t.byToken(a.token)).toBeUndefined();
    expect(t.get(c.id)).toBe(c);
    expect([...t.values()]).toEqual([c, b]);
    expect(t.holds(c) && !t.holds(a)).toBe(true);
  });

  it("refuses forged ids and tokens that name a live rollout's slot", () => {
    const t = new RolloutTable<E>();
    const a = minted(t);
    expect(t.get(`r_forged.${a.slot}`)).toBeUndefined();
    expect(t.byToken(`${"A".repeat(a.token.length - 2)}~${a.slot}`)).toBeUndefined();
    expect(t.byToken(`${a.token}0`)).toBeUndefined(); // another slot (and length)
    expect(t.byToken(a.token.replace(/~\d+$/, ""))).toBeUndefined(); // no slot
    expect(t.byToken(`~${a.slot}`)).toBeUndefined();
    expect(t.get("")).toBeUndefined();
  });

  it("keeps client-chosen ids apart, even one that looks like a minted id of a live slot", () => {
    const t = new RolloutTable<E>();
    const a = minted(t);
    const chosen = minted(t, `ep.${a.slot}`);
    const plain = minted(t, "my-episode");
    expect(t.get(`ep.${a.slot}`)).toBe(chosen);
    expect(t.get("my-episode")).toBe(plain);
    expect(t.get(a.id)).toBe(a);
    expect(t.byToken(chosen.token)).toBe(chosen);
    t.remove(chosen);
    expect(t.get(`ep.${a.slot}`)).toBeUndefined();
    expect(t.get(a.id)).toBe(a);
    expect(t.size).toBe(2);
    // a chosen id that happens to name its own slot is found through the slot, and gone once removed
    const slot = t.claim();
    const own = { id: `mine.${slot}`, token: `t~${slot}`, tokenBytes: Buffer.from(`t~${slot}`), slot };
    t.add(own);
    expect(t.get(own.id)).toBe(own);
    expect(t.remove(own)).toBe(true);
    expect(t.get(own.id)).toBeUndefined();
  });
});
