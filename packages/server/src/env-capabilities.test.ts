import { defineEnv, type Env } from "@benchmax/core";
import { afterEach, describe, expect, it } from "vitest";
import { RemoteEnv } from "./remote-env.js";
import { RoutedEnv } from "./routed-env.js";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { RolloutService } from "./service/rollout-service.js";
import { calcEnv } from "./test-env.js";

// The Env contract is a small core plus capabilities: the wire reports them as it always did (/metadata's
// description, rewardWeights, passThreshold, hasFork, hasGroupReward, hasParseActions), and the proxies pass them on.

const servers: EnvServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function metadataOf(env: Env): Promise<{ url: string; body: Record<string, unknown> }> {
  const s = await serveEnv(env);
  servers.push(s);
  return { url: s.url, body: (await (await fetch(`${s.url}/metadata`)).json()) as Record<string, unknown> };
}

describe("capabilities on the wire and through the proxies", () => {
  it("/metadata reports the capabilities with the same fields and values", async () => {
    const { body } = await metadataOf(calcEnv({ customActions: true }));
    expect(body).toMatchObject({
      name: "calc",
      description: "adds numbers",
      rewardWeights: { exact_match: 1 },
      passThreshold: 1,
      systemPrompt: "You add numbers. Answer in <answer></answer>.",
      hasFork: true,
      hasGroupReward: true,
      hasParseActions: true,
    });
    // an env with no capabilities at all: the defaults, as an env without those members had
    const bare: Env = {
      name: "bare",
      systemPrompt: "x",
      listTools: () => [],
      init: async () => {},
      runTool: async () => ({ content: "", isError: false }),
      computeReward: async () => ({ ok: 1 }),
      release: async () => {},
      close: async () => {},
    };
    expect((await metadataOf(bare)).body).toMatchObject({
      description: "",
      rewardWeights: {},
      passThreshold: 1,
      hasFork: false,
      hasGroupReward: false,
      hasParseActions: false,
    });
  });

  it("RemoteEnv builds its capabilities from /metadata; RoutedEnv passes reward and metadata on whole", async () => {
    const { url } = await metadataOf(calcEnv());
    const remote = await RemoteEnv.connect(url);
    const caps = remote.capabilities;
    expect(Object.keys(caps).sort()).toEqual(["fork", "groupReward", "metadata", "reward", "tasks"]);
    expect(caps.reward).toEqual({ weights: { exact_match: 1 }, passThreshold: 1 });
    expect(caps.metadata).toEqual({ description: "adds numbers" });
    expect((await caps.tasks!.loadTasks!()).map((t) => t.id)).toEqual(["t1", "t2", "t3"]);
    const routed = new RoutedEnv([remote], { healthIntervalMs: 60_000 });
    expect(routed.capabilities.reward).toBe(caps.reward);
    expect(routed.capabilities.metadata).toBe(caps.metadata);
    expect(Object.keys(routed.capabilities).sort()).toEqual(["fork", "groupReward", "metadata", "reward", "tasks"]);
    await routed.close();

    const noFork = new RemoteEnv(url, { name: "calc", tools: [], rewardWeights: {}, hasFork: false });
    expect(noFork.capabilities.fork).toBeUndefined();
    expect(noFork.capabilities.groupReward).toBeUndefined();
    const routedNoFork = new RoutedEnv([noFork], { healthIntervalMs: 60_000 });
    expect(routedNoFork.capabilities.fork).toBeUndefined();
    await routedNoFork.close();
  });

  it("the rollout service refuses an env that still declares capability members at the top level", () => {
    const flat = Object.assign(defineEnv({ name: "old", systemPrompt: "x", reward: () => ({ ok: 1 }) }), {
      fork: async () => {},
      passThreshold: 0.5,
    });
    expect(() => new RolloutService(flat)).toThrow(
      /env old: fork → capabilities.fork.fork, passThreshold → capabilities.reward.passThreshold/,
    );
  });
});
