import { buildInitialMessages, type Env, type Task } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { openEnvTools, resetObservationJson } from "./openenv.js";
import { RolloutService } from "./service/rollout-service.js";
import { calcEnv } from "./test-env.js";

/** A rollout on `task`, its reset JSON, and the JSON of the observation built as a plain object (the reference). */
async function both(m: RolloutService, task: Task) {
  const r = await m.create({ task });
  const fast = resetObservationJson(m, r);
  const reference = JSON.stringify({
    observation: {
      episode_id: r.id,
      rollout_token: r.token,
      task_id: r.task.id,
      messages: buildInitialMessages(m.env, r.task, "hermes"),
      tools: openEnvTools(m.env),
    },
    reward: null,
    done: false,
  });
  await m.release(r);
  return { fast, reference, r };
}

describe("resetObservationJson", () => {
  it("is the reference reset observation's JSON, the first time and every time after", async () => {
    const m = new RolloutService(calcEnv());
    const [t1] = await m.tasks();
    const first = await both(m, t1!);
    expect(first.fast).toBe(first.reference);
    const second = await both(m, t1!);
    expect(second.fast).toBe(second.reference);
    // the ids and tokens are the rollout's own, never the cached ones
    expect(JSON.parse(second.fast).observation.episode_id).toBe(second.r.id);
    expect(JSON.parse(second.fast).observation.rollout_token).toBe(second.r.token);
    expect(second.r.token).not.toBe(first.r.token);
    await m.close();
  });

  it("follows a task prompt or a tool list that changed", async () => {
    const env = calcEnv();
    const m = new RolloutService(env);
    const [t1] = await m.tasks();
    await both(m, t1!);
    t1!.prompt = "What is 4 + 4?";
    const afterPrompt = await both(m, t1!);
    expect(afterPrompt.fast).toBe(afterPrompt.reference);
    expect(afterPrompt.fast).toContain("What is 4 + 4?");
    const tools = env.listTools();
    const fewer = tools.slice(0, 1);
    (env as Env).listTools = () => fewer;
    const afterTools = await both(m, t1!);
    expect(afterTools.fast).toBe(afterTools.reference);
    expect(JSON.parse(afterTools.fast).observation.tools).toHaveLength(1);
    // a list filled in place (McpEnv adds each server's tools to the same array as it discovers them)
    fewer.push(tools[1]!);
    const grown = await both(m, t1!);
    expect(grown.fast).toBe(grown.reference);
    expect(JSON.parse(grown.fast).observation.tools).toHaveLength(2);
    await m.close();
  });

  it("serializes a client's own task (its own system prompt with quotes, newlines and backslashes) the same way", async () => {
    const m = new RolloutService(calcEnv());
    const body = {
      task: {
        id: "mine",
        messages: [
          { role: "system", content: 'Quote "this"\nand\\that' },
          { role: "user", content: "2 + 2?" },
        ],
        groundTruth: "4",
      },
    };
    for (let i = 0; i < 2; i++) {
      const task = await m.resolveTask(structuredClone(body));
      const { fast, reference } = await both(m, task);
      expect(fast).toBe(reference);
    }
    await m.close();
  });
});
