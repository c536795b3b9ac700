import { buildInitialMessages, type Env, InfraError, type RolloutResult } from "@benchmax/core";
import { afterEach, describe, expect, it } from "vitest";
import { calcEnv } from "../test-env.js";
import { RolloutService, type ServedRollout } from "./rollout-service.js";
import { RolloutServiceError } from "./service-error.js";

const services: RolloutService[] = [];
afterEach(async () => {
  while (services.length) await services.pop()!.close();
});

function service(options: ConstructorParameters<typeof RolloutService>[1] = {}, env: Env = calcEnv()) {
  const s = new RolloutService(env, { idleTimeoutMs: 0, ...options });
  services.push(s);
  return s;
}

/** The code a failed call carries (never matched by name). */
async function codeOf(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === "function" ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(RolloutServiceError);
    return `${(e as RolloutServiceError).code}/${(e as RolloutServiceError).reason}`;
  }
  throw new Error("expected a RolloutServiceError");
}

describe("RolloutService from a policy's side", () => {
  it("a model's tool calls run through the episode; a final answer ends and scores it once", async () => {
    const s = service();
    const r = await s.create({ from: { taskId: "t1" } });
    expect(r.messages[0]?.content).toContain("<tools>"); // hermes: the tool section the model reads
    const s1 = await s.step(r, '<tool_call>{"name": "add", "arguments": {"a": 2, "b": 3}}</tool_call>');
    expect(s1.done).toBe(false);
    expect(s1.observations[0]?.content).toBe("5");
    const s2 = await s.step(r, "<answer>5</answer>");
    expect(s2).toMatchObject({ done: true, outcome: "completed", reward: 1, passed: true });
    expect(r.done).toBe(true);
    // a policy cannot keep going, nor re-score with another answer
    expect(await codeOf(s.step(r, "<answer>6</answer>"))).toBe("conflict/EPISODE_DONE");
    expect(await codeOf(s.callTool(r, { name: "add", arguments: { a: 1, b: 1 } }))).toBe("conflict/EPISODE_DONE");
    expect(await codeOf(s.score(r, { completion: "<answer>5</answer>" }))).toBe("conflict/ALREADY_SCORED");
  });

  it("malformed calls and tool errors are observations the model reads, never a crash or a reward", async () => {
    const s = service();
    const r = await s.create({ from: { taskId: "t1" } });
    const out = await s.step(
      r,
      '<tool_call>{"name": "add", "arguments": {"a": "x"}}</tool_call><tool_call>{oops</tool_call>',
    );
    expect(out.done).toBe(false);
    expect(out.tools.every((t) => t.result.isError)).toBe(true);
    const direct = await s.callTool(r, { name: "nope", arguments: {} });
    expect(direct.isError).toBe(true);
    expect(r.reward).toBeUndefined();
  });

  it("a capability token opens its own rollout only", async () => {
    const s = service();
    const a = await s.create();
    const b = await s.create();
    expect(s.get(a.id, a.token)).toBe(a);
    expect(await codeOf(() => s.get(a.id, b.token))).toBe("forbidden/FORBIDDEN");
    expect(await codeOf(() => s.get(a.id, undefined))).toBe("unauthorized/UNAUTHORIZED");
    expect(await codeOf(() => s.get("r_nope", a.token))).toBe("not_found/UNKNOWN_ROLLOUT");
    expect(s.byToken(b.token)).toBe(b);
    await s.release(b);
    expect(s.byToken(b.token)).toBeUndefined();
    expect(await codeOf(() => s.get(b.id, b.token))).toBe("not_found/UNKNOWN_ROLLOUT");
  });

  it("the client's turn limit follows SkyRL's rule: the last reply's tool calls are not run", async () => {
    const s = service();
    const r = await s.create({ from: { taskId: "t1" }, maxTurns: 1 });
    const out = await s.step(r, '<tool_call>{"name": "note", "arguments": {"text": "x"}}</tool_call>');
    expect(out).toMatchObject({ done: true, outcome: "truncated", truncatedBy: "max_turns", reward: 0 });
    expect(out.tools).toEqual([]);
    expect(await codeOf(s.create({ maxTurns: 0 }))).toBe("bad_request/VALIDATION_ERROR");
  });
});

describe("RolloutService from a harness's side", () => {
  it("{completion} is scored against the conversation the model saw: system prompt with its tool section", async () => {
    const seen: unknown[] = [];
    const env = calcEnv();
    const compute = env.computeReward.bind(env);
    env.computeReward = (id, messages, task) => {
      seen.push(messages);
      return compute(id, messages, task);
    };
    const s = service({}, env);
    const hermes = await s.create({ from: { taskId: "t1" } });
    const openai = await s.create({ from: { taskId: "t1" }, toolFormat: "openai" });
    expect(await s.score(hermes, { completion: "<answer>5</answer>" })).toEqual({
      reward: 1,
      rewards: { exact_match: 1 },
      passed: true,
    });
    await s.score(openai, { completion: "<answer>4</answer>" });
    const task = (await s.tasks())[0]!;
    expect(seen[0]).toEqual([
      ...buildInitialMessages(env, task, "hermes"),
      { role: "assistant", content: "<answer>5</answer>" },
    ]);
    expect(seen[1]).toEqual([
      ...buildInitialMessages(env, task, "openai"),
      { role: "assistant", content: "<answer>4</answer>" },
    ]);
    expect(JSON.stringify(seen[0])).toContain("<tools>");
    expect(JSON.stringify(seen[1])).not.toContain("<tools>");
  });

  it("score once: the same input again returns the stored outcome, another input is a conflict", async () => {
    let calls = 0;
    const env = calcEnv();
    const compute = env.computeReward.bind(env);
    env.computeReward = (id, m, t) => {
      calls++;
      return compute(id, m, t);
    };
    const s = service({}, env);
    const r = await s.create({ from: { taskId: "t1" } });
    const [a, b] = await Promise.all([
      s.score(r, { completion: "<answer>5</answer>" }),
      s.score(r, { completion: "<answer>5</answer>" }),
    ]);
    expect(a).toEqual(b);
    expect(calls).toBe(1);
    expect(await codeOf(s.score(r, { completion: "<answer>6</answer>" }))).toBe("conflict/ALREADY_SCORED");
    expect(await codeOf(s.score(r, { messages: [{ role: "user", content: "x" }] }))).toBe("conflict/ALREADY_SCORED");
    expect(calls).toBe(1);
  });

  it("the reward time limit applies (Episode.finish): a hung reward is env_error, never a reward", async () => {
    const env = calcEnv();
    env.computeReward = () => new Promise(() => {});
    const s = service({ rewardTimeoutMs: 20 }, env);
    const r = await s.create({ from: { taskId: "t1" } });
    expect(await codeOf(s.score(r, { completion: "<answer>5</answer>" }))).toBe("env_error/EXECUTION_ERROR");
    expect(r.reward).toBeUndefined();
    // the stored failure comes back on a retry, and nothing can re-score it
    expect(await codeOf(s.score(r, { completion: "<answer>5</answer>" }))).toBe("env_error/EXECUTION_ERROR");
  });

  it("an infrastructure failure in a tool is infra_error; the env's tool timeout is env_error", async () => {
    const env = calcEnv();
    const run = env.runTool.bind(env);
    env.runTool = (id, call) => (call.name === "fail" ? Promise.reject(new InfraError("mcp down")) : run(id, call));
    const s = service({ toolTimeoutMs: 20 }, env);
    const r = await s.create();
    expect(await codeOf(s.callTool(r, { name: "fail", arguments: {} }))).toBe("infra_error/INFRA_ERROR");
    const r2 = await s.create();
    const hang = env.runTool;
    env.runTool = (id, call) => (call.name === "sleep" ? new Promise(() => {}) : hang(id, call));
    expect(await codeOf(s.callTool(r2, { name: "sleep", arguments: { ms: 1 } }))).toBe("env_error/EXECUTION_ERROR");
  });

  it("tasks by id, inline (refused host paths, rejected rows), seed and next", async () => {
    const s = service();
    expect((await s.create({ from: { taskId: "t2" } })).task.id).toBe("t2");
    expect((await s.create({ from: { seed: 4 } })).task.id).toBe("t2");
    expect((await s.create({ from: { task: { id: "x", prompt: "1+2?", groundTruth: "3" } } })).task.id).toBe("x");
    expect(await codeOf(s.create({ from: { taskId: "zz" } }))).toBe("not_found/UNKNOWN_TASK");
    expect(await codeOf(s.create({ from: { task: { id: "x", prompt: "p", groundTruth: "/etc/passwd" } } }))).toBe(
      "forbidden/HOST_PATH",
    );
    expect(await codeOf(s.create({ from: { task: { nope: 1 } } }))).toBe("bad_request/VALIDATION_ERROR");
  });

  it("an env that cannot start a dataset task is env_error; a client's task it rejects is the client's fault", async () => {
    const env = calcEnv();
    const init = env.init.bind(env);
    env.init = (id, task) => (task.id === "t3" || task.id === "bad" ? Promise.reject(new Error("no")) : init(id, task));
    const s = service({}, env);
    expect(await codeOf(s.create({ from: { taskId: "t3" } }))).toBe("env_error/EXECUTION_ERROR");
    expect(await codeOf(s.create({ from: { task: { id: "bad", prompt: "p", groundTruth: "1" } } }))).toBe(
      "bad_request/TASK_REJECTED",
    );
    expect(s.active).toBe(0);
  });

  it("capacity and per-client admission: one client cannot take every slot", async () => {
    const s = service({ maxRollouts: 3, maxRolloutsPerClient: 2 });
    const g1 = await s.create({ client: "greedy" });
    await s.create({ client: "greedy" });
    expect(await codeOf(s.create({ client: "greedy" }))).toBe("client_limit/CLIENT_LIMIT");
    const victim = await s.create({ client: "victim" });
    // full: a third client (a share of 1 among 3) takes the least recently used slot of the one over its share
    await s.create({ client: "third" });
    expect(s.metrics.rolloutsReclaimed).toBe(1);
    expect(await codeOf(() => s.get(g1.id, g1.token))).toBe("not_found/ROLLOUT_RECLAIMED");
    // a fourth would have a share of 0: refused
    expect(await codeOf(s.create({ client: "fourth" }))).toBe("capacity/CAPACITY_REACHED");
    expect(await codeOf(s.create({ client: "greedy" }))).toBe("capacity/CAPACITY_REACHED");
    expect((await s.score(victim, { completion: `<answer>${victim.task.id === "t1" ? 5 : 17}</answer>` })).reward).toBe(
      1,
    );
  });

  it("fork copies the conversation and env state to children with their own tokens and the parent's group", async () => {
    const s = service();
    const p = await s.create({ from: { taskId: "t1" }, tags: { step: 7 } });
    await s.step(p, '<tool_call>{"name": "note", "arguments": {"text": "a"}}</tool_call>');
    const kids = await s.fork(p, 2);
    expect(kids.map((k) => k.tags)).toEqual([
      { step: 7, group: p.id },
      { step: 7, group: p.id },
    ]);
    expect(kids[0]!.messages).toEqual(p.messages);
    expect(new Set(kids.map((k) => k.token)).size).toBe(2);
    const note = await s.callTool(kids[0]!, { name: "note", arguments: { text: "b" } });
    expect(note.content).toBe("a,b");
    expect(await codeOf(s.fork(p, 0))).toBe("bad_request/VALIDATION_ERROR");
  });

  it("onFinished gets each ended rollout's record once, with its tags; the final state stays readable", async () => {
    const records: RolloutResult[] = [];
    const s = service({ onFinished: (res) => records.push(res) });
    const a = await s.create({ from: { taskId: "t1" }, tags: { step: 3 }, origin: "reset" });
    await s.step(a, "<answer>5</answer>");
    await s.release(a);
    await s.release(a);
    const b = await s.create({ from: { taskId: "t2" } });
    const conversation = [
      { role: "user" as const, content: "x" },
      { role: "assistant" as const, content: "<answer>17</answer>" },
    ];
    await s.score(b, { messages: conversation });
    await s.release(b);
    const c: ServedRollout = await s.create(); // never scored: no record
    await s.release(c);
    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({ rolloutId: a.id, outcome: "completed", reward: 1, trainerStep: 3 });
    expect(records[0]!.groupId).toBe("t1@3");
    expect(records[1]).toMatchObject({ rolloutId: b.id, reward: 1, turns: 1, messages: conversation });
    expect(s.finalState(a.id, a.token)?.reward).toBe(1);
    expect(await codeOf(() => s.finalState(a.id, b.token))).toBe("forbidden/FORBIDDEN");
    // with no id: the last finished rollout, when a `/reset` ("reset" origin) made it
    expect(s.finalState(undefined, undefined)).toBeUndefined();
    expect(s.finalState(undefined, undefined, "api")?.id).toBe(b.id);
    // what is kept is the state, not the rollout (its episode and conversation are free to go)
    const { tokenBytes: _, ...kept } = s.finalState(a.id, a.token) as unknown as Record<string, unknown>;
    expect(kept).toEqual({
      id: a.id,
      origin: "reset",
      task: { id: "t1" },
      steps: 1,
      toolCalls: 0,
      done: true,
      reward: 1,
    });
    expect(s.finalState(a.id, a.token)).not.toBe(a);
  });

  it("keeps the last 1,024 final states; a client-chosen id used again reads its newest episode", async () => {
    const s = service();
    const first = await s.create({ id: "ep-1", from: { taskId: "t1" } });
    await s.step(first, "<answer>5</answer>");
    await s.release(first);
    const again = await s.create({ id: "ep-1", from: { taskId: "t1" } });
    await s.step(again, "<answer>4</answer>");
    await s.release(again);
    expect(s.finalState("ep-1", again.token)?.reward).toBe(0);
    expect(await codeOf(() => s.finalState("ep-1", first.token))).toBe("forbidden/FORBIDDEN");
    // 1,023 more: the second "ep-1" is the oldest kept; one more and it is gone
    for (let i = 0; i < 1023; i++) {
      const r = await s.create({ from: { taskId: "t1" } });
      await s.step(r, "<answer>5</answer>");
      await s.release(r);
    }
    expect(s.finalState("ep-1", again.token)?.reward).toBe(0);
    const last = await s.create({ from: { taskId: "t1" } });
    await s.step(last, "<answer>5</answer>");
    await s.release(last);
    expect(s.finalState("ep-1", again.token)).toBeUndefined();
    expect(s.finalState(last.id, last.token)?.reward).toBe(1);
    expect(s.finalState("never", undefined)).toBeUndefined();
  });

  it("the idle sweep releases idle rollouts and leaves busy ones", async () => {
    const s = service({ idleTimeoutMs: 60_000 });
    const idle = await s.create();
    const busy = await s.create();
    const call = s.callTool(busy, { name: "sleep", arguments: { ms: 30 } });
    expect(await s.sweep(Date.now() + 120_000)).toBe(1);
    await call;
    expect(idle.released).toBe(true);
    expect(busy.released).toBe(false);
  });

  it("close refuses new rollouts and releases the live ones", async () => {
    const s = service();
    const r = await s.create();
    await s.close();
    expect(r.released).toBe(true);
    expect(await codeOf(s.create())).toBe("capacity/DRAINING");
  });
});

describe("RolloutService group reward", () => {
  it("scores a group under the reward time limit; a hung or malformed group reward is env_error, never a 0", async () => {
    const env = calcEnv();
    const s = service({ rewardTimeoutMs: 30 }, env);
    const task = await s.resolveTask({ taskId: "t1" });
    const members = [0, 1].map((i) => ({ rolloutId: `m${i}`, messages: [], rewards: { exact_match: i } }));
    expect(await s.groupReward(task, members)).toEqual({ rewards: [{ rank: 0 }, { rank: 1 }], combined: [0, 1] });
    env.capabilities!.groupReward = { computeGroupReward: () => new Promise(() => {}) };
    expect(await codeOf(s.groupReward(task, members))).toBe("env_error/EXECUTION_ERROR");
    env.capabilities!.groupReward = { computeGroupReward: async () => [{ rank: Number.NaN }, { rank: 1 }] };
    expect(await codeOf(s.groupReward(task, members))).toBe("env_error/EXECUTION_ERROR");
    delete env.capabilities!.groupReward;
    expect(await codeOf(s.groupReward(task, members))).toBe("not_supported/NOT_SUPPORTED");
  });
});
