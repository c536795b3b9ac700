import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { lastToolResults, runRollout, scriptedPolicy } from "@benchmax/core";
import wikipedia from "@benchmax/env-wikipedia";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAi, startFakeOpenAi } from "./fake-openai.js";
import { generateQa } from "./qa-generate.js";

const fixtures = fileURLToPath(new URL("../fixtures/", import.meta.url));

let fake: FakeOpenAi;
beforeAll(async () => {
  fake = await startFakeOpenAi();
});
afterAll(() => fake.close());

/** Search with the question, read the top hit, answer from what was read (the gold answer if the article holds it). */
const searchThenAnswer = scriptedPolicy<{ id: string; prompt?: string; groundTruth: string[] }>(
  "search-then-answer",
  ({ task, turn, messages }) => {
    if (turn === 0) return { calls: [{ name: "search_wikipedia", arguments: { query: task.prompt!, limit: 3 } }] };
    if (turn === 1) {
      const top = lastToolResults(messages)[0]!.match(/^1\. (.+)$/m)![1]!;
      return { calls: [{ name: "get_wikipedia_article", arguments: { title: top } }] };
    }
    const article = lastToolResults(messages)[0]!;
    const answer = task.groundTruth.find((a) => article.includes(a)) ?? "unknown";
    return { answer: `<answer>${answer}</answer>` };
  },
);

describe("generated QA rows in the wikipedia env's offline backend", () => {
  for (const corpus of ["corpus.jsonl", "corpus-dir"]) {
    it(`load and are answerable by search over the same corpus (${corpus})`, async () => {
      const out = join(mkdtempSync(join(tmpdir(), "benchmax-qa-wiki-")), "qa.jsonl");
      const stats = await generateQa({
        corpus: join(fixtures, corpus),
        out,
        n: 5,
        model: "fake",
        baseURL: fake.baseURL,
        apiKey: "k",
        maxRetries: 0,
        chunking: { maxChars: 250, minChars: 50 },
      });
      expect(stats.accepted).toBeGreaterThan(0);
      const env = await wikipedia.createEnv({ corpus: join(fixtures, corpus) });
      const tasks = await env.capabilities!.tasks!.loadTasks!(out);
      expect(tasks).toHaveLength(stats.accepted);
      let solved = 0;
      for (const task of tasks) {
        const r = await runRollout(env, task, searchThenAnswer);
        expect(r.outcome).toBe("completed");
        if (r.reward === 1) solved++;
      }
      // the question's source document is found by BM25 search over the corpus it was generated from
      expect(solved / tasks.length).toBeGreaterThanOrEqual(0.8);
      await env.close();
    });
  }
});
