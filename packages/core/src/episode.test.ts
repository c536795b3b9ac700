import { describe, expect, it } from "vitest";
import type { Env } from "./env.js";
import { Episode } from "./episode.js";
import { InfraError, UsageError } from "./errors.js";
import { runRollout } from "./rollout.js";
import type { AssistantMessage, Message, Task, ToolCallRequest } from "./types.js";

const never = <T>() => new Promise<T>(() => {});

/** A hand-written env whose every call can be made to hang or fail, recording what it was asked. */
function fakeEnv(over: Partial<Env> = {}) {
  const log: string[] = [];
  const env: Env = {
    name: "fake",
    systemPrompt: "Be brief.",
    listTools: () => [{ name: "echo", description: "echo", parameters: { type: "object" } }],
    async init(id) {
      log.push(`init ${id}`);
    },
    async runTool(_id, call: ToolCallRequest) {
      log.push(`tool ${call.name}`);
      if (call.name === "hang") return never();
      if (call.name === "crash") throw new Error("boom");
      return { content: `echo:${JSON.stringify(call.arguments)}`, isError: false };
    },
    async computeReward(_id, messages: Message[]) {
      const last = messages.at(-1)!;
      return { ok: last.role === "assistant" && last.content === "done" ? 1 : 0 };
    },
    async release(id) {
      log.push(`release ${id}`);
    },
    async close() {},
    capabilities: { reward: { weights: { ok: 1 } } },
    ...over,
  };
  return { env, log };
}

const task: Task = { id: "t", prompt: "go", groundTruth: null };
const call = (name: string, args: Record<string, unknown> = {}): AssistantMessage => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id: `c_${name}`, type: "function", function: { name, arguments: JSON.stringify(args) } }],
});

describe("Episode, driven step by step", () => {
  it("starts, runs tool calls, ends on a plain reply and scores", async () => {
    const { env, log } = fakeEnv();
    const ep = await Episode.start(env, task, { rolloutId: "r1", toolFormat: "openai" });
    expect(ep.done).toBe(false);
    expect(ep.messages.map((m) => m.role)).toEqual(["system", "user"]);
    const s1 = await ep.step(call("echo", { x: 1 }));
    expect(s1.done).toBe(false);
    expect(s1.observations).toEqual([{ role: "tool", tool_call_id: "c_echo", name: "echo", content: 'echo:{"x":1}' }]);
    expect(s1.tools[0]).toMatchObject({ id: "c_echo", name: "echo", result: { isError: false } });
    expect(ep.turns).toBe(1);
    const s2 = await ep.step("done");
    expect(s2).toMatchObject({ done: true, outcome: "completed", reward: 1, rewards: { ok: 1 }, observations: [] });
    expect(ep.outcome).toBe("completed");
    await expect(ep.step("again")).rejects.toThrow(UsageError);
    await ep.close();
    await ep.close();
    expect(log).toEqual(["init r1", "tool echo", "release r1"]);
    const r = ep.result();
    expect(r).toMatchObject({ rolloutId: "r1", outcome: "completed", turns: 2, toolCalls: 1, reward: 1 });
    expect(r.messages).toHaveLength(5);
  });

  it("parses Hermes text calls and reports malformed ones as error observations", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task);
    const s = await ep.step(
      '<tool_call>{"name": "echo", "arguments": {"a": 2}}</tool_call><tool_call>{not json</tool_call>',
    );
    expect(s.observations.map((o) => o.content)).toEqual(['echo:{"a":2}', expect.stringMatching(/^Error: /)]);
    expect(ep.toolCalls).toBe(1);
    expect(ep.toolErrors).toBe(1);
    await ep.close();
  });

  it("truncates at max turns: runs the last turn's calls by default, skips them with lastTurnTools: skip", async () => {
    const { env, log } = fakeEnv();
    const run = await Episode.start(env, task, { maxTurns: 1 });
    const a = await run.step(call("echo"));
    expect(a).toMatchObject({ done: true, outcome: "truncated", truncatedBy: "max_turns", reward: 0 });
    expect(a.observations).toHaveLength(1);
    await run.close();
    log.length = 0;
    const skip = await Episode.start(env, task, { maxTurns: 1, lastTurnTools: "skip" });
    const b = await skip.step(call("echo"));
    expect(b).toMatchObject({ done: true, outcome: "truncated", truncatedBy: "max_turns" });
    expect(b.observations).toHaveLength(0);
    expect(log.filter((l) => l.startsWith("tool"))).toEqual([]);
    await skip.close();
  });

  it("counts usage against maxTokens and honours finishReason length", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task, { maxTokens: 10 });
    const usage = { prompt_tokens: 1, completion_tokens: 6, total_tokens: 7 };
    expect((await ep.step({ message: call("echo"), usage })).done).toBe(false);
    const s = await ep.step({ message: call("echo"), usage });
    expect(s).toMatchObject({ done: true, outcome: "truncated", truncatedBy: "max_tokens" });
    expect(ep.usage?.completion_tokens).toBe(12);
    const cut = await Episode.start(env, task);
    expect(await cut.step({ message: { role: "assistant", content: "do" }, finishReason: "length" })).toMatchObject({
      outcome: "truncated",
      truncatedBy: "max_tokens",
    });
  });

  it("ends with env_error when a tool crashes, and never scores it", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task);
    const s = await ep.step(call("crash"));
    expect(s).toMatchObject({ done: true, outcome: "env_error" });
    expect(s.error).toMatch(/boom/);
    expect(s.reward).toBeUndefined();
    await ep.close();
  });

  it("refuses a reply that is not an assistant message", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task);
    await expect(ep.step({ role: "user", content: "hi" } as never)).rejects.toThrow(/assistant message/);
    expect(ep.done).toBe(false);
  });

  it("runs direct tool calls without adding a turn", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task);
    const res = await ep.callTool({ name: "echo", arguments: { q: 1 } });
    expect(res.content).toBe('echo:{"q":1}');
    expect(ep.turns).toBe(0);
    expect(ep.toolCalls).toBe(1);
    await expect(ep.callTool({ name: "crash", arguments: {} })).rejects.toThrow(/boom/);
    expect(ep.outcome).toBe("env_error");
  });

  it("scores a client's own conversation with finish(messages)", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task);
    const end = await ep.finish([{ role: "assistant", content: "done" }]);
    expect(end).toEqual({ outcome: "completed", reward: 1, rewards: { ok: 1 } });
    expect(await ep.finish()).toBe(end);
  });

  it("forks the env state and the conversation", async () => {
    const forked: string[] = [];
    const { env } = fakeEnv({
      capabilities: {
        fork: {
          async fork(_id, children) {
            forked.push(...children);
          },
        },
      },
    });
    const ep = await Episode.start(env, task);
    await ep.step(call("echo"));
    const kids = await ep.fork(["k1", "k2"]);
    expect(forked).toEqual(["k1", "k2"]);
    expect(kids.map((k) => k.rolloutId)).toEqual(["k1", "k2"]);
    expect(kids[0]!.messages).toEqual(ep.messages);
    expect(kids[0]!.messages).not.toBe(ep.messages);
    expect(kids[0]!.turns).toBe(1);
    expect(await kids[1]!.step("done")).toMatchObject({ done: true, reward: 1 });
  });

  it("closing an unscored episode makes it infra_error", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task);
    await ep.close();
    expect(ep.result()).toMatchObject({ outcome: "infra_error", error: expect.stringMatching(/closed before/) });
  });

  it("finish({error}) ends it with the error's outcome", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task);
    await ep.finish({ error: new InfraError("503") });
    expect(await ep.finish()).toMatchObject({ outcome: "infra_error", error: "InfraError: 503" });
  });
});

describe("Episode timeouts (calls that never settle)", () => {
  it("an init that never returns is env_error, and release is still attempted", async () => {
    const { env, log } = fakeEnv({ init: () => never() });
    const ep = await Episode.start(env, task, { rolloutId: "r", initTimeoutMs: 5 });
    expect(ep.done).toBe(true);
    expect(ep.outcome).toBe("env_error");
    expect(ep.error).toMatch(/fake\.init did not return within 5 ms/);
    await ep.close();
    expect(log).toEqual(["release r"]);
  });

  it("a computeReward that never returns is env_error", async () => {
    const { env } = fakeEnv({ computeReward: () => never() });
    const ep = await Episode.start(env, task, { rewardTimeoutMs: 5 });
    const s = await ep.step("done");
    expect(s).toMatchObject({ done: true, outcome: "env_error" });
    expect(s.error).toMatch(/fake\.computeReward did not return within 5 ms/);
    expect(s.reward).toBeUndefined();
  });

  it("a release that never returns is recorded, and close still resolves", async () => {
    const { env } = fakeEnv({ release: () => never() });
    const ep = await Episode.start(env, task, { releaseTimeoutMs: 5 });
    await ep.step("done");
    await ep.close();
    const r = ep.result();
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(1);
    expect(r.metadata?.releaseError).toMatch(/release did not return within 5 ms/);
  });

  it("a tool still running at the deadline ends the episode truncated by deadline (scored)", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task, { deadlineMs: 20, toolTimeoutMs: 60_000 });
    const s = await ep.step(call("hang"));
    expect(s).toMatchObject({ done: true, outcome: "truncated", truncatedBy: "deadline", reward: 0 });
    expect(s.observations[0]!.content).toMatch(/time limit ran out before tool "hang" returned/);
    await ep.close();
  });

  it("a tool past its own limit before the deadline is env_error", async () => {
    const { env } = fakeEnv();
    const ep = await Episode.start(env, task, { deadlineMs: 60_000, toolTimeoutMs: 5 });
    expect(await ep.step(call("hang"))).toMatchObject({
      outcome: "env_error",
      error: expect.stringMatching(/tool "hang" did not return within 5 ms/),
    });
  });

  it("runRollout: a tool call past the deadline is truncated, not a hang", async () => {
    const { env } = fakeEnv();
    const policy = { name: "p", act: async () => ({ message: call("hang") }) };
    const r = await runRollout(env, task, policy, { deadlineMs: 20 });
    expect(r).toMatchObject({ outcome: "truncated", truncatedBy: "deadline", turns: 1 });
  });

  it("runRollout: an init, reward or release that never returns does not hang the run", async () => {
    const policy = { name: "p", act: async () => ({ message: { role: "assistant" as const, content: "done" } }) };
    const a = await runRollout(fakeEnv({ init: () => never() }).env, task, policy, { initTimeoutMs: 5 });
    expect(a.outcome).toBe("env_error");
    const b = await runRollout(fakeEnv({ computeReward: () => never() }).env, task, policy, { rewardTimeoutMs: 5 });
    expect(b.outcome).toBe("env_error");
    const c = await runRollout(fakeEnv({ release: () => never() }).env, task, policy, { releaseTimeoutMs: 5 });
    expect(c).toMatchObject({ outcome: "completed", reward: 1, metadata: { releaseError: expect.any(String) } });
  });
});

describe("Episode with an env that returns plain values", () => {
  it("accepts an init and a runTool that return no promise", async () => {
    const { env } = fakeEnv({
      init: (() => undefined) as never,
      runTool: (() => ({ content: "plain", isError: false })) as never,
    });
    const ep = await Episode.start(env, task);
    const s = await ep.step(call("echo"));
    expect(s.observations[0]!.content).toBe("plain");
    expect(await ep.step("done")).toMatchObject({ outcome: "completed", reward: 1 });
  });
});

describe("runRollout and Episode.step agree", () => {
  it.each([
    ["answers after tools", {}],
    ["max turns", { maxTurns: 2 }],
    ["max tokens", { maxTokens: 9 }],
    ["skips the last turn's tools", { maxTurns: 2, lastTurnTools: "skip" as const }],
  ])("%s", async (_name, opts) => {
    const replies = [
      { message: call("echo", { n: 1 }), usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 } },
      {
        message: {
          role: "assistant" as const,
          content: '<tool_call>{"name": "echo", "arguments": {}}</tool_call><tool_call>{x</tool_call>',
        },
        usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 },
      },
      {
        message: { role: "assistant" as const, content: "done" },
        usage: { prompt_tokens: 1, completion_tokens: 4, total_tokens: 5 },
      },
    ];
    const policy = { name: "fixed", act: async ({ turn }: { turn: number }) => replies[turn]! };
    const viaRunner = await runRollout(fakeEnv().env, task, policy, { ...opts, rolloutId: "r" });
    const ep = await Episode.start(fakeEnv().env, task, { ...opts, rolloutId: "r" });
    for (let turn = 0; !ep.done; turn++) await ep.step(replies[turn]!);
    await ep.close();
    const viaSteps = ep.result();
    // the same tool calls, by name; their latencies are times and differ
    const timeless = (r: typeof viaSteps) => ({
      ...r,
      durationMs: 0,
      toolLatencyMs: Object.fromEntries(Object.entries(r.toolLatencyMs ?? {}).map(([k, v]) => [k, v.length])),
    });
    expect(timeless(viaSteps)).toEqual(timeless(viaRunner));
  });
});

describe("Episode: the per-reply tool-call cap and env episode defaults", () => {
  const many = (n: number): AssistantMessage => ({
    role: "assistant",
    content: null,
    tool_calls: Array.from({ length: n }, (_, i) => ({
      id: `c${i}`,
      type: "function" as const,
      function: { name: "echo", arguments: JSON.stringify({ i }) },
    })),
  });

  it("a 10,000-call reply runs the first 32 calls and answers the rest with a readable error, not run", async () => {
    const { env, log } = fakeEnv();
    const ep = await Episode.start(env, task, { rolloutId: "cap", toolFormat: "openai" });
    const s = await ep.step(many(10_000));
    expect(s.done).toBe(false);
    expect(log.filter((l) => l === "tool echo")).toHaveLength(32);
    expect(s.observations).toHaveLength(10_000);
    expect(s.tools.slice(0, 32).every((t) => !t.result.isError)).toBe(true);
    expect(s.tools[32]!.result).toMatchObject({ isError: true });
    expect(String(s.tools[9_999]!.result.content)).toMatch(/not run: this reply made 10000 tool calls and at most 32/);
    expect(s.tools[9_999]!.id).toBe("c9999");
    expect(ep.toolCalls).toBe(32);
    const end = await ep.step("done");
    expect(end).toMatchObject({ done: true, outcome: "completed", reward: 1 });
  });

  it("the cap is an option, and an env's episodeDefaults set it and the deadline when the driver does not", async () => {
    const { env, log } = fakeEnv({
      capabilities: { episode: { defaults: { maxToolCallsPerReply: 2, deadlineMs: 60_000 } } },
    });
    const ep = await Episode.start(env, task, { rolloutId: "d", toolFormat: "openai" });
    expect(ep.maxToolCallsPerReply).toBe(2);
    expect(ep.remainingMs()).toBeGreaterThan(0);
    await ep.step(many(5));
    expect(log.filter((l) => l === "tool echo")).toHaveLength(2);
    const own = await Episode.start(env, task, { rolloutId: "o", toolFormat: "openai", maxToolCallsPerReply: 4 });
    expect(own.maxToolCallsPerReply).toBe(4);
    const none = await Episode.start(fakeEnv().env, task, { rolloutId: "n" });
    expect(none.remainingMs()).toBeUndefined();
    expect(none.maxToolCallsPerReply).toBe(32);
  });

  it("runRollout applies the cap too", async () => {
    const { env, log } = fakeEnv();
    let turn = 0;
    const r = await runRollout(
      env,
      task,
      {
        name: "spam",
        act: async () => ({ message: turn++ === 0 ? many(100) : { role: "assistant" as const, content: "done" } }),
      },
      { toolFormat: "openai", maxToolCallsPerReply: 10 },
    );
    expect(r.outcome).toBe("completed");
    expect(log.filter((l) => l === "tool echo")).toHaveLength(10);
    expect(r.toolCalls).toBe(10);
  });
});
