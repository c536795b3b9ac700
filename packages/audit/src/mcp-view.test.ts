import { defineEnv, Episode, extractAnswer, type Task, tool } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { auditEnv } from "./audit.js";
import { mcpView } from "./mcp-view.js";

const tasks: Task<string>[] = [
  { id: "m1", prompt: "What is 30 + 4?", groundTruth: "34" },
  { id: "m2", prompt: "What is 7 * 6?", groundTruth: "42" },
];

function honestEnv() {
  return defineEnv<Task<string>>({
    name: "mcp-honest",
    systemPrompt: "Use the calculator, then answer in <answer></answer>.",
    tools: [
      tool({
        name: "add",
        description: "Add two integers.",
        parameters: z.object({ a: z.number().int(), b: z.number().int() }),
        execute: ({ a, b }) => String(a + b),
      }),
    ],
    reward: ({ completion, task }) => ({ correct: extractAnswer(completion) === task.groundTruth ? 1 : 0 }),
    loadTasks: async () => tasks,
  });
}

// The MCP view is a real client: the MCP SDK's Client over streamable HTTP against serveMcp, scored through the
// harness channel. A victim rollout that solves its task must score 1 through it, or the audit's zeros would prove
// nothing.
describe("the audit's MCP transport", () => {
  it("lists the tools, reads every client-visible text, and scores a solving rollout 1", async () => {
    const env = honestEnv();
    const view = await mcpView(env, tasks, tasks);
    try {
      expect(view.env.listTools().map((t) => t.name)).toEqual(["add"]);
      const where = view.surfaces.map((s) => s.where);
      expect(where).toContain("MCP tools/list (task m1)");
      expect(where.some((w) => /^MCP resources\/read \S+ \(task m2\)$/.test(w))).toBe(true);
      expect(where).toContain("MCP prompts/list (task m1)");
      // the task resource holds the prompt, and the prompt is cut out before the scan
      const res = view.surfaces.find((s) => s.where.startsWith("MCP resources/read") && s.taskId === "m1")!;
      expect(res.text).toContain("What is 30 + 4?");
      expect(res.input).toContain("What is 30 + 4?");

      const ep = await Episode.start(view.env, tasks[0]!, { rolloutId: "victim", toolFormat: "hermes", maxTurns: 3 });
      const s1 = await ep.step({
        role: "assistant",
        content: '<tool_call>{"name": "add", "arguments": {"a": 30, "b": 4}}</tool_call>',
      });
      expect(s1.tools[0]!.result).toMatchObject({ content: "34", isError: false });
      // a model-caused failure over MCP reads as a tool error, not a crash
      const s2 = await ep.step({
        role: "assistant",
        content: '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
      });
      expect(s2.tools[0]!.result.isError).toBe(true);
      await ep.step({ role: "assistant", content: "<answer>34</answer>" });
      const end = await ep.finish();
      await ep.close();
      expect(end.outcome).toBe("completed");
      expect(end.rewards).toEqual({ correct: 1 });
    } finally {
      await view.close();
      await env.close();
    }
  });

  it("an honest env passes the whole battery over MCP", async () => {
    const env = honestEnv();
    const r = await auditEnv(env, { transports: ["mcp"] });
    expect(r.findings.filter((f) => !f.allowed)).toEqual([]);
    expect(r.transports).toEqual(["mcp"]);
    expect(r.episodes).toBeGreaterThan(20);
    expect(r.checks["harness-tool"].run).toBe(1);
    expect(r.checks.leak.run).toBeGreaterThan(r.episodes);
    expect(r.timings.byTransport.mcp).toBeGreaterThan(0);
    await env.close();
  });
});
