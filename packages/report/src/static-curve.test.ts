import { LiveSeries } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { staticLineChart } from "./static-curve.js";
import { renderWatchPage } from "./watch-page.js";

const paths = (svg: string) => [...svg.matchAll(/<path d="([^"]*)"[^>]*stroke="([^"]*)"/g)].map((m) => [m[1], m[2]]);
const coords = (d: string) =>
  d
    .split(/[ML]/)
    .filter(Boolean)
    .map((p) => p.split(" ").map(Number));

describe("staticLineChart", () => {
  it("draws one path per line across the plot, spanning gaps, with y from 0 to the top value", () => {
    const svg = staticLineChart(
      [0, 10, 20, 30],
      [
        { label: "mean reward", color: "#111111", data: [0, 0.5, null, 1] },
        { label: "all gaps", color: "#222222", data: [null, null, null, null] },
      ],
      1,
      "trainer step",
    );
    const ps = paths(svg);
    expect(ps).toHaveLength(1);
    expect(ps[0]![1]).toBe("#111111");
    const pts = coords(ps[0]![0]!);
    expect(pts).toHaveLength(3);
    // x: first and last slot at the plot's edges; y: 0 at the bottom, 1 at the top, 0.5 half way
    expect(pts[0]![0]).toBeLessThan(pts[1]![0]!);
    expect(pts[2]![0]).toBeGreaterThan(pts[1]![0]!);
    expect(pts[0]![1]! - pts[1]![1]!).toBeCloseTo(pts[1]![1]! - pts[2]![1]!, 0);
    expect(svg).toContain(">30</text>");
    expect(svg).toContain("trainer step");
    expect(svg).toContain("all gaps");
  });

  it("raises the top above yMax for larger values, and draws nothing for an empty series", () => {
    expect(staticLineChart([1], [{ label: "x", color: "#000", data: [4] }], 1)).toContain(">4</text>");
    expect(paths(staticLineChart([], [{ label: "x", color: "#000", data: [] }]))).toHaveLength(0);
  });

  it("shows hostile labels as text", () => {
    const svg = staticLineChart([0], [{ label: '<script>alert(1)</script>"', color: '"><x', data: [1] }]);
    expect(svg).not.toContain("<script>");
    expect(svg).not.toContain('"><x');
    expect(svg).toContain("&lt;script&gt;");
  });
});

describe("the watch page's first frame", () => {
  it("holds the reward curve of the inlined snapshot as SVG: mean reward, pass rate, each component", () => {
    const s = new LiveSeries(1);
    for (let i = 0; i < 40; i++) {
      const reward = i % 3 === 0 ? 1 : 0;
      s.add({
        taskId: "t",
        rolloutId: `r${i}`,
        groupId: `g${i >> 2}`,
        sample: i % 4,
        attempt: 0,
        outcome: "completed",
        reward,
        rewards: { correct: reward, "<b>fmt</b>": 1 },
        turns: 1,
        toolCalls: 0,
        toolErrors: 0,
        durationMs: 1,
        messages: [],
        trainerStep: i >> 3,
      });
    }
    const html = renderWatchPage("run", s.snapshot(), "tok");
    const svg = html.slice(html.indexOf('<div id="static-reward"'), html.indexOf('<canvas id="chart-reward"'));
    expect(paths(svg)).toHaveLength(4);
    for (const [d] of paths(svg)) expect(coords(d!)).toHaveLength(5);
    expect(svg).toContain("&lt;b&gt;fmt&lt;/b&gt;");
    expect(svg).toContain("trainer step");
  });
});
