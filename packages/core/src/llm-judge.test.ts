import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineEnv } from "./define-env.js";
import { fillTemplate, judgeComponent, LlmJudge, parseJudgeScore } from "./llm-judge.js";
import { type FakeOpenAI, startFakeOpenAI } from "./policies/fake-openai.js";
import { scriptedPolicy } from "./policies/scripted.js";
import { runRollout } from "./rollout.js";
import { Rubric } from "./rubric.js";
import type { Task } from "./types.js";

let judge: FakeOpenAI;
let base = "";
let calls = 0;
let reply = '{"score": 8}';
let status = 200;

beforeAll(async () => {
  judge = await startFakeOpenAI(
    () => {
      calls++;
      return status !== 200 ? { status } : { message: { role: "assistant", content: reply } };
    },
    { model: "judge" },
  );
  base = judge.url;
});
afterAll(() => judge.close());

describe("LLM judge", () => {
  it("parses common score shapes", () => {
    expect(parseJudgeScore('{"score": 0.5, "why": "ok"}')).toBe(0.5);
    expect(parseJudgeScore("Reasoning...\nScore: 7")).toBe(7);
    expect(parseJudgeScore("Yes, it refuses.")).toBe(1);
    expect(parseJudgeScore("3")).toBe(3);
    expect(parseJudgeScore("unclear")).toBeNaN();
    expect(fillTemplate("Q: {{question}} A: {{completion}} {{missing}}", { question: "q", completion: "a" })).toBe(
      "Q: q A: a {{missing}}",
    );
  });

  it("scores through a rubric, caches replies (memory and file), and weights components", async () => {
    calls = 0;
    reply = '{"score": 8}';
    const cacheFile = join(mkdtempSync(join(tmpdir(), "bmx-judge-")), "cache.jsonl");
    const judge = new LlmJudge({
      model: "judge",
      baseURL: base,
      template: "Rate {{completion}} for {{question}}",
      scale: 10,
      cacheFile,
    });
    const env = defineEnv<Task<string>>({
      name: "judged",
      systemPrompt: "",
      reward: new Rubric([
        { name: "exact", weight: 0.5, score: ({ completion, task }) => completion === task.groundTruth },
        judgeComponent("quality", judge, { weight: 0.5 }),
      ]),
    });
    const policy = scriptedPolicy("p", () => ({ answer: "42" }));
    const task = { id: "a", prompt: "meaning?", groundTruth: "42" };
    const r1 = await runRollout(env, task, policy);
    const r2 = await runRollout(env, task, policy);
    expect(r1.rewards).toEqual({ exact: 1, quality: 0.8 });
    expect(r1.reward).toBeCloseTo(0.9);
    expect(r2.reward).toBeCloseTo(0.9);
    expect(calls).toBe(1);
    const again = new LlmJudge({
      model: "judge",
      baseURL: base,
      template: "Rate {{completion}} for {{question}}",
      scale: 10,
      cacheFile,
    });
    expect(await again.score({ completion: "42", question: "meaning?" })).toBe(0.8);
    expect(calls).toBe(1);
  });

  it("is infra_error when the judge endpoint fails, env_error when its reply has no score", async () => {
    const mk = () =>
      defineEnv<Task<string>>({
        name: "judged",
        systemPrompt: "",
        reward: new Rubric([
          judgeComponent(
            "q",
            new LlmJudge({ model: "judge", baseURL: base, template: "{{completion}}", maxRetries: 1 }),
          ),
        ]),
      });
    status = 500;
    const down = await runRollout(
      mk(),
      { id: "b", prompt: "p", groundTruth: "" },
      scriptedPolicy("p", () => ({ answer: "x1" })),
    );
    expect(down.outcome).toBe("infra_error");
    status = 200;
    reply = "I cannot decide";
    const bad = await runRollout(
      mk(),
      { id: "c", prompt: "p", groundTruth: "" },
      scriptedPolicy("p", () => ({ answer: "x2" })),
    );
    expect(bad.outcome).toBe("env_error");
    expect(bad.error).toMatch(/no score/);
  });
});
