import { runMany } from "@benchmax/core";
import { createMathEnv } from "@benchmax/env-math";
import { describe, expect, it } from "vitest";
import { envOverMcp } from "./env-over-mcp.js";

describe("an env with its tools served over MCP (env-math; the excel env works the same way)", () => {
  it("scores the same through MCP as in process", async () => {
    const direct = createMathEnv();
    const tasks = (await direct.capabilities!.tasks!.loadTasks!(undefined, { limit: 4 })).slice(0, 4);
    const want = await runMany(direct, tasks, direct.capabilities!.reference!.referencePolicy());
    const env = await envOverMcp(createMathEnv(), { sessions: 2 });
    try {
      expect(env.listTools().map((t) => t.name)).toEqual(direct.listTools().map((t) => t.name));
      expect(env.listTools()[0]!.parameters).toEqual(direct.listTools()[0]!.parameters);
      const got = await runMany(env, tasks, env.capabilities!.reference!.referencePolicy(), { concurrency: 2 });
      const rewards = (r: typeof got) => Object.fromEntries(r.results.map((x) => [x.taskId, [x.outcome, x.rewards]]));
      expect(rewards(got)).toEqual(rewards(want));
      expect(got.results.every((r) => r.outcome === "completed" && r.toolCalls >= 0)).toBe(true);
    } finally {
      await env.close();
      await direct.close();
    }
  });
});
