import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { defineEnv } from "../define-env.js";
import { UsageError } from "../errors.js";
import { scriptedPolicy } from "../policies/scripted.js";
import { runMany } from "../run-many.js";
import { tool } from "../tool.js";
import type { Task } from "../types.js";
import { sha256Hex } from "./artifacts.js";
import { datasetHash, type RunIdentity } from "./identity.js";
import { rescoreRunDir } from "./rescore.js";
import { resultRolloutId, rolloutIdOf } from "./rollout-id.js";
import { RunDir, rewardBounds } from "./run-dir.js";

const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "rundir-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  dirs.length = 0;
});

/** An env whose reward reads its state (a "file" the model writes through a tool), declared as an artifact. */
function fileEnv(opts: { artifactsThrow?: boolean } = {}) {
  return defineEnv<Task<string>, { file: string }>({
    name: "filed",
    systemPrompt: "Write the answer to the file.",
    tools: [
      tool<{ file: string }>({
        name: "write",
        description: "write the file",
        parameters: z.object({ text: z.string() }),
        execute: ({ text }, { state }) => {
          state.file = text;
          return "ok";
        },
      }),
    ],
    initState: () => ({ file: "" }),
    reward: ({ state, task }) => ({ correct: state.file === task.groundTruth ? 1 : 0 }),
    rewardWeights: { correct: 1 },
    rewardReads: "state",
    artifacts: (state) => {
      if (opts.artifactsThrow) throw new Error("disk gone");
      return { "file.txt": Buffer.from(state.file) };
    },
    restoreArtifacts: (state, a) => {
      state.file = Buffer.from(a["file.txt"]!).toString();
    },
  });
}

const tasks: Task<string>[] = [
  { id: "a", prompt: "write x", groundTruth: "x" },
  { id: "b", prompt: "write y", groundTruth: "y" },
  { id: "c", prompt: "write x too", groundTruth: "x" },
];

/** Writes the gold of tasks a and c, and "wrong" for b; then answers. */
const writer = scriptedPolicy<Task<string>>("writer", (input) =>
  input.turn === 0
    ? { calls: [{ name: "write", arguments: { text: input.task.id === "b" ? "wrong" : input.task.groundTruth } }] }
    : { answer: "done" },
);

describe("RunDir: artifacts taken before release, content-addressed", () => {
  it("stores each scored rollout's artifacts once per content and names them in its result line", async () => {
    const rd = RunDir.create(join(tmp(), "run"));
    await runMany(fileEnv(), tasks, writer, { resultsPath: rd.resultsPath, artifacts: rd, group: 2 });
    const rows = rd.results();
    expect(rows).toHaveLength(6);
    for (const r of rows)
      expect(r.artifacts?.["file.txt"]?.sha256).toBe(sha256Hex(Buffer.from(r.taskId === "b" ? "wrong" : "x")));
    // 6 rollouts, 2 distinct final files: 2 stored artifacts
    expect(readdirSync(rd.artifactsDir).sort()).toEqual(
      [sha256Hex(Buffer.from("wrong")), sha256Hex(Buffer.from("x"))].sort(),
    );
    // rows land in completion order, which concurrency may change: read task a's
    const ref = rows.find((r) => r.taskId === "a")!.artifacts!["file.txt"]!;
    expect((await rd.readArtifact(ref)).toString()).toBe("x");
    expect(ref.bytes).toBe(1);
  });

  it("keeps no artifacts without a store, and records (never throws) an env's artifact failure", async () => {
    const none = await runMany(fileEnv(), tasks.slice(0, 1), writer);
    expect(none.results[0]!.artifacts).toBeUndefined();
    const rd = RunDir.create(join(tmp(), "run"));
    const r = await runMany(fileEnv({ artifactsThrow: true }), tasks.slice(0, 1), writer, { artifacts: rd });
    const row = r.results[0]!;
    expect(row.reward).toBe(1);
    expect(row.artifacts).toBeUndefined();
    expect(row.metadata?.artifactError).toMatch(/disk gone/);
  });

  it("an error rollout (env_error) has no artifacts", async () => {
    const env = fileEnv();
    env.computeReward = async () => {
      throw new Error("reward bug");
    };
    const rd = RunDir.create(join(tmp(), "run"));
    const r = await runMany(env, tasks.slice(0, 1), writer, { artifacts: rd });
    expect(r.results[0]!.outcome).toBe("env_error");
    expect(r.results[0]!.artifacts).toBeUndefined();
    expect(existsSync(rd.artifactsDir)).toBe(false);
  });

  it("refuses an artifact whose bytes no longer match its address", async () => {
    const rd = RunDir.create(join(tmp(), "run"));
    const ref = await rd.put(Buffer.from("hello"));
    writeFileSync(rd.artifactPath(ref.sha256), "HELLO");
    await expect(rd.readArtifact(ref)).rejects.toThrow(/do not match its sha256/);
    await expect(rd.readArtifact("0".repeat(64))).rejects.toThrow(/missing/);
    expect(() => rd.artifactPath("../../etc/passwd")).toThrow(UsageError);
  });
});

describe("RunDir: identity, resume, summary", () => {
  const identity = (over: Partial<RunIdentity> = {}): RunIdentity => ({
    env: "filed",
    dataset: "fixtures",
    datasetHash: datasetHash(tasks),
    tasks: 3,
    group: 1,
    expectedRollouts: 3,
    completed: false,
    policy: "writer",
    config: { maxTurns: 10 },
    ...over,
  });

  it("create refuses a folder of other things and an old run without force; force clears it", async () => {
    const other = tmp();
    writeFileSync(join(other, "notes.txt"), "mine");
    expect(() => RunDir.create(other)).toThrow(/holds other things/);
    const d = join(tmp(), "run");
    const rd = RunDir.create(d);
    rd.writeIdentity(identity());
    await rd.put(Buffer.from("z"));
    expect(() => RunDir.create(d)).toThrow(/already holds a run/);
    RunDir.create(d, { force: true });
    expect(readdirSync(d)).toEqual([]);
  });

  it("checkResume refuses another run's identity and rows that are not this run's", async () => {
    const rd = RunDir.create(join(tmp(), "run"));
    rd.writeIdentity(identity());
    await runMany(fileEnv(), tasks, writer, { resultsPath: rd.resultsPath });
    expect(() => rd.checkResume(identity(), tasks, 1, { correct: 1 })).not.toThrow();
    expect(() => rd.checkResume(identity({ policy: "other" }), tasks, 1, { correct: 1 })).toThrow(
      /different run \(policy writer → other\)/,
    );
    expect(() => rd.checkResume(identity(), tasks.slice(0, 2), 1, { correct: 1 })).toThrow(
      /results\.jsonl:3: rollout "c#0"/,
    );
    const good = readFileSync(rd.resultsPath, "utf8");
    const text = good.replace('"reward":0', '"reward":1');
    writeFileSync(rd.resultsPath, text);
    expect(() => rd.checkResume(identity(), tasks, 1, { correct: 1 })).toThrow(/not what the env's weights make/);
  });

  // issue 41: a forged reward whose components agree with it (1e9 and {correct: 1e9}) passed the weights check
  it("checkResume refuses components and rewards outside the env's range, naming file:line", async () => {
    const rd = RunDir.create(join(tmp(), "run"));
    rd.writeIdentity(identity());
    await runMany(fileEnv(), tasks, writer, { resultsPath: rd.resultsPath });
    const good = readFileSync(rd.resultsPath, "utf8");
    const rows = good
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    const write = (i: number, patch: Record<string, unknown>) =>
      writeFileSync(
        rd.resultsPath,
        rows.map((r, j) => `${JSON.stringify(j === i ? { ...r, ...patch } : r)}\n`).join(""),
      );
    const check =
      (weights: Record<string, number> = { correct: 1 }, range?: readonly [number, number]) =>
      () =>
        rd.checkResume(identity(), tasks, 1, weights, range);
    write(1, { reward: 1e9, rewards: { correct: 1e9 } });
    expect(check()).toThrow(`${rd.resultsPath}:2: reward component correct = 1000000000 is outside [0, 1]`);
    write(2, { reward: -1, rewards: { correct: -1 } });
    expect(check()).toThrow(/results\.jsonl:3: reward component correct = -1 is outside \[0, 1\]/);
    // a component with no weight is held to the range too
    write(0, { rewards: { ...rows[0].rewards, extra: 7 } });
    expect(check()).toThrow(/results\.jsonl:1: reward component extra = 7 is outside/);
    // with no weights the reward is the components' mean: within the range too
    write(0, { reward: 0.5, rewards: { a: 0, b: 1 } });
    expect(check({})).not.toThrow();
    // the env's declared range: components in [-1, 2]
    write(1, { reward: 2, rewards: { correct: 2 } });
    expect(check({ correct: 1 }, [-1, 2])).not.toThrow();
    write(1, { reward: 3, rewards: { correct: 3 } });
    expect(check({ correct: 1 }, [-1, 2])).toThrow(/:2: reward component correct = 3 is outside \[-1, 2\]/);
    // a reward outside the weights' range even when no component is (two weights, a reward written past their sum)
    write(1, { reward: 3, rewards: { correct: 1 } });
    expect(check({ correct: 1 })).toThrow(/:2: reward 3 is outside \[0, 1\], the range this env's weights allow/);
    // a row whose task id is not the dataset's for its rollout id
    write(0, { taskId: "b" });
    expect(check()).toThrow(/results\.jsonl:1: rollout "a#0" names task "b", not "a"/);
    writeFileSync(rd.resultsPath, good);
    expect(check()).not.toThrow();
  });

  it("rewardBounds: the least and greatest reward weights make of components in a range", () => {
    expect(rewardBounds({ a: 1 })).toEqual([0, 1]);
    expect(rewardBounds({ a: 0.5, b: 0.5, c: 0 })).toEqual([0, 1]);
    expect(rewardBounds({ a: 1, b: -0.5 })).toEqual([-0.5, 1]);
    expect(rewardBounds({ a: 2 }, [-1, 2])).toEqual([-2, 4]);
    expect(rewardBounds({}, [0, 1])).toEqual([0, 1]);
  });

  it("readSummary recomputes a killed run's summary from its last results and marks it incomplete", () => {
    const rd = RunDir.create(join(tmp(), "run"));
    rd.writeIdentity(identity({ completed: true }));
    const row = (id: string, outcome: string, reward?: number) =>
      JSON.stringify({
        taskId: id.split("#")[0],
        rolloutId: id,
        outcome,
        ...(reward === undefined ? {} : { reward, rewards: { correct: reward } }),
        turns: 1,
        toolCalls: 0,
        toolErrors: 0,
        durationMs: 1,
        messages: [],
      });
    writeFileSync(
      rd.resultsPath,
      `${[row("a#0", "infra_error"), row("b#0", "completed", 0), row("a#0", "completed", 1)].join("\n")}\n{"torn`,
    );
    expect(rd.results().map(resultRolloutId)).toEqual(["b#0", "a#0"]);
    const s = rd.readSummary();
    expect(s.n).toBe(2);
    expect(s.reward.mean).toBe(0.5);
    expect(s.run?.completed).toBe(false);
    rd.writeSummary({ ...s, run: identity({ completed: true }) });
    expect(RunDir.open(rd.dir).readSummary().run?.completed).toBe(true);
  });

  it("open names what is missing; rollout ids are task#sample", () => {
    const d = tmp();
    expect(() => RunDir.open(join(d, "nope"))).toThrow(/no such run directory/);
    mkdirSync(join(d, "empty"));
    expect(() => RunDir.open(join(d, "empty"))).toThrow(/not a run dir: no results.jsonl/);
    expect(rolloutIdOf("t", 3)).toBe("t#3");
    expect(resultRolloutId({ taskId: "t", sample: 2 })).toBe("t#2");
  });
});

describe("rescoreRunDir", () => {
  const ident = (n: number): RunIdentity => ({
    env: "filed",
    dataset: "fixtures",
    datasetHash: datasetHash(tasks),
    tasks: 3,
    group: n / 3,
    expectedRollouts: n,
    completed: true,
    policy: "writer",
    config: {},
  });

  async function evalRun(group = 2): Promise<RunDir> {
    const rd = RunDir.create(join(tmp(), "run"));
    rd.writeIdentity(ident(3 * group));
    await runMany(fileEnv(), tasks, writer, { resultsPath: rd.resultsPath, artifacts: rd, group, concurrency: 3 });
    return rd;
  }

  it("restores each rollout's stored state, scores identical rollouts once, keeps the run's order", async () => {
    const rd = await evalRun();
    const before = rd.results();
    const out = join(tmp(), "new");
    const res = await rescoreRunDir(fileEnv(), rd.dir, tasks, { out, concurrency: 3 });
    expect(res).toMatchObject({ rescored: 6, changed: 0, kept: 0, computed: 3 });
    const after = RunDir.open(out).results();
    expect(after.map((r) => r.rolloutId)).toEqual(before.map((r) => r.rolloutId));
    expect(after.map((r) => r.reward)).toEqual(before.map((r) => r.reward));
    expect(RunDir.open(out).readIdentity()?.rescoredFrom).toBe(rd.dir);
    const all = await rescoreRunDir(fileEnv(), rd.dir, tasks, { out, force: true, dedup: false });
    expect(all.computed).toBe(6);
  });

  it("a reward that reads the state sees the stored state: a changed artifact changes the reward", async () => {
    const rd = await evalRun(1);
    const rows = rd.results();
    // rollout b#0 wrote "wrong"; give it the state task b's gold would be
    const ref = await rd.put(Buffer.from("y"));
    const b = rows.find((r) => r.taskId === "b")!;
    b.artifacts = { "file.txt": ref };
    writeFileSync(rd.resultsPath, rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const out = join(tmp(), "new");
    const res = await rescoreRunDir(fileEnv(), rd.dir, tasks, { out });
    expect(res).toMatchObject({ rescored: 3, changed: 1 });
    expect(
      RunDir.open(out)
        .results()
        .find((r) => r.taskId === "b")!.reward,
    ).toBe(1);
    // a reward code change (this one scores everything 0): a and c drop, b (stored 0) stays
    const strict = fileEnv();
    strict.computeReward = async () => ({ correct: 0 });
    const res2 = await rescoreRunDir(strict, rd.dir, tasks, { out, force: true });
    expect(res2.changed).toBe(2);
  });

  it("refuses, before writing anything, a run without the artifacts the env's reward reads, or an env that can't restore", async () => {
    const rd = await evalRun(1);
    const rows = rd.results();
    delete rows[1]!.artifacts;
    writeFileSync(rd.resultsPath, rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const out = join(tmp(), "new");
    await expect(rescoreRunDir(fileEnv(), rd.dir, tasks, { out })).rejects.toThrow(
      /env filed: its reward reads the rollout's final state .* rollout [abc]#0 in .* has no stored artifacts/,
    );
    expect(existsSync(out)).toBe(false);
    const noRestore = fileEnv();
    delete noRestore.capabilities!.artifacts!.restoreArtifacts;
    await expect(rescoreRunDir(noRestore, rd.dir, tasks, { out })).rejects.toThrow(/declares no artifacts to restore/);
    await expect(rescoreRunDir(fileEnv(), rd.dir, tasks, { out: rd.dir })).rejects.toThrow(/another folder/);
  });
});
