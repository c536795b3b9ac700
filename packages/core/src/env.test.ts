import { describe, expect, it } from "vitest";
import { defineEnv } from "./define-env.js";
import { defineEnvModule, type Env, type EnvModule } from "./env.js";
import type { Task } from "./types.js";

type MyTask = Task<{ answer: string }>;
const makeEnv = () =>
  defineEnv<MyTask>({
    name: "typed",
    systemPrompt: (task) => `Answer ${task.groundTruth.answer.length} letters.`,
    tools: [],
    reward: ({ completion, task }) => ({ ok: completion === task.groundTruth.answer ? 1 : 0 }),
    loadTasks: async () => [{ id: "a", prompt: "?", groundTruth: { answer: "x" } }],
  });

describe("Env and EnvModule typing (checked by tsc --noEmit)", () => {
  it("an Env<MyTask> is usable where an Env is expected", () => {
    const env: Env = makeEnv();
    expect(env.name).toBe("typed");
  });

  it("defineEnvModule keeps createEnv's return type: a synchronous env needs no await", async () => {
    const mod = defineEnvModule({ name: "typed", description: "d", createEnv: () => makeEnv() });
    const env: Env<MyTask> = mod.createEnv();
    const tasks = await env.loadTasks!();
    expect(tasks[0]!.groundTruth.answer).toBe("x");
    const asyncMod = defineEnvModule({ name: "typed", description: "d", createEnv: async () => makeEnv() });
    const pending: Promise<Env<MyTask>> = asyncMod.createEnv();
    expect((await pending).name).toBe("typed");
    const registry: EnvModule[] = [mod, asyncMod];
    expect(registry).toHaveLength(2);
  });
});
