import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { extractAnswer } from "./answer.js";
import { defineEnv } from "./define-env.js";
import { InfraError } from "./errors.js";
import { scriptedPolicy } from "./policies/scripted.js";
import type { Policy } from "./policy.js";
import { readResults } from "./results-file.js";
import type { RolloutResult } from "./rollout-result.js";
import { type RunEvent, runMany } from "./run-many.js";
import { summarize } from "./summary.js";
import { tool } from "./tool.js";
import type { Task } from "./types.js";

type S = { counter: number; log: string[] };

function counterEnv(extra: { fork?: boolean; groupReward?: boolean } = {}) {
  const stats = { inits: 0, forks: 0, releases: 0 };
  const env = defineEnv<Task<string>, S>({
    name: "counter",
    systemPrompt: "Count.",
    initState: () => {
      stats.inits++;
      return { counter: 0, log: [] };
    },
    forkState: (s) => {
      stats.forks++;
      return { counter: s.counter, log: [...s.log] };
    },
    releaseState: () => {
      stats.releases++;
    },
    tools: [
      tool({
        name: "inc",
        description: "increment",
        parameters: z.object({}),
        execute: (_a, { state }) => String(++state.counter),
      }),
    ],
    reward: ({ completion, task, state }) => ({
      correct: extractAnswer(completion) === task.groundTruth ? 1 : 0,
      counter: state.counter,
    }),
    rewardWeights: { correct: 1 },
  });
  if (!extra.fork) delete env.capabilities!.fork;
  if (extra.groupReward) {
    env.capabilities!.groupReward = { computeGroupReward: async (group) => group.map((_, i) => ({ rank: i })) };
  }
  return { env, stats };
}

const tasks: Task<string>[] = Array.from({ length: 6 }, (_, i) => ({
  id: `t${i}`,
  prompt: `task ${i}`,
  groundTruth: "1",
}));
const policy = scriptedPolicy("ref", ({ turn }) =>
  turn === 0 ? { calls: [{ name: "inc", arguments: {} }] } : { answer: "<answer>1</answer>" },
);

describe("runMany", () => {
  it("runs tasks × group with bounded concurrency and summarises", async () => {
    const { env, stats } = counterEnv();
    let inFlight = 0;
    let maxInFlight = 0;
    const gated: Policy = {
      name: "gated",
      async act(input) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setImmediate(r));
        inFlight--;
        return policy.act(input);
      },
    };
    const events: RunEvent[] = [];
    const { results } = await runMany(env, tasks, gated, { group: 3, concurrency: 4, onEvent: (e) => events.push(e) });
    expect(results).toHaveLength(18);
    expect(maxInFlight).toBeLessThanOrEqual(4);
    expect(stats.inits).toBe(18);
    expect(stats.releases).toBe(18);
    expect(new Set(results.map((r) => r.rolloutId)).size).toBe(18);
    expect(events[0]).toEqual({ type: "start", total: 18, skipped: 0 });
    expect(events.at(-1)!.type).toBe("end");
    const s = summarize(results, { env: "counter", policy: "gated" });
    expect(s.outcomes.completed).toBe(18);
    expect(s.reward.mean).toBe(1);
    expect(s.passRate).toBe(1);
    expect(s.tasks.t0).toMatchObject({ n: 3, passRate: 1 });
  });

  it("sets groups up once with fork and scores group rewards together", async () => {
    const { env, stats } = counterEnv({ fork: true, groupReward: true });
    const { results } = await runMany(env, tasks.slice(0, 2), policy, { group: 4, concurrency: 3 });
    expect(stats.inits).toBe(2);
    expect(stats.forks).toBe(6);
    expect(results.every((r) => r.rewards!.counter === 1)).toBe(true);
    const ranks = results.filter((r) => r.taskId === "t0").map((r) => r.rewards!.rank);
    expect(ranks.sort()).toEqual([0, 1, 2, 3]);
  });

  it("retries infra errors and never scores them", async () => {
    const { env } = counterEnv();
    const fails = new Map<string, number>();
    const flaky: Policy = {
      name: "flaky",
      async act(input) {
        const n = fails.get(input.rolloutId) ?? 0;
        if (input.task.id === "t0" && n < 1) {
          fails.set(input.rolloutId, n + 1);
          throw new InfraError("503");
        }
        if (input.task.id === "t1") throw new InfraError("endpoint down");
        return policy.act(input);
      },
    };
    const { results } = await runMany(env, tasks.slice(0, 3), flaky, { retries: 2, retryDelayMs: 0 });
    const byTask = Object.fromEntries(results.map((r) => [r.taskId, r]));
    expect(byTask.t0).toMatchObject({ outcome: "completed", attempt: 1, reward: 1 });
    expect(byTask.t1).toMatchObject({ outcome: "infra_error", attempt: 2 });
    expect(byTask.t1!.reward).toBeUndefined();
    expect(byTask.t2!.outcome).toBe("completed");
  });

  it("resumes from results.jsonl without losing or duplicating rollouts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bmx-resume-"));
    const path = join(dir, "results.jsonl");
    const { env } = counterEnv();
    await runMany(env, tasks.slice(0, 3), policy, { resultsPath: path, group: 2 });
    // simulate a run killed half-way: keep 2 lines, tear the third, add an infra error
    const lines = readFileSync(path, "utf8").trim().split("\n");
    const infra = { ...JSON.parse(lines[2]!), outcome: "infra_error", reward: undefined };
    writeFileSync(path, `${lines[0]}\n${lines[1]}\n${JSON.stringify(infra)}\n${lines[3]!.slice(0, 20)}`);
    const seen: string[] = [];
    const counting: Policy = {
      name: "counting",
      act: async (i) => {
        if (i.turn === 0) seen.push(i.rolloutId);
        return policy.act(i);
      },
    };
    const { results } = await runMany(env, tasks.slice(0, 3), counting, { resultsPath: path, group: 2, resume: true });
    expect(results).toHaveLength(6);
    expect(seen).toHaveLength(4);
    const onDisk = readResults(path);
    expect(onDisk).toHaveLength(6);
    expect(new Set(onDisk.map((r) => r.rolloutId)).size).toBe(6);
    expect(onDisk.every((r) => r.outcome === "completed")).toBe(true);
  });

  it("refuses duplicate task ids and bad sizes", async () => {
    const { env } = counterEnv();
    await expect(runMany(env, [tasks[0]!, tasks[0]!], policy)).rejects.toThrow(/duplicate task id "t0"/);
    await expect(runMany(env, tasks, policy, { group: 0 })).rejects.toThrow(/group size/);
  });
});

describe("runMany streaming", () => {
  it("with a results file keeps only aggregates; results are read back from the file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bmx-stream-"));
    const path = join(dir, "results.jsonl");
    const { env } = counterEnv();
    const emitted: RolloutResult[] = [];
    const run = await runMany(env, tasks, policy, {
      resultsPath: path,
      group: 2,
      onEvent: (e) => {
        if (e.type === "rollout") emitted.push(e.result);
      },
    });
    expect(run.aggregate.n).toBe(12);
    expect(run.aggregate.outcomes.completed).toBe(12);
    const s = run.summary({ env: "counter", policy: "ref" });
    expect(s).toMatchObject({ n: 12, passRate: 1, reward: { mean: 1, std: 0 }, durationMs: run.durationMs });
    expect(s.tasks.t3).toEqual({ n: 2, scored: 2, meanReward: 1, passRate: 1 });
    // the same summary as one computed from the file
    const fromFile = summarize(readResults(path), { env: "counter", policy: "ref" });
    expect({ ...s, finishedAt: "", startedAt: "", durationMs: 0 }).toEqual({
      ...fromFile,
      finishedAt: "",
      startedAt: "",
      durationMs: 0,
    });
    // results were not held by the run: they come back from the file, as new objects
    const back = run.results;
    expect(back).toHaveLength(12);
    expect(back[0]).toEqual(JSON.parse(JSON.stringify(emitted[0])));
    expect(back[0]).not.toBe(emitted[0]);
    expect(run.results).toBe(back);
  });

  it("keeps results in memory without a results file, or when asked", async () => {
    const { env } = counterEnv();
    const emitted: RolloutResult[] = [];
    const onEvent = (e: RunEvent) => {
      if (e.type === "rollout") emitted.push(e.result);
    };
    const run = await runMany(env, tasks.slice(0, 2), policy, { onEvent });
    expect(run.results).toEqual(emitted);
    expect(run.results[0]).toBe(emitted[0]);
    const dir = mkdtempSync(join(tmpdir(), "bmx-keep-"));
    emitted.length = 0;
    const kept = await runMany(env, tasks.slice(0, 2), policy, {
      resultsPath: join(dir, "r.jsonl"),
      keepResults: true,
      onEvent,
    });
    expect(kept.results[1]).toBe(emitted[1]);
  });

  it("a group setup or group reward that never returns does not hang the run", async () => {
    const { env } = counterEnv({ fork: true, groupReward: true });
    env.capabilities!.groupReward = { computeGroupReward: () => new Promise(() => {}) };
    const { results } = await runMany(env, tasks.slice(0, 1), policy, { group: 2, rewardTimeoutMs: 5 });
    expect(results.map((r) => r.outcome)).toEqual(["env_error", "env_error"]);
    expect(results[0]!.error).toMatch(/computeGroupReward did not return within 5 ms/);
    const hung = counterEnv({ fork: true }).env;
    hung.capabilities!.fork = { fork: () => new Promise(() => {}) };
    const r2 = await runMany(hung, tasks.slice(0, 1), policy, { group: 2, initTimeoutMs: 5 });
    // the group falls back to one init per member
    expect(r2.results.map((r) => r.outcome)).toEqual(["completed", "completed"]);
  });
});

describe("runMany abort", () => {
  it("starts nothing after an abort and writes no rollout cut short by it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bmx-abort-"));
    const path = join(dir, "results.jsonl");
    const { env } = counterEnv();
    const controller = new AbortController();
    const started: string[] = [];
    const stopping: Policy = {
      name: "stopping",
      async act(input) {
        if (input.turn === 0) started.push(input.rolloutId);
        if (input.task.id === "t2") controller.abort();
        return policy.act(input);
      },
    };
    const run = await runMany(env, tasks, stopping, { resultsPath: path, concurrency: 1, signal: controller.signal });
    expect(started).toEqual(["t0#0", "t1#0", "t2#0"]);
    const onDisk = readResults(path);
    expect(onDisk.map((r) => r.rolloutId)).toEqual(["t0#0", "t1#0"]);
    expect(run.aggregate.n).toBe(2);
  });

  it("an abort inside a forked group frees the members it forked but never ran", async () => {
    const { env, stats } = counterEnv({ fork: true });
    const controller = new AbortController();
    const stopping: Policy = {
      name: "stopping",
      async act(input) {
        controller.abort();
        return policy.act(input);
      },
    };
    await runMany(env, tasks.slice(0, 1), stopping, { group: 4, concurrency: 1, signal: controller.signal });
    expect(stats.inits + stats.forks).toBe(4);
    expect(stats.releases).toBe(4);
  });
});
