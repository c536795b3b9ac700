import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineEnv } from "./define-env.js";
import { scriptedPolicy } from "./policies/scripted.js";
import { runRollout } from "./rollout.js";
import type { RolloutResult } from "./rollout-result.js";
import { MessageSchema, RolloutResultSchema, RunSummarySchema, TaskSchema } from "./schemas.js";
import { type RunSummary, summarize } from "./summary.js";
import { assertZod4, tool } from "./tool.js";
import type { Message, Task } from "./types.js";

const env = defineEnv<Task<string>>({
  name: "s",
  systemPrompt: "answer",
  tools: [tool({ name: "t", description: "t", parameters: z.object({}), execute: () => "ok" })],
  reward: ({ completion, task }) => ({ ok: completion === task.groundTruth ? 1 : 0 }),
});
const policy = scriptedPolicy("p", ({ turn }) =>
  turn === 0 ? { calls: [{ name: "t", arguments: {} }] } : { answer: "a" },
);

describe("wire schemas", () => {
  it("accept what the engine writes: a rollout result and a run summary", async () => {
    const r = await runRollout(env, { id: "x", prompt: "q", groundTruth: "a" }, policy);
    const parsed: RolloutResult = RolloutResultSchema.parse(JSON.parse(JSON.stringify(r)));
    expect(parsed).toEqual(JSON.parse(JSON.stringify(r)));
    const s: RunSummary = RunSummarySchema.parse(summarize([r], { env: "s", policy: "p" }));
    expect(s.outcomes.completed).toBe(1);
  });

  it("reject malformed messages and tasks, naming the field", () => {
    expect(MessageSchema.safeParse({ role: "tool", content: "x" }).success).toBe(false);
    expect(MessageSchema.safeParse({ role: "robot", content: "x" }).success).toBe(false);
    const ok: Message = MessageSchema.parse({ role: "assistant", content: null });
    expect(ok.role).toBe("assistant");
    const bad = TaskSchema.safeParse({ prompt: "p", groundTruth: 1 });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues[0]!.path).toEqual(["id"]);
    expect(TaskSchema.safeParse({ id: "a", groundTruth: null }).success).toBe(true);
  });

  it("refuse a zod 3 schema with a clear error", () => {
    const v3Like = { _def: { typeName: "ZodObject" } };
    expect(() => assertZod4(v3Like, 'tool "x": parameters')).toThrow(/zod 3 schema; benchmax needs zod \^4/);
    expect(() =>
      defineEnv({
        name: "v3",
        systemPrompt: "",
        tools: [{ name: "x", description: "", parameters: v3Like as never, execute: () => "" }],
        reward: () => ({ r: 1 }),
      }),
    ).toThrow(/tool "x": parameters is a zod 3 schema/);
  });
});
