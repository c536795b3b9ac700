import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runMany, runRollout, scoreCase, scriptedPolicy } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WikiTask } from "./dataset.js";
import wikipedia, { createWikipediaEnv } from "./index.js";

describe("wikipedia env (offline fixtures)", () => {
  let env: Awaited<ReturnType<typeof createWikipediaEnv>>;
  let tasks: WikiTask[];
  beforeAll(async () => {
    env = await createWikipediaEnv();
    tasks = await env.capabilities!.tasks!.loadTasks!();
  });
  afterAll(() => env.close());

  it("is an EnvModule named wikipedia", async () => {
    expect(wikipedia.name).toBe("wikipedia");
    const e = await wikipedia.createEnv({});
    expect(e.listTools().map((t) => t.name)).toEqual(["search_wikipedia", "get_wikipedia_article"]);
    await e.close();
  });

  it("ships ≥ 40 fixture questions over every dataset shape", () => {
    expect(tasks.length).toBeGreaterThanOrEqual(40);
    const shapes = new Set(tasks.map((t) => t.meta.shape));
    expect([...shapes].sort()).toEqual(["2wikimultihopqa", "bamboogle", "flashrag", "hotpotqa", "musique", "plain"]);
    expect(new Set(tasks.map((t) => t.id)).size).toBe(tasks.length);
  });

  it("the reference policy solves every fixture through the tools, hop by hop", async () => {
    const policy = env.capabilities!.reference!.referencePolicy();
    const { results } = await runMany(env, tasks, policy, { concurrency: 8, maxTurns: 12, retries: 0 });
    const bad = results.filter((r) => r.outcome !== "completed" || r.rewards?.exact_match !== 1);
    expect(bad.map((r) => `${r.taskId}: ${r.outcome} ${r.error ?? ""} ${JSON.stringify(r.rewards)}`)).toEqual([]);
    for (const r of results) {
      expect(r.reward).toBe(1);
      expect(r.rewards).toMatchObject({ exact_match: 1, f1: 1, format: 1 });
      expect(r.toolErrors).toBe(0);
      expect(r.toolCalls).toBeGreaterThanOrEqual(4); // ≥ 2 hops, a search and a read each
    }
    const hops = results.map((r) => r.toolCalls / 2);
    expect(Math.max(...hops)).toBe(4);
  });

  it("gold answers never reach the model: prompts and tool specs hold no answer", () => {
    const specs = JSON.stringify(env.listTools());
    for (const t of tasks) {
      expect(t.prompt.length).toBeGreaterThan(10);
      if (!["yes", "no"].includes(t.groundTruth[0]!.toLowerCase()) && !t.prompt.includes(t.groundTruth[0]!)) {
        expect(specs).not.toContain(t.groundTruth[0]);
      }
    }
  });

  it("scores a wrong answer 0 and keeps f1 as a reported component", async () => {
    const task = tasks.find((t) => t.meta.shape === "hotpotqa")!;
    const policy = scriptedPolicy<WikiTask>("wrong", () => ({ answer: "<answer>Nobody in particular</answer>" }));
    const r = await runRollout(env, task, policy);
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(0);
    expect(r.rewards).toEqual({ exact_match: 0, f1: 0, format: 1 });
  });

  it("scoreCase scores rows of every shape (benchmax score)", async () => {
    const ctx = { baseDir: ".", options: {} };
    const cases = [
      {
        id: "h",
        task: {
          _id: "x1",
          question: "Q?",
          answer: "Arlo Venn",
          type: "bridge",
          level: "hard",
          supporting_facts: [],
          context: [],
        },
        completion: "<answer>arlo venn</answer>",
      },
      {
        id: "m",
        task: { id: "2hop__1_2", question: "Q?", answer: "Orrin River", answer_aliases: ["Orrin"] },
        completion: "<answer>Orrin</answer>",
      },
      { id: "b", task: { Question: "Q?", Answer: "yes" }, completion: "<answer>no</answer>" },
      {
        id: "f",
        task: { id: 3, question: "Q?", golden_answers: ["1,234 metres", "1234 m"] },
        completion: "<answer>1234 metres</answer>",
      },
      {
        id: "p",
        task: { prompt: "Q?", ground_truth: "The Glass Orchard" },
        completion: "It is <answer>Glass Orchard</answer>",
      },
      {
        id: "w",
        task: { _id: "ab", question: "Q?", answer: "Keshmar", evidences: [] },
        completion: "<answer>Keshmar and Valdoria</answer>",
      },
    ];
    const out = [];
    for (const c of cases) out.push(await scoreCase(env, c, ctx));
    expect(out.map((o) => o.reward)).toEqual([1, 1, 0, 1, 1, 0]);
    expect(out[5]!.rewards.f1).toBeCloseTo(0.5, 12);
    expect(out[2]!.rewards).toEqual({ exact_match: 0, f1: 0, format: 1 });
  });

  it("loads a user dataset file and a split of the fixtures", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wiki-ds-"));
    const file = join(dir, "rows.jsonl");
    await writeFile(
      file,
      `${JSON.stringify({ Question: "a?", Answer: "b" })}\n${JSON.stringify({ question: "c?", golden_answers: ["d"], id: "x" })}\n`,
    );
    const loaded = await env.capabilities!.tasks!.loadTasks!(file);
    expect(loaded.map((t) => t.meta.shape)).toEqual(["bamboogle", "flashrag"]);
    expect(
      (await env.capabilities!.tasks!.loadTasks!(undefined, { split: "musique" })).every(
        (t) => t.meta.shape === "musique",
      ),
    ).toBe(true);
    expect(await env.capabilities!.tasks!.loadTasks!(undefined, { limit: 3 })).toHaveLength(3);
    await expect(env.capabilities!.tasks!.loadTasks!(undefined, { split: "nope" })).rejects.toThrow(
      /unknown split "nope"/,
    );
  });

  it("takes reward weights from code or the command line", async () => {
    const e = await createWikipediaEnv({ rewardWeights: "exact_match=0.5, f1=0.5" });
    expect(e.capabilities?.reward?.weights).toEqual({ exact_match: 0.5, f1: 0.5 });
    const task = tasks.find((t) => t.groundTruth[0] === "yes" || t.groundTruth[0] === "no") ?? tasks[0]!;
    const r = await runRollout(
      e,
      task,
      scriptedPolicy<WikiTask>("p", () => ({ answer: `<answer>${task.groundTruth[0]}</answer>` })),
    );
    expect(r.reward).toBe(1);
    expect((await createWikipediaEnv({ rewardWeights: { f1: 1 } })).capabilities?.reward?.weights).toEqual({ f1: 1 });
    await expect(createWikipediaEnv({ rewardWeights: "bleu=1" })).rejects.toThrow(/unknown component "bleu"/);
  });

  it("rejects bad options", async () => {
    await expect(createWikipediaEnv({ backend: "cloud" })).rejects.toThrow(/backend must be "offline" or "live"/);
    await expect(createWikipediaEnv({ concurrency: "lots" })).rejects.toThrow(/concurrency/);
    await expect(createWikipediaEnv({ corpus: "/nonexistent/corpus.jsonl" })).rejects.toThrow(/cannot read corpus/);
  });
});
