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
