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

  it("compares two models on the same protocol, names both, and still gates a regression", () => {
    const model = (name: string, baseUrl: string, mean = 0.8, extra: Record<string, unknown> = {}) =>
      run(
        {
          policy: `openai:${name}`,
          config: { ...run().run!.config, model: name, baseUrl, temperature: 0, seed: null, ...extra },
        },
        208,
        0,
        mean,
      );
    const same = compareRuns(model("qwen-7b", "http://a/v1"), model("qwen-7b-grpo", "http://b/v1"));
    expect(same.mismatches).toEqual([]);
    expect(same.failed).toBe(false);
    expect(same.evaluated).toEqual({
      base: { policy: "openai:qwen-7b", model: "qwen-7b", baseUrl: "http://a/v1" },
      cand: { policy: "openai:qwen-7b-grpo", model: "qwen-7b-grpo", baseUrl: "http://b/v1" },
      differs: ["policy", "model", "baseUrl"],
    });
    const worse = compareRuns(model("a", "http://a/v1"), model("b", "http://b/v1", 0.6));
    expect(worse.comparable).toBe(true);
    expect(worse.regression).toBe(true);
    expect(worse.failed).toBe(true);
    // a checkpoint is what is evaluated too
    expect(
      compareRuns(model("a", "u", 0.8, { checkpoint: "s100" }), model("a", "u", 0.8, { checkpoint: "s200" })).failed,
    ).toBe(false);
  });

  it("refuses protocol drift between two models, naming each differing field", () => {
    const base = run({ policy: "openai:a", config: { ...run().run!.config, model: "a", temperature: 0, topP: null } });
    const cand = run({
      policy: "openai:b",
      group: 4,
      expectedRollouts: 416,
      config: { ...run().run!.config, model: "b", temperature: 1, topP: 0.9, toolFormat: "openai", maxTurns: 3 },
    });
    const r = compareRuns(base, cand, { allow: { rollouts: true } });
    expect(r.comparable).toBe(false);
    expect(r.mismatches.find((m) => m.kind === "config")!.message).toBe(
      'different config: group 2 → 4, maxTurns 10 → 3, temperature 0 → 1, toolFormat "hermes" → "openai", topP null → 0.9',
    );
  });

  it("takes a setting an older run.json lacks as unset, and a set one as drift", () => {
    const old = run({ config: { maxTurns: 10, toolFormat: "hermes" } });
    const now = run({ config: { ...run().run!.config, seed: null, samplingArgs: null } });
    expect(compareRuns(old, now).mismatches).toEqual([]);
    expect(compareRuns(old, run({ config: { ...run().run!.config, seed: 7 } })).mismatches[0]!.message).toBe(
      "different config: seed unset → 7",
    );
  });
});
