import { describe, expect, it } from "vitest";
import { defineEnv } from "./define-env.js";
import { boundExplanation, scalarMeta } from "./explain.js";
import { scriptedPolicy } from "./policies/scripted.js";
import type { PolicyInput } from "./policy.js";
import { runRollout } from "./rollout.js";
import type { Task } from "./types.js";

const GOLD = "GOLD-7f3a";

function env(explain?: () => unknown) {
  return defineEnv<Task<string>>({
    name: "explained",
    systemPrompt: "Answer in <answer> tags.",
    reward: ({ completion, task }) => ({ correct: completion.includes(task.groundTruth) ? 1 : 0 }),
    rewardWeights: { correct: 1 },
    ...(explain ? { explainReward: explain as never } : {}),
  });
}

const task: Task<string> = {
  id: "t1",
  prompt: "what?",
  groundTruth: GOLD,
  meta: { level: 3, split: "test", extra: { nested: 1 } },
};

describe("explainReward and task metadata on results", () => {
  it("puts the env's explanation and the task's scalar metadata on the result; the policy never sees the gold", async () => {
    const seen: string[] = [];
    const policy = scriptedPolicy("p", (input: PolicyInput) => {
      // what reaches the model: the conversation and the tool list (the task object is for scripted policies)
      seen.push(JSON.stringify([input.messages, input.tools]));
      return { answer: "-12345" };
    });
    const e = env();
    e.capabilities!.explain = {
      explainReward: (_id, messages, t) => ({
        extracted: String(messages.at(-1)?.content ?? ""),
        gold: t.groundTruth,
        diff: ["differs"],
      }),
    };
    const r = await runRollout(e, task, policy);
    expect(r.reward).toBe(0);
    expect(r.explain?.gold).toBe(GOLD);
    expect(r.explain?.extracted).toContain("-12345");
    expect(r.taskMeta).toEqual({ level: 3, split: "test" });
    expect(seen.join("\n")).not.toContain(GOLD);
  });

  it("a throwing or absent explainReward leaves the result without one and the reward untouched", async () => {
    const policy = scriptedPolicy("p", () => ({ answer: GOLD }));
    const thrown = await runRollout(
      env(() => {
        throw new Error("boom");
      }),
      task,
      policy,
    );
    expect(thrown.reward).toBe(1);
    expect(thrown.explain).toBeUndefined();
    const none = await runRollout(env(), task, policy);
    expect(none.explain).toBeUndefined();
  });

  it("bounds sizes", () => {
    const x = boundExplanation({
      extracted: "a".repeat(5000),
      gold: 42,
      diff: Array.from({ length: 30 }, (_, i) => `l${i}`),
    })!;
    expect(x.extracted!.length).toBeLessThan(2100);
    expect(x.gold).toBe("42");
    expect(x.diff).toHaveLength(21);
    expect(boundExplanation(null)).toBeUndefined();
    expect(scalarMeta({ a: Number.NaN, b: {} })).toBeUndefined();
  });
});
