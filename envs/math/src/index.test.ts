import { type Message, runMany, runRollout, scoreCase } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import envModule, { ARITHMETIC_SYSTEM_PROMPT, createMathEnv, MATH_SYSTEM_PROMPT } from "./index.js";

describe("math env", () => {
  it("is an EnvModule", async () => {
    expect(envModule.name).toBe("math");
    expect(envModule.description).toMatch(/calculator/i);
    const env = await envModule.createEnv({});
    expect(env.name).toBe("math");
    expect(env.capabilities?.reward?.weights).toEqual({ correct: 1 });
    expect(env.listTools().map((t) => t.name)).toEqual(["calculator"]);
    expect(env.listTools()[0]!.parameters).toMatchObject({
      type: "object",
      properties: { expression: { type: "string" } },
      required: ["expression"],
    });
    expect(() => createMathEnv({ subset: "nope" as never })).toThrow(/subset must be/);
  });

  it("runs the calculator; mistakes are tool errors the model reads", async () => {
    const env = createMathEnv();
    const [task] = await env.capabilities!.tasks!.loadTasks!(undefined, { limit: 1 });
    await env.init("r1", task!);
    expect(await env.runTool("r1", { name: "calculator", arguments: { expression: "0.1 + 0.2" } })).toEqual({
      content: "0.3",
      isError: false,
    });
    expect(await env.runTool("r1", { name: "calculator", arguments: { expression: "1 / (3 - 3)" } })).toEqual({
      content: "Error: division by zero at position 3",
      isError: true,
    });
    const bad = await env.runTool("r1", { name: "calculator", arguments: { expr: "1" } });
    expect(bad.isError).toBe(true);
    expect(bad.content).toMatch(/expression/);
    await env.release("r1");
    await env.close();
  });

  it("tells the model to use the calculator and answer in tags", async () => {
    const env = createMathEnv();
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    const prompt = env.systemPrompt as (t: (typeof tasks)[number]) => string;
    const arith = tasks.find((t) => t.groundTruth.kind === "arithmetic")!;
    const math = tasks.find((t) => t.groundTruth.kind === "math")!;
    expect(prompt(arith)).toBe(ARITHMETIC_SYSTEM_PROMPT);
    expect(prompt(math)).toBe(MATH_SYSTEM_PROMPT);
    expect(MATH_SYSTEM_PROMPT).toMatch(/calculator.*<answer><\/answer>/s);
    expect(MATH_SYSTEM_PROMPT).toContain("\\boxed{}");
    expect(ARITHMETIC_SYSTEM_PROMPT).toMatch(/calculator.*<answer><\/answer>/s);
  });

  it.each(["hermes", "openai"] as const)("the reference policy solves every fixture (%s)", async (toolFormat) => {
    const env = createMathEnv();
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    const { results } = await runMany(env, tasks, env.capabilities!.reference!.referencePolicy(), {
      toolFormat,
      concurrency: 16,
    });
    expect(results).toHaveLength(tasks.length);
    const failed = results.filter((r) => r.outcome !== "completed" || r.reward !== 1);
    expect(failed.map((r) => ({ id: r.taskId, outcome: r.outcome, rewards: r.rewards, error: r.error }))).toEqual([]);
    for (const r of results) expect(r.rewards).toEqual({ correct: 1, symbolic: 1, format: 1 });
    // every arithmetic rollout used the calculator, without a tool error
    const arith = results.filter((r) => r.taskId.startsWith("arith-"));
    expect(arith.every((r) => r.toolCalls === 1 && r.toolErrors === 0)).toBe(true);
    const math = results.filter((r) => r.taskId.startsWith("math-"));
    expect(math.some((r) => r.toolCalls === 1)).toBe(true);
    expect(math.every((r) => r.toolErrors === 0)).toBe(true);
    await env.close();
  });

  it("runs one rollout end to end with a tool call", async () => {
    const env = createMathEnv();
    const task = env.capabilities!.tasks!.parseTask!({ task: "What is 2 + 3 × 4?", answer: "14" });
    const r = await runRollout(env, task, env.capabilities!.reference!.referencePolicy(), { toolFormat: "openai" });
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(1);
    const toolMsg = r.messages.find((m) => m.role === "tool") as Extract<Message, { role: "tool" }>;
    expect(toolMsg.content).toBe("14");
    expect(r.messages[0]).toEqual({ role: "system", content: ARITHMETIC_SYSTEM_PROMPT });
    expect(r.messages[1]).toEqual({ role: "user", content: "What is 2 + 3 × 4?" });
  });

  it("groups share one stateless setup", async () => {
    const env = createMathEnv();
    const tasks = (await env.capabilities!.tasks!.loadTasks!()).slice(0, 3);
    const { results } = await runMany(env, tasks, env.capabilities!.reference!.referencePolicy(), { group: 4 });
    expect(results).toHaveLength(12);
    expect(results.every((r) => r.reward === 1)).toBe(true);
  });

  it("scores raw rows through core's scoreCase", async () => {
    const env = createMathEnv();
    const ctx = { baseDir: ".", options: {} };
    const mathRow = {
      problem: "What is $\\frac{6}{8}$ in lowest terms?",
      level: "Level 1",
      type: "Prealgebra",
      solution: "Divide by 2: $\\boxed{\\frac{3}{4}}$.",
    };
    expect(
      await scoreCase(env, { id: "a", task: mathRow, completion: "<answer>\\boxed{\\dfrac34}</answer>" }, ctx),
    ).toEqual({
      reward: 1,
      rewards: { correct: 1, symbolic: 1, format: 1 },
    });
    expect(await scoreCase(env, { id: "b", task: mathRow, completion: "\\boxed{0.75}" }, ctx)).toEqual({
      reward: 0,
      rewards: { correct: 0, symbolic: 1, format: 1 },
    });
    expect(
      await scoreCase(
        env,
        { id: "c", task: { task: "7 ÷ 2", answer: "3.5" }, completion: "<answer>3.5</answer>" },
        ctx,
      ),
    ).toEqual({
      reward: 1,
      rewards: { correct: 1, symbolic: 1, format: 1 },
    });
    expect(await scoreCase(env, { id: "d", task: { prompt: "2+2", ground_truth: 4 }, completion: "4" }, ctx)).toEqual({
      reward: 0,
      rewards: { correct: 0, symbolic: 0, format: 0 },
    });
    await expect(scoreCase(env, { id: "e", task: { task: "1" }, completion: "1" }, ctx)).rejects.toThrow(/answer/);
  });
});
