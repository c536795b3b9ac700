import { describe, expect, it } from "vitest";
import { defineEnv } from "./define-env.js";
import {
  assertEnvShape,
  capabilityOf,
  defineEnvModule,
  descriptionOf,
  type Env,
  type EnvModule,
  misplacedEnvMembers,
  passThresholdOf,
  referencePolicyOf,
  rewardWeightsOf,
  tasksOf,
} from "./env.js";
import { Episode } from "./episode.js";
import { UsageError } from "./errors.js";
import { scriptedPolicy } from "./policies/scripted.js";
import type { Task } from "./types.js";

type MyTask = Task<{ answer: string }>;
const makeEnv = () =>
  defineEnv<MyTask>({
    name: "typed",
    systemPrompt: (task) => `Answer ${task.groundTruth.answer.length} letters.`,
    tools: [],
    reward: ({ completion, task }) => ({ ok: completion === task.groundTruth.answer ? 1 : 0 }),
    loadTasks: async () => [{ id: "a", prompt: "?", groundTruth: { answer: "x" } }],
  });

describe("Env and EnvModule typing (checked by tsc --noEmit)", () => {
  it("an Env<MyTask> is usable where an Env is expected", () => {
    const env: Env = makeEnv();
    expect(env.name).toBe("typed");
  });

  it("defineEnvModule keeps createEnv's return type: a synchronous env needs no await", async () => {
    const mod = defineEnvModule({ name: "typed", description: "d", createEnv: () => makeEnv() });
    const env: Env<MyTask> = mod.createEnv();
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    expect(tasks[0]!.groundTruth.answer).toBe("x");
    const asyncMod = defineEnvModule({ name: "typed", description: "d", createEnv: async () => makeEnv() });
    const pending: Promise<Env<MyTask>> = asyncMod.createEnv();
    expect((await pending).name).toBe("typed");
    const registry: EnvModule[] = [mod, asyncMod];
    expect(registry).toHaveLength(2);
  });
});

describe("Env: a small core plus capabilities", () => {
  it("has eight core members and `capabilities` (adding a member fails this file's typecheck)", () => {
    const core: Record<keyof Env, true> = {
      name: true,
      systemPrompt: true,
      listTools: true,
      init: true,
      runTool: true,
      computeReward: true,
      release: true,
      close: true,
      capabilities: true,
    };
    expect(Object.keys(core)).toHaveLength(9);
  });

  it("defineEnv maps its flat options onto the capabilities, and gives none the config lacks", async () => {
    const bare = defineEnv({ name: "bare", systemPrompt: "x", reward: () => ({ ok: 1 }) });
    expect(Object.keys(bare.capabilities!).sort()).toEqual(["fork", "reward"]);
    expect(bare.capabilities!.reward).toEqual({ weights: {} });
    expect(capabilityOf(bare, "tasks")).toBeUndefined();
    expect([rewardWeightsOf(bare), passThresholdOf(bare), descriptionOf(bare)]).toEqual([{}, 1, ""]);

    const policy = scriptedPolicy("ref", () => ({ answer: "x" }));
    const full = defineEnv<MyTask, { n: number }>({
      name: "full",
      description: "all of it",
      systemPrompt: "x",
      initState: () => ({ n: 7 }),
      reward: () => ({ ok: 1 }),
      rewardWeights: { ok: 1 },
      passThreshold: 0.5,
      rewardComponentRange: [0, 2],
      rewardReads: "state",
      loadTasks: async () => [{ id: "a", prompt: "?", groundTruth: { answer: "x" } }],
      parseTask: (row) => row as MyTask,
      computeGroupReward: async (g) => g.map(() => ({ rank: 0 })),
      scoreCase: async () => ({ reward: 1, rewards: { ok: 1 } }),
      explainReward: () => ({ extracted: "x" }),
      referencePolicy: () => policy,
      rolloutMetadata: (_id, state) => ({ n: state.n }),
      episodeDefaults: { deadlineMs: 5 },
      parseActions: () => undefined,
      artifacts: (state) => ({ n: new Uint8Array([state.n]) }),
      restoreArtifacts: (state, a) => {
        state.n = a.n![0]!;
      },
      renderState: (state) => ({ kind: "text", text: String(state.n) }),
    });
    const caps = full.capabilities!;
    expect(Object.keys(caps).sort()).toEqual(
      ["artifacts", "episode", "explain", "fork", "groupReward", "metadata", "reference", "reward", "scoring"]
        .concat(["stateView", "tasks"])
        .sort(),
    );
    expect(caps.reward).toEqual({ weights: { ok: 1 }, passThreshold: 0.5, componentRange: [0, 2], reads: "state" });
    expect([passThresholdOf(full), descriptionOf(full)]).toEqual([0.5, "all of it"]);
    expect(caps.episode!.defaults).toEqual({ deadlineMs: 5 });
    expect(referencePolicyOf(full)).toBe(policy);
    expect((await tasksOf(full)).map((t) => t.id)).toEqual(["a"]);
    // the per-rollout capabilities read the rollout's state
    await full.init("r", { id: "a", prompt: "?", groundTruth: { answer: "x" } });
    expect(caps.metadata!.rolloutMetadata!("r")).toEqual({ n: 7 });
    await caps.artifacts!.restoreArtifacts!("r", { n: new Uint8Array([3]) });
    expect(await caps.artifacts!.artifacts("r")).toEqual({ n: new Uint8Array([3]) });
    await caps.fork!.fork("r", ["r2"]);
    expect(await caps.stateView!.renderState("r2")).toEqual({ kind: "text", text: "3" });
    await full.close();
    expect(caps.metadata!.rolloutMetadata!("r")).toBeUndefined();
  });

  it("names what is missing when a driver asks for a capability the env lacks", async () => {
    const bare = defineEnv({ name: "bare", systemPrompt: "x", reward: () => ({ ok: 1 }) });
    await expect(tasksOf(bare)).rejects.toThrow(/env bare has no task loader \(capabilities.tasks\)/);
    expect(() => referencePolicyOf(bare)).toThrow(UsageError);
  });

  it("refuses an env written for the flat contract, naming where each member now lives", () => {
    const flat = {
      ...defineEnv({ name: "old", systemPrompt: "x", reward: () => ({ ok: 1 }) }),
      rewardWeights: { ok: 1 },
      loadTasks: async () => [],
    };
    expect(misplacedEnvMembers(flat)).toEqual([
      "loadTasks → capabilities.tasks.loadTasks",
      "rewardWeights → capabilities.reward.weights",
    ]);
    expect(() => assertEnvShape(flat)).toThrow(
      /env old: loadTasks → capabilities.tasks.loadTasks, rewardWeights → capabilities.reward.weights: these members belong in `capabilities`/,
    );
    expect(() => assertEnvShape(makeEnv())).not.toThrow();
    expect(misplacedEnvMembers({ name: "x", description: undefined })).toEqual([]);
  });

  it("refuses such an env at every episode start, whichever driver runs it (a state view set at the top level too)", async () => {
    const flat = {
      ...defineEnv({ name: "old", systemPrompt: "x", reward: () => ({ ok: 1 }) }),
      renderState: () => ({ kind: "text" as const, text: "x" }),
    };
    await expect(Episode.start(flat, { id: "t", prompt: "p", groundTruth: null })).rejects.toThrow(
      /env old: renderState → capabilities.stateView.renderState/,
    );
    const ok = await Episode.start(makeEnv(), { id: "t", prompt: "p", groundTruth: { answer: "x" } });
    await ok.close();
  });
});
