import { existsSync } from "node:fs";
import { runRollout } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import excel, { createExcelEnv } from "./index.js";

const env = createExcelEnv();
afterAll(() => env.close());

describe("excel env: the reference policy solves every fixture task through the tools", async () => {
  const tasks = await env.capabilities!.tasks!.loadTasks!();
  it("loads ≥ 20 fixture tasks in both layouts", () => {
    expect(tasks.length).toBeGreaterThanOrEqual(20);
    expect(tasks.some((t) => t.init.inputs[0]!.endsWith("_init.xlsx"))).toBe(true);
    expect(tasks.some((t) => t.init.inputs.length === 3)).toBe(true);
  });
  it.each(tasks.map((t) => [t.id, t] as const))("task %s scores 1.0 on every test case", async (_id, task) => {
    const policy = env.capabilities!.reference!.referencePolicy();
    const r = await runRollout(env, task, policy, { maxTurns: 6 });
    expect(r.error).toBeUndefined();
    expect(r.outcome).toBe("completed");
    const cases = (r.metadata?.cases ?? []) as Array<{ pass: boolean; message: string }>;
    expect(cases.filter((c) => !c.pass).map((c) => c.message)).toEqual([]);
    expect(r.rewards).toEqual({ pass: 1, soft: 1 });
    expect(r.reward).toBe(1);
  });
});

describe("excel env: doing nothing fails", () => {
  it("an untouched workbook scores 0 with per-case detail", async () => {
    const [task] = await env.capabilities!.tasks!.loadTasks!(undefined, { limit: 1 });
    const id = "noop";
    await env.init(id, task!);
    const rewards = await env.computeReward(id, [], task!);
    expect(rewards).toEqual({ pass: 0, soft: 0 });
    const meta = env.capabilities!.metadata!.rolloutMetadata!(id) as {
      cases: Array<{ pass: boolean; message: string }>;
    };
    expect(meta.cases).toHaveLength(3);
    expect(meta.cases[0]!.message).toMatch(/Value difference at cell/);
    await env.release(id);
  });
  it("exports an EnvModule", () => {
    expect(excel.name).toBe("excel");
    expect(typeof excel.createEnv).toBe("function");
    expect(existsSync(task0Path())).toBe(true);
  });
});

function task0Path(): string {
  return new URL("../fixtures/spreadsheetbench/dataset.json", import.meta.url).pathname;
}
