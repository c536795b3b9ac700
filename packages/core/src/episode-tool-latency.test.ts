import { describe, expect, it } from "vitest";
import type { Env } from "./env.js";
import { Episode } from "./episode.js";
import type { AssistantMessage, Task, ToolCallRequest } from "./types.js";

const env: Env = {
  name: "lat",
  systemPrompt: "",
  rewardWeights: { ok: 1 },
  listTools: () => [{ name: "echo", description: "echo", parameters: { type: "object" } }],
  async init() {},
  async runTool(_id, call: ToolCallRequest) {
    return { content: `ran ${call.name}`, isError: call.name !== "echo" };
  },
  async computeReward() {
    return { ok: 1 };
  },
  async release() {},
  async close() {},
};
const task: Task = { id: "t", prompt: "go", groundTruth: null };
const calls = (...names: string[]): AssistantMessage => ({
  role: "assistant",
  content: null,
  tool_calls: names.map((name, i) => ({ id: `c${i}`, type: "function", function: { name, arguments: "{}" } })),
});

describe("per-tool latency in the result", () => {
  it("records each returned call under its tool's name, from a reply and from a direct call", async () => {
    const ep = await Episode.start(env, task, { rolloutId: "r", toolFormat: "openai" });
    await ep.step(calls("echo", "echo", "nope"));
    await ep.callTool({ name: "echo", arguments: {} });
    await ep.step("done");
    const lat = ep.result().toolLatencyMs!;
    expect(Object.keys(lat).sort()).toEqual(["echo", "nope"]);
    expect(lat.echo).toHaveLength(3);
    expect(lat.nope).toHaveLength(1);
    for (const v of [...lat.echo!, ...lat.nope!]) expect(v).toBeGreaterThanOrEqual(0);
  });

  it("a model's tool names cannot pollute the object or grow it past 32 names", async () => {
    const ep = await Episode.start(env, task, { rolloutId: "r2", toolFormat: "openai", maxToolCallsPerReply: 64 });
    const names = ["__proto__", "constructor", ...Array.from({ length: 40 }, (_, i) => `t${i}`)];
    await ep.step(calls(...names));
    await ep.step("done");
    const lat = ep.result().toolLatencyMs!;
    expect(Object.keys(lat)).toHaveLength(33);
    expect(lat.other).toHaveLength(10);
    expect(Object.hasOwn(lat, "__proto__")).toBe(true);
    expect(({} as Record<string, unknown>).length).toBeUndefined();
    const round = JSON.parse(JSON.stringify(ep.result())) as { toolLatencyMs: Record<string, number[]> };
    expect(Object.keys(round.toolLatencyMs)).toHaveLength(33);
  });
});
