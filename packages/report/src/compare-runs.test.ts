import type { RunSummary } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { compareRuns, type GateSummary, type RunIdentity } from "./compare-runs.js";

function run(over: Partial<RunIdentity> = {}, n = 208, errors = 0, mean = 0.8): GateSummary {
  const identity: RunIdentity = {
    env: "math",
    dataset: "fixtures",
    datasetHash: "a".repeat(64),
    tasks: 104,
    group: 2,
    expectedRollouts: 208,
    completed: true,
    policy: "openai",
    config: { maxTurns: 10, toolFormat: "hermes", envOptions: {}, limit: null, split: null },
    ...over,
  };
  const summary: RunSummary = {
    env: identity.env,
    policy: identity.policy,
    n,
    outcomes: { completed: n - errors, truncated: 0, env_error: 0, infra_error: errors },
    reward: { mean, std: 0.1 },
    components: { correct: mean },
    passRate: mean,
    passThreshold: 1,
    tasks: {},
    turns: { mean: 1 },
    toolCalls: { mean: 1 },
    rolloutMs: null,
    durationMs: 1,
    startedAt: "",
    finishedAt: "",
    versions: {},
  };
  return { ...summary, run: identity };
}

describe("compareRuns (the regression gate)", () => {
  it("passes the same run and fails a drop beyond --max-drop", () => {
    expect(compareRuns(run(), run()).failed).toBe(false);
    const worse = compareRuns(run(), run({}, 208, 0, 0.7));
    expect(worse.regression).toBe(true);
    expect(worse.failed).toBe(true);
    expect(compareRuns(run(), run({}, 208, 0, 0.7), { maxDrop: 0.15 }).failed).toBe(false);
  });

  it("tolerates one transient error in 208 rollouts by default, not a real rise in errors", () => {
    const one = compareRuns(run(), run({}, 208, 1));
    expect(one.rows.find((r) => r.metric === "errorRate")).toMatchObject({ regression: false });
    expect(one.failed).toBe(false);
    const many = compareRuns(run(), run({}, 208, 5));
    expect(many.rows.find((r) => r.metric === "errorRate")).toMatchObject({ regression: true });
    expect(compareRuns(run(), run({}, 208, 1), { maxErrorRateIncrease: 0 }).failed).toBe(true);
    expect(compareRuns(run(), run({}, 208, 5), { maxErrorRateIncrease: 0.05 }).failed).toBe(false);
  });

  it("refuses a killed run, a --limit run, another env and another config unless allowed, saying why", () => {
    const killed = compareRuns(run(), run({ completed: false }, 20));
    expect(killed.failed).toBe(true);
    expect(killed.comparable).toBe(false);
    expect(killed.mismatches.map((m) => m.message)).toContain(
      "candidate is partial: 20 of 208 rollouts (interrupted or killed run)",
    );
    expect(compareRuns(run(), run({ completed: false }, 20), { allow: { rollouts: true } }).failed).toBe(false);

    const limited = compareRuns(
      run(),
      run(
        { tasks: 10, expectedRollouts: 20, datasetHash: "b".repeat(64), config: { ...run().run!.config, limit: 10 } },
        20,
      ),
    );
    expect(limited.mismatches.map((m) => m.kind).sort()).toEqual(["dataset", "rollouts"]);
    expect(limited.mismatches.find((m) => m.kind === "rollouts")!.message).toMatch(
      /baseline 208 \(104 tasks × 2\), candidate 20 \(10 tasks × 2\) \(--limit 10\)/,
    );

    const crm = compareRuns(run(), run({ env: "crm", datasetHash: "c".repeat(64) }));
    expect(crm.mismatches.find((m) => m.kind === "env")!.message).toBe("different env: baseline math, candidate crm");
    expect(crm.failed).toBe(true);

    const cfg = compareRuns(run(), run({ config: { ...run().run!.config, maxTurns: 3 } }));
    expect(cfg.mismatches).toEqual([{ kind: "config", message: "different config: maxTurns 10 → 3", allowed: false }]);
    expect(
      compareRuns(run(), run({ config: { ...run().run!.config, maxTurns: 3 } }), { allow: { config: true } }).failed,
    ).toBe(false);
  });

  it("checks what it can on summaries written before run identities", () => {
    const old = (s: GateSummary, config: Record<string, unknown>): GateSummary => {
      const { run: _r, ...rest } = s;
      return { ...rest, config };
    };
    const a = old(run(), { dataset: "fixtures", group: 1 });
    expect(compareRuns(a, old(run(), { dataset: "fixtures", group: 1 })).failed).toBe(false);
    expect(compareRuns(a, old(run({}, 20), { dataset: "fixtures", group: 1 })).mismatches[0]!.kind).toBe("rollouts");
    expect(compareRuns(a, old(run(), { dataset: "other.jsonl", group: 1 })).mismatches[0]!.kind).toBe("dataset");
  });
});
