import { describe, expect, it } from "vitest";
import type { Env } from "./env.js";
import { Episode } from "./episode.js";
import type { AssistantMessage, Task, ToolCallRequest } from "./types.js";

const env: Env = {
  name: "lat",
  systemPrompt: "",
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
  capabilities: { reward: { weights: { ok: 1 } } },
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

  it("keeps at most 1,024 values per tool in a long rollout, spread over all its calls", async () => {
    const ep = await Episode.start(env, task, { rolloutId: "r3", toolFormat: "openai" });
    for (let i = 0; i < 1024; i++) await ep.callTool({ name: "echo", arguments: {} });
    expect(ep.result().toolLatencyMs!.echo).toHaveLength(1024); // below the cap: every call
    for (let i = 1024; i < 5000; i++) await ep.callTool({ name: "echo", arguments: {} });
    await ep.callTool({ name: "nope", arguments: {} });
    const lat = ep.result().toolLatencyMs!;
    // 5,000 calls: thinned at calls 1,024, 2,048 and 4,096 (stride 8): calls 0, 8, …, 4,992 kept
    expect(lat.echo).toHaveLength(625);
    expect(lat.nope).toHaveLength(1);
    expect(ep.result().toolCalls).toBe(5001);
  });
});

describe("direct tool calls under their limits", () => {
  const hanging: Env = {
    ...env,
    runTool(_id, call: ToolCallRequest) {
      if (call.name === "sync") throw new Error("sync boom");
      if (call.name === "hang") return new Promise(() => {});
      return Promise.resolve({ content: "ok", isError: false });
    },
  };

  it("a tool past its time limit fails the episode (env_error) and rejects", async () => {
    const ep = await Episode.start(hanging, task, { rolloutId: "h1", toolFormat: "openai", toolTimeoutMs: 5 });
    await expect(ep.callTool({ name: "hang", arguments: {} })).rejects.toThrow(/did not return within 5 ms/);
    expect(ep.outcome).toBe("env_error");
    await expect(ep.callTool({ name: "echo", arguments: {} })).rejects.toThrow(/is done/);
  });

  it("the episode deadline passing first ends it truncated with an error result", async () => {
    const ep = await Episode.start(hanging, task, { rolloutId: "h2", toolFormat: "openai", deadlineMs: 20 });
    const res = await ep.callTool({ name: "hang", arguments: {} });
    expect(res).toEqual({
      content: `Error: the episode's time limit ran out before tool "hang" returned`,
      isError: true,
    });
    expect(ep.outcome).toBe("truncated");
    expect(ep.toolCalls).toBe(1);
  });

  it("an env that throws synchronously fails the episode and rejects", async () => {
    const ep = await Episode.start(hanging, task, { rolloutId: "h3", toolFormat: "openai" });
    await expect(ep.callTool({ name: "sync", arguments: {} })).rejects.toThrow(/sync boom/);
    expect(ep.outcome).toBe("env_error");
  });
});
