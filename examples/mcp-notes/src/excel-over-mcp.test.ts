import { runMany } from "@benchmax/core";
import excel from "@benchmax/env-excel";
import { describe, expect, it } from "vitest";
import { createExcelOverMcp } from "./excel-over-mcp.js";

describe("the excel env with its tools served over MCP", () => {
  it("solves and scores SpreadsheetBench fixtures through MCP exactly as in process", async () => {
    const direct = await excel.createEnv();
    const tasks = (await direct.capabilities!.tasks!.loadTasks!(undefined, { limit: 3 })).slice(0, 3);
    const want = await runMany(direct, tasks, direct.capabilities!.reference!.referencePolicy());
    const env = await createExcelOverMcp({ sessions: 2 });
    try {
      expect(env.listTools().map((t) => t.name)).toEqual(direct.listTools().map((t) => t.name));
      const got = await runMany(env, tasks, env.capabilities!.reference!.referencePolicy(), { concurrency: 2 });
      const rewards = (r: typeof got) => Object.fromEntries(r.results.map((x) => [x.taskId, [x.outcome, x.rewards]]));
      expect(rewards(got)).toEqual(rewards(want));
      expect(got.results.some((r) => r.reward === 1)).toBe(true);
    } finally {
      await env.close();
      await direct.close();
    }
  });
});
