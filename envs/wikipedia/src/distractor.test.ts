import { join } from "node:path";
import { runMany, runRollout } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { loadWikiTasks, parseWikiTask } from "./dataset.js";
import { contextDocs, distractorBackend } from "./distractor.js";
import { createWikipediaEnv, OfflineBackend } from "./index.js";
import { fixturesDir } from "./paths.js";
import { supportingTitleRecall } from "./ranking.js";

const hf = join(fixturesDir, "hotpotqa-hf.jsonl");

describe("the Hugging Face HotpotQA layout", () => {
  it("loads every row, with the same tasks as the original layout", async () => {
    const hfTasks = await loadWikiTasks(hf);
    const original = await loadWikiTasks(join(fixturesDir, "hotpotqa.json"));
    expect(hfTasks.length).toBe(original.length);
    expect(hfTasks.length).toBeGreaterThanOrEqual(4);
    for (const [i, t] of hfTasks.entries()) {
      const o = original[i]!;
      expect(t.id).toBe(o.id);
      expect(t.prompt).toBe(o.prompt);
      expect(t.groundTruth).toEqual(o.groundTruth);
      expect(t.meta.shape).toBe("hotpotqa");
      expect(t.meta.layout).toBe("hf");
      expect(o.meta.layout).toBe("original");
      expect(t.meta.supportingTitles).toEqual(o.meta.supportingTitles);
      expect(t.meta.context).toEqual(o.meta.context);
    }
  });

  it("reads a row as the datasets library writes it", () => {
    const t = parseWikiTask({
      id: "5a8b57f25542995d1e6f1371",
      question: "Were Scott Derrickson and Ed Wood of the same nationality?",
      answer: "yes",
      type: "comparison",
      level: "hard",
      supporting_facts: { title: ["Scott Derrickson", "Ed Wood"], sent_id: [0, 0] },
      context: {
        title: ["Ed Wood", "Scott Derrickson"],
        sentences: [
          ["Edward Davis Wood Jr. was an American filmmaker."],
          ["Scott Derrickson is an American director."],
        ],
      },
    });
    expect(t).toMatchObject({ id: "5a8b57f25542995d1e6f1371", groundTruth: ["yes"] });
    expect(t.meta.supportingTitles).toEqual(["Scott Derrickson", "Ed Wood"]);
    expect(t.meta.context?.[1]).toEqual({
      title: "Scott Derrickson",
      sentences: ["Scott Derrickson is an American director."],
    });
  });

  it("names the field when the column-wise lists disagree in length", () => {
    expect(() =>
      parseWikiTask(
        { id: "x", question: "q", answer: "a", context: { title: ["A", "B"], sentences: [["s"]] } },
        "dev.jsonl:7",
      ),
    ).toThrow(/dev\.jsonl:7.*context/);
  });
});

describe("the distractor setting", () => {
  it("searches only the task's own paragraphs", async () => {
    const [task] = await loadWikiTasks(hf, { limit: 1 });
    const backend = distractorBackend(task!);
    expect(backend.size).toBe(task!.meta.context!.length);
    const hits = await backend.search(task!.prompt, 20);
    const own = new Set(task!.meta.context!.map((p) => p.title));
    expect(hits.length).toBeGreaterThan(0);
    expect(hits.every((h) => own.has(h.title))).toBe(true);
    const article = await backend.getArticle(task!.meta.context![0]!.title);
    expect(article?.text).toBe(contextDocs(task!.meta.context!)[0]!.text);
  });

  it("an env in the distractor setting loads no corpus and solves the fixtures with the reference policy", async () => {
    const env = await createWikipediaEnv({ setting: "distractor", corpus: "/nonexistent/corpus.jsonl" });
    const tasks = await loadWikiTasks(hf);
    const { results } = await runMany(env, tasks, env.capabilities!.reference!.referencePolicy(), { concurrency: 4 });
    expect(results.map((r) => r.outcome)).toEqual(tasks.map(() => "completed"));
    expect(results.every((r) => r.reward === 1)).toBe(true);
    expect(results[0]!.metadata).toMatchObject({ backend: "distractor" });
    // an article outside the task's paragraphs is not there
    const r = await runRollout(env, tasks[0]!, {
      name: "probe",
      act: async ({ turn }) =>
        turn === 0
          ? {
              message: {
                role: "assistant",
                content:
                  '<tool_call>\n{"name": "get_wikipedia_article", "arguments": {"title": "Nowhere Island"}}\n</tool_call>',
              },
            }
          : { message: { role: "assistant", content: "<answer>x</answer>" } },
    });
    expect(JSON.stringify(r.messages)).toContain('No article titled \\"Nowhere Island\\"');
    await env.close();
  });

  it("a task without context paragraphs ends env_error, never reward 0", async () => {
    const env = await createWikipediaEnv({ setting: "distractor" });
    const task = parseWikiTask({ Question: "Who?", Answer: "Nobody" });
    const r = await runRollout(env, task, env.capabilities!.reference!.referencePolicy());
    expect(r.outcome).toBe("env_error");
    expect(r.reward).toBeUndefined();
    expect(r.error).toContain("no context paragraphs");
  });

  it("refuses an unknown setting", async () => {
    await expect(createWikipediaEnv({ setting: "distracter" })).rejects.toThrow(/setting must be/);
  });
});

describe("supporting-title recall", () => {
  it("counts titles and complete tasks in the top k", async () => {
    const tasks = await loadWikiTasks(hf);
    const corpus = new OfflineBackend(
      tasks
        .flatMap((t) => contextDocs(t.meta.context!))
        .filter((d, i, all) => all.findIndex((x) => x.title === d.title) === i),
    );
    const report = await supportingTitleRecall(tasks, () => corpus, [1, 5, 10]);
    expect(report.tasks).toBe(tasks.length);
    expect(report.titles).toBe(tasks.reduce((n, t) => n + new Set(t.meta.supportingTitles).size, 0));
    const [at1, at5, at10] = report.recall;
    expect(at1!.titlesFound).toBeLessThanOrEqual(at5!.titlesFound);
    expect(at5!.titlesFound).toBeLessThanOrEqual(at10!.titlesFound);
    expect(at10!.titlesFound).toBeLessThanOrEqual(report.titles);
    // in the distractor setting every supporting paragraph is among the task's ten
    const distractor = await supportingTitleRecall(tasks, distractorBackend, [10]);
    expect(distractor.recall[0]!.titlesFound).toBe(distractor.titles);
  });
});

describe("the reference policy", () => {
  it("declares itself an oracle (it knows the answers)", async () => {
    const { wikiReferencePolicy } = await import("./reference-policy.js");
    expect(wikiReferencePolicy().oracle).toBe(true);
  });
});

describe("typed env options", () => {
  it("an unknown option name fails and suggests the right one", async () => {
    const mod = (await import("./index.js")).default;
    await expect(async () => mod.createEnv({ datset: "x" } as never)).rejects.toThrow(
      /unknown option datset; did you mean dataset\?/,
    );
    await expect(async () => mod.createEnv({ setting: "distracter" } as never)).rejects.toThrow(/setting/);
    const env = await mod.createEnv({ setting: "distractor" });
    expect(env.name).toBe("wikipedia");
    await env.close();
  });
});
