import { describe, expect, it } from "vitest";
import { formatElapsed, Heartbeat } from "../../../scripts/heartbeat.mjs";

/** `npm start` from a fresh clone: a cold build must never look like a hang (issue 27: 6.5 minutes of silence). */
describe("set-up heartbeat", () => {
  it("says what is running after every 10 s without output, and stays quiet while the build talks", () => {
    const beat = new Heartbeat({ label: "building the packages", intervalMs: 10_000, start: 0 });
    const printed: Array<[number, string]> = [];
    // a build that prints at 3 s and 4 s, then nothing until 65 s: ticks every second, as runWithHeartbeat does
    const outputs = new Set([3_000, 4_000, 65_000]);
    for (let t = 0; t <= 70_000; t += 1_000) {
      if (outputs.has(t)) beat.output(t);
      const line = beat.due(t);
      if (line) printed.push([t, line]);
    }
    expect(printed.map(([t]) => t)).toEqual([14_000, 24_000, 34_000, 44_000, 54_000, 64_000]);
    expect(printed[0]![1]).toBe("benchmax setup: still building the packages (14s so far)…");
    expect(printed.at(-1)![1]).toBe("benchmax setup: still building the packages (1m04s so far)…");
    // no silent gap over 10 s anywhere in the run
    const times = [0, ...[...outputs].filter((t) => t <= 70_000), ...printed.map(([t]) => t)].sort((a, b) => a - b);
    for (let i = 1; i < times.length; i++) expect(times[i]! - times[i - 1]!).toBeLessThanOrEqual(10_000);
  });

  it("formats elapsed time", () => {
    expect(formatElapsed(59_400)).toBe("59s");
    expect(formatElapsed(59_600)).toBe("1m00s");
    expect(formatElapsed(390_000)).toBe("6m30s");
  });
});
