import { runMany } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import env from "./index.ts";

describe("custom env", () => {
  it("scores the reference policy 1.0 on its fixtures", async () => {
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    const { results } = await runMany(env, tasks, env.capabilities!.reference!.referencePolicy());
    expect(results).toHaveLength(5);
    expect(results.every((r) => r.reward === 1)).toBe(true);
  });
});
