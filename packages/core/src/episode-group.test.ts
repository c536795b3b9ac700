import { describe, expect, it } from "vitest";
import type { Env, EnvCapabilities } from "./env.js";
import { checkGroupRewards, computeGroupRewards, EpisodeGroup, scoreGroup } from "./episode-group.js";
import { InfraError, UsageError } from "./errors.js";
import type { RolloutResult } from "./rollout-result.js";
import type { Message, Task, ToolCallRequest } from "./types.js";

const never = <T>() => new Promise<T>(() => {});

/**
 * An env with per-rollout state (a counter a tool bumps), fork that copies it, a reward reading the model's last
 * answer, and a group reward ranking the members. Every call is logged.
 */
function groupEnv(over: Partial<Env> = {}, caps: EnvCapabilities = {}) {
  const log: string[] = [];
  const state = new Map<string, number>();
  const env: Env = {
    name: "grp",
    systemPrompt: "Be brief.",
    listTools: () => [{ name: "bump", description: "bump", parameters: { type: "object" } }],
    async init(id) {
      log.push(`init ${id}`);
      state.set(id, 0);
    },
    async runTool(id, call: ToolCallRequest) {
      if (call.name === "crash") throw new Error("tool broke");
      state.set(id, state.get(id)! + 1);
      return { content: String(state.get(id)), isError: false };
    },
    async computeReward(_id, messages: Message[]) {
      return { ok: messages.at(-1)?.content === "right" ? 1 : 0, rank: 0 };
    },
    async release(id) {
      log.push(`release ${id}`);
      state.delete(id);
    },
    async close() {},
    capabilities: {
      reward: { weights: { ok: 1, rank: 1 } },
      fork: {
        async fork(id, kids) {
          log.push(`fork ${id}->${kids.join(",")}`);
          for (const k of kids) state.set(k, state.get(id)!);
        },
      },
      groupReward: {
        async computeGroupReward(group) {
          log.push(`group ${group.map((m) => m.rolloutId).join(",")}`);
          return group.map((_, i) => ({ rank: i / 10 }));
        },
      },
      ...caps,
    },
    ...over,
  };
  return { env, log, state };
}

const task: Task = { id: "t", prompt: "go", groundTruth: null };
const ids = (n: number) => Array.from({ length: n }, (_, k) => `t#${k}`);

describe("EpisodeGroup set-up", () => {
  it("inits once and forks the rest; members are independent episodes with their own sample numbers", async () => {
    const { env, log, state } = groupEnv();
    const g = await EpisodeGroup.start(env, task, { rolloutIds: ids(3), samples: [4, 5, 6], toolFormat: "openai" });
    expect(log).toEqual(["init t#0", "fork t#0->t#1,t#2"]);
    expect(g.usesFork).toBe(true);
    const eps = await g.episodes();
    expect(eps.map((e) => e.rolloutId)).toEqual(ids(3));
    expect(eps.map((e) => e.result().sample)).toEqual([4, 5, 6]);
    expect(eps.every((e) => !e.done && e.messages.length === 2)).toBe(true);
    // member 1 changes only its own state
    await eps[1]!.callTool({ name: "bump", arguments: {} });
    expect([state.get("t#0"), state.get("t#1"), state.get("t#2")]).toEqual([0, 1, 0]);
    await g.close();
    expect(state.size).toBe(0);
  });

  it("forked members get an episode only when asked for; close frees the forked state of the others", async () => {
    const { env, log, state } = groupEnv();
    const g = new EpisodeGroup(env, task, { rolloutIds: ids(3) });
    const first = await g.member(0);
    expect(first.rolloutId).toBe("t#0");
    expect([...state.keys()]).toEqual(ids(3));
    await g.member(2);
    await g.close();
    expect(log.filter((l) => l.startsWith("release")).sort()).toEqual(["release t#0", "release t#1", "release t#2"]);
    expect(state.size).toBe(0);
  });

  it("without fork (or with fork: false) each member inits on its own, on demand", async () => {
    const { env, log } = groupEnv({}, { fork: undefined });
    const g = new EpisodeGroup(env, task, { rolloutIds: ids(3) });
    await g.member(2);
    expect(log).toEqual(["init t#2"]);
    await g.episodes();
    expect(log.sort()).toEqual(["init t#0", "init t#1", "init t#2"]);
    await g.close();

    const forking = groupEnv();
    await (await EpisodeGroup.start(forking.env, task, { rolloutIds: ids(2), fork: false })).close();
    expect(forking.log.filter((l) => l.startsWith("fork"))).toEqual([]);
  });

  it("a fork that fails or never returns falls back to one init per member, releasing what it set up", async () => {
    for (const fork of [
      async () => {
        throw new Error("no fork today");
      },
      () => never<void>(),
    ]) {
      const { env, log, state } = groupEnv({}, { fork: { fork } });
      const g = await EpisodeGroup.start(env, task, { rolloutIds: ids(3), initTimeoutMs: 20 });
      const eps = await g.episodes();
      expect(eps.every((e) => !e.done)).toBe(true);
      expect(log).toContain("release t#1");
      expect(log.filter((l) => l.startsWith("init")).length).toBe(4);
      await g.close();
      expect(state.size).toBe(0);
    }
  });

  it("a member whose init fails is an env_error episode, not a throw; the others run", async () => {
    const { env } = groupEnv(
      {
        async init(id) {
          if (id === "t#1") throw new Error("disk full");
        },
      },
      { fork: undefined },
    );
    const g = await EpisodeGroup.start(env, task, { rolloutIds: ids(3) });
    const eps = await g.episodes();
    expect(eps.map((e) => e.outcome)).toEqual([undefined, "env_error", undefined]);
    expect(eps[1]!.error).toMatch(/disk full/);
  });

  it("refuses bad ids and members out of range", async () => {
    const { env } = groupEnv();
    expect(() => new EpisodeGroup(env, task, { rolloutIds: [] })).toThrow(UsageError);
    expect(() => new EpisodeGroup(env, task, { rolloutIds: ["a", "a"] })).toThrow(/distinct/);
    await expect(new EpisodeGroup(env, task, { rolloutIds: ids(2) }).member(2)).rejects.toThrow(UsageError);
  });
});

describe("EpisodeGroup scoring", () => {
  it("scores each member, then adds the group's components (in member order)", async () => {
    const { env, log } = groupEnv();
    const g = await EpisodeGroup.start(env, task, { rolloutIds: ids(3) });
    const eps = await g.episodes();
    await eps[0]!.step("right");
    await eps[1]!.step("wrong");
    await eps[2]!.step("right");
    const ends = await g.finish();
    expect(ends.map((e) => [e.outcome, e.memberReward, e.reward])).toEqual([
      ["completed", 1, 1],
      ["completed", 0, 0.1],
      ["completed", 1, 1.2],
    ]);
    expect(ends[2]!.rewards).toEqual({ ok: 1, rank: 0.2 });
    expect(log.filter((l) => l.startsWith("group"))).toEqual(["group t#0,t#1,t#2"]);
    // the episodes' own results carry the group reward
    expect(eps[2]!.result().reward).toBeCloseTo(1.2);
    expect(await g.finish()).toBe(ends);
    await g.close();
  });

  it("a member's env failure stays its own outcome and is left out of the group reward", async () => {
    const { env, log } = groupEnv();
    const g = await EpisodeGroup.start(env, task, { rolloutIds: ids(3), toolFormat: "openai" });
    const eps = await g.episodes();
    const crash = {
      role: "assistant" as const,
      content: null,
      tool_calls: [{ id: "c", type: "function" as const, function: { name: "crash", arguments: "{}" } }],
    };
    await eps[0]!.step("right");
    await eps[1]!.step(crash);
    await eps[2]!.step("wrong");
    const ends = await g.finish();
    expect(ends.map((e) => e.outcome)).toEqual(["completed", "env_error", "completed"]);
    expect(ends[1]!.reward).toBeUndefined();
    expect(log).toContain("group t#0,t#2");
  });

  it("a group reward that throws, never returns, or answers badly: no member is scored (never a 0)", async () => {
    const cases: Array<[EnvCapabilities["groupReward"], string]> = [
      [
        {
          async computeGroupReward() {
            throw new InfraError("judge down");
          },
        },
        "infra_error",
      ],
      [{ computeGroupReward: () => never() }, "env_error"],
      [{ computeGroupReward: async () => [{ rank: 1 }] }, "env_error"],
      [{ computeGroupReward: async (g) => g.map(() => ({ rank: Number.NaN })) }, "env_error"],
    ];
    for (const [groupReward, outcome] of cases) {
      const { env } = groupEnv({}, { groupReward });
      const g = await EpisodeGroup.start(env, task, { rolloutIds: ids(2), rewardTimeoutMs: 20 });
      for (const ep of await g.episodes()) await ep.step("right");
      const ends = await g.finish();
      expect(ends.map((e) => e.outcome)).toEqual([outcome, outcome]);
      expect(ends.every((e) => e.reward === undefined && /group reward failed/.test(e.error ?? ""))).toBe(true);
      await g.close();
    }
  });

  it("finish scores members still running (as completed) and close releases everything", async () => {
    const { env, state } = groupEnv({}, { groupReward: undefined });
    const g = new EpisodeGroup(env, task, { rolloutIds: ids(2) });
    const ends = await g.finish();
    expect(ends.map((e) => [e.outcome, e.reward])).toEqual([
      ["completed", 0],
      ["completed", 0],
    ]);
    await g.close();
    await g.close();
    expect(state.size).toBe(0);
    expect((await g.results()).length).toBe(2);
    await expect(g.member(0)).rejects.toThrow(/closed/);
  });
});

describe("group reward helpers", () => {
  it("computeGroupRewards checks shape and finiteness under the time limit", async () => {
    const { env } = groupEnv();
    const members = [{ rolloutId: "a", task, messages: [], rewards: { ok: 1 } }];
    expect(await computeGroupRewards(env, members)).toEqual([{ rank: 0 }]);
    expect(await computeGroupRewards(env, [])).toEqual([]);
    await expect(
      computeGroupRewards(groupEnv({}, { groupReward: { computeGroupReward: () => never() } }).env, members, {
        rewardTimeoutMs: 10,
      }),
    ).rejects.toThrow(/did not return within 10 ms/);
    await expect(computeGroupRewards(groupEnv({}, { groupReward: undefined }).env, members)).rejects.toThrow(
      UsageError,
    );
    expect(() => checkGroupRewards({ rank: 1 }, 1, "wire")).toThrow(/wire returned object for 1 rollouts/);
    expect(() => checkGroupRewards([{ rank: "1" }], 1)).toThrow(/non-finite/);
  });

  it("scoreGroup adds group components to finished results in place", async () => {
    const { env } = groupEnv();
    const base = { taskId: "t", groupId: "t", attempt: 0, turns: 1, toolCalls: 0, toolErrors: 0, durationMs: 1 };
    const results: RolloutResult[] = [
      { ...base, rolloutId: "a", sample: 0, outcome: "completed", reward: 1, rewards: { ok: 1 }, messages: [] },
      { ...base, rolloutId: "b", sample: 1, outcome: "env_error", error: "x", messages: [] },
      { ...base, rolloutId: "c", sample: 2, outcome: "truncated", reward: 0, rewards: { ok: 0 }, messages: [] },
    ];
    await scoreGroup(env, task, results);
    expect(results.map((r) => r.reward)).toEqual([1, undefined, 0.1]);
  });
});
