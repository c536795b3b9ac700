import { describe, expect, it } from "vitest";
import { randomBase64url, randomRolloutId } from "./rollout-id.js";

describe("randomBase64url", () => {
  it("gives base64url text of the asked length, never the same twice, across pool refills", () => {
    const seen = new Set<string>();
    // 24-byte tokens: 4096 / 24 per pool, so this crosses many refills
    for (let i = 0; i < 2000; i++) {
      const t = randomBase64url(24);
      expect(t).toMatch(/^[A-Za-z0-9_-]{32}$/);
      seen.add(t);
    }
    expect(seen.size).toBe(2000);
    expect(randomBase64url(12)).toMatch(/^[A-Za-z0-9_-]{16}$/);
  });

  it("uses every byte value (no zeroed or stuck pool)", () => {
    const bytes = new Set<number>();
    for (let i = 0; i < 300; i++) for (const b of Buffer.from(randomBase64url(24), "base64url")) bytes.add(b);
    expect(bytes.size).toBe(256);
  });

  it("refuses more bytes than one pool", () => {
    expect(() => randomBase64url(5000)).toThrow(/at most 4096 bytes/);
  });
});

describe("randomRolloutId", () => {
  it("mints a prefixed 96-bit id, different each time", () => {
    const a = randomRolloutId();
    expect(a).toMatch(/^r_[A-Za-z0-9_-]{16}$/);
    expect(randomRolloutId()).not.toBe(a);
    expect(randomRolloutId("mcp_")).toMatch(/^mcp_/);
  });
});
