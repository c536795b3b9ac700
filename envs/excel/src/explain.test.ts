import { type AssistantMessage, type Policy, runRollout } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { explainCases } from "./explain.js";
import { createExcelEnv } from "./index.js";

const env = createExcelEnv({ tools: "structured" });
afterAll(() => env.close());

function writes(cell: string, value: unknown): Policy {
  const replies: AssistantMessage[] = [
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "c0", type: "function", function: { name: "write_cell", arguments: JSON.stringify({ cell, value }) } },
      ],
    },
  ];
  let i = 0;
  return { name: "scripted", act: async () => ({ message: replies[i++] ?? { role: "assistant", content: "done" } }) };
}

describe("excel explainReward: the differing cells, for the transcript viewer", () => {
  it("names each failed case's cells with expected vs got", async () => {
    const task = (await env.capabilities!.tasks!.loadTasks!()).find((t) => t.id === "101")!;
    const r = await runRollout(env, task, writes("B8", 5), { maxTurns: 3 });
    expect(r.reward).toBe(0);
    expect(r.explain?.extracted).toBe("0 of 3 test cases pass");
    expect(r.explain?.diff?.length).toBe(3);
    expect(r.explain?.diff?.[0]).toMatch(/^case 1 Sheet1!B8: expected 1957\.08, got 5$/);
  });

  it("has nothing to explain when every case passes", async () => {
    const task = (await env.capabilities!.tasks!.loadTasks!()).find((t) => t.id === "101")!;
    const r = await runRollout(env, task, writes("B8", "=SUM(B2:B7)"), { maxTurns: 3 });
    expect(r.reward).toBe(1);
    expect(r.explain).toBeUndefined();
  });

  it("says why a case failed without a cell comparison", () => {
    const x = explainCases([
      { case: 1, pass: true, message: "", mismatches: [] },
      { case: 2, pass: false, message: "replaying call #1 (run_code) failed: boom", mismatches: [] },
    ]);
    expect(x).toEqual({
      extracted: "1 of 2 test cases pass",
      diff: ["case 2: replaying call #1 (run_code) failed: boom"],
    });
  });
});
