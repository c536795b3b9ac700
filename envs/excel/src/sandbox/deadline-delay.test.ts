import { describe, expect, it } from "vitest";
import { deadlineDelay } from "./interpreters.js";

describe("deadlineDelay", () => {
  it("rounds a deadline up to whole seconds, so released rollouts share Node's timer lists", () => {
    expect(deadlineDelay(-5)).toBe(0);
    expect(deadlineDelay(0)).toBe(0);
    expect(deadlineDelay(1)).toBe(1000);
    expect(deadlineDelay(1000)).toBe(1000);
    expect(deadlineDelay(1000.5)).toBe(2000);
    // 10,000 rollouts whose deadlines fall anywhere in 20 minutes use at most 1,200 distinct delays
    const delays = new Set(Array.from({ length: 10_000 }, (_, i) => deadlineDelay((i * 1_200_000) / 10_000 + 0.37)));
    expect(delays.size).toBeLessThanOrEqual(1200);
    for (const d of delays) expect(d % 1000).toBe(0);
  });
});
