import type { RunSummary } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { summaryTable } from "./format.js";

const summary = (over: Partial<RunSummary> = {}): RunSummary & { run?: { oracle?: boolean } } => ({
  env: "wikipedia",
  policy: "openai",
  n: 1000,
  outcomes: { completed: 990, truncated: 5, env_error: 3, infra_error: 2 },
  reward: { mean: 0.61234, std: 0.3 },
  components: { exact_match: 0.55, f1: 0.67, supporting_title_recall: 0.8, format: 0.99, search_calls: 2.5 },
  passRate: 0.55,
  passThreshold: 1,
  tasks: {},
  turns: { mean: 3 },
  toolCalls: { mean: 2 },
  rolloutMs: null,
  durationMs: 123456,
  startedAt: "",
  finishedAt: "",
  versions: {},
  ...over,
});

describe("summaryTable", () => {
  it("fits the terminal width it is given", () => {
    for (const width of [60, 80, 100, 160]) {
      const out = summaryTable([summary(), summary({ env: "crm" })], width);
      for (const line of out.split("\n")) expect(line.length).toBeLessThanOrEqual(width);
      expect(out).toMatch(/exact_match/);
    }
  });

  it("marks an oracle policy", () => {
    const out = summaryTable([{ ...summary({ policy: "reference" }), run: { oracle: true } }], 100);
    expect(out).toMatch(/ORACLE/);
    expect(summaryTable([summary()], 100)).not.toMatch(/ORACLE/);
  });
});

describe("RL lines under the table", () => {
  it("prints pass@k, max@k, the zero-variance share, tokens and the breakdown, within the width", () => {
    const s = summary({
      rl: {
        passAtK: { 1: 0.25, 4: 0.5 },
        maxAtK: { 1: 0.3, 4: 0.6 },
        groups: 94,
        groupRewardStd: 0.2,
        zeroVarianceShare: 0.75,
      },
      tokens: {
        prompt: null,
        completion: { mean: 412, std: 1, min: 1, max: 900, p50: 380, p95: 850 },
        total: null,
      },
      breakdown: {
        level: {
          "Level 1": { n: 40, scored: 40, meanReward: 0.9, passRate: 0.9 },
          "Level 5": { n: 36, scored: 36, meanReward: 0.1, passRate: 0.1 },
        },
        split: { test: { n: 76, scored: 76, meanReward: 0.5, passRate: 0.5 } },
      },
    });
    const out = summaryTable([s], 80);
    const text = out.replace(/\n {2}/g, " "); // wrapped lines joined back
    expect(text).toMatch(/pass@1 25\.0% pass@4 50\.0%/);
    expect(text).toMatch(/max@4 0\.600/);
    expect(text).toMatch(/zero-variance 75\.0% of 94 groups/);
    expect(text).toMatch(/completion tokens mean 412 p50 380 p95 850/);
    expect(text).toMatch(/pass by level: Level 1 90\.0% \(40\), Level 5 10\.0% \(36\)/);
    expect(out).not.toMatch(/pass by split/); // one value: nothing to compare
    for (const line of out.split("\n")) expect(line.length).toBeLessThanOrEqual(80);
  });
  it("adds nothing for a run without RL numbers", () => {
    expect(summaryTable([summary()], 100)).not.toMatch(/pass@/);
  });
});
