import type { RolloutResult } from "@benchmax/core";
import { describe, expect, it, vi } from "vitest";
import { progressReporter } from "./progress.js";

const result = (reward: number): RolloutResult =>
  ({
    taskId: "t",
    rolloutId: "t#0",
    outcome: "completed",
    reward,
    turns: 1,
    toolCalls: 0,
    durationMs: 1,
    messages: [],
  }) as unknown as RolloutResult;

describe("progressReporter without a TTY", () => {
  it("prefixes every line with a UTC timestamp", () => {
    const out: string[] = [];
    const at = new Date("2026-11-24T12:00:00.000Z");
    const p = progressReporter("math", { tty: false, write: (s) => out.push(s), now: () => at });
    p({ type: "start", total: 2, skipped: 0 });
    p({ type: "rollout", result: result(1), done: 1, total: 2 });
    p({ type: "retry", rolloutId: "t#1", attempt: 1, error: "503" });
    p({ type: "rollout", result: result(0), done: 2, total: 2 });
    expect(out).toEqual([
      "2026-11-24T12:00:00Z math: 2 rollouts\n",
      "2026-11-24T12:00:00Z math: 1/2 done, mean reward 1.000, errors 0\n",
      "2026-11-24T12:00:00Z math: retrying t#1 (attempt 1): 503\n",
      "2026-11-24T12:00:00Z math: 2/2 done, mean reward 0.500, errors 0\n",
    ]);
  });

  it("writes a line at least once a minute while nothing else changes", () => {
    const out: string[] = [];
    let t = Date.parse("2026-11-24T12:00:00Z");
    const p = progressReporter("x", { tty: false, write: (s) => out.push(s), now: () => new Date(t) });
    p({ type: "start", total: 1000, skipped: 0 });
    p({ type: "rollout", result: result(1), done: 1, total: 1000 });
    p({ type: "rollout", result: result(1), done: 2, total: 1000 });
    expect(out).toHaveLength(2);
    t += 61_000;
    p({ type: "rollout", result: result(1), done: 3, total: 1000 });
    expect(out[2]).toBe("2026-11-24T12:01:01Z x: 3/1000 done, mean reward 1.000, errors 0\n");
  });

  it("says it is still running when nothing finishes for a while (a hung endpoint is not silence)", () => {
    vi.useFakeTimers();
    try {
      const out: string[] = [];
      const p = progressReporter("m", { tty: false, write: (s) => out.push(s), now: () => new Date(Date.now()) });
      p({ type: "start", total: 10, skipped: 0 });
      p({ type: "rollout", result: result(1), done: 1, total: 10 });
      expect(out).toHaveLength(2);
      vi.advanceTimersByTime(125_000);
      expect(out.slice(2).map((l) => l.replace(/^\S+ /, ""))).toEqual([
        "m: still running: 1/10 done, none finished in the last 60 s\n",
        "m: still running: 1/10 done, none finished in the last 60 s\n",
      ]);
      p({ type: "end", done: 1, total: 10, durationMs: 1 });
      vi.advanceTimersByTime(300_000);
      expect(out).toHaveLength(4);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe("ETA (issue 27)", () => {
  it("formats whole seconds first: never `2m60s`", async () => {
    const { formatDuration } = await import("./progress.js");
    expect(formatDuration(179.6)).toBe("3m00s");
    expect(formatDuration(119.5)).toBe("2m00s");
    expect(formatDuration(59.4)).toBe("59s");
    expect(formatDuration(59.6)).toBe("1m00s");
    expect(formatDuration(3599.7)).toBe("1h00m");
    expect(formatDuration(3725)).toBe("1h02m");
    expect(formatDuration(Number.NaN)).toBe("—");
    for (let t = 0; t < 7300; t += 0.7) expect(formatDuration(t)).not.toMatch(/60[sm]/);
  });

  it("follows the mean pace since the start, so bursts of finishes do not make it flip", async () => {
    const { etaSeconds } = await import("./progress.js");
    expect(etaSeconds(0, 0, 100, 5000)).toBeUndefined();
    // resumed rollouts do not count as pace
    expect(etaSeconds(50, 50, 100, 5000)).toBeUndefined();
    // 16 finish together at 10 s, then 16 more at 20 s: the estimate stays put across the burst
    const a = etaSeconds(16, 0, 64, 10_000)!;
    const b = etaSeconds(32, 0, 64, 20_000)!;
    expect(a).toBeCloseTo(30);
    expect(b).toBeCloseTo(20);
    expect(a - b).toBeCloseTo(10);
  });
});
