import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatasetError } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { detectShape, FIXTURE_FILES, loadWikiTasks, parseWikiTask } from "./dataset.js";
import { fixturesDir, packageRoot } from "./paths.js";

function err(fn: () => unknown): DatasetError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DatasetError);
    return e as DatasetError;
  }
  throw new Error("expected a DatasetError");
}

describe("dataset rows", () => {
  it("parses the real shapes unchanged", () => {
    const hotpot = parseWikiTask({
      _id: "5a8b57f25542995d1e6f1371",
      answer: "yes",
      question: "Were Scott Derrickson and Ed Wood of the same nationality?",
      supporting_facts: [
        ["Scott Derrickson", 0],
        ["Ed Wood", 0],
      ],
      context: [["Ed Wood", ["Edward Davis Wood Jr. was an American filmmaker."]]],
      type: "comparison",
      level: "hard",
    });
    expect(hotpot).toMatchObject({
      id: "5a8b57f25542995d1e6f1371",
      groundTruth: ["yes"],
      meta: { shape: "hotpotqa", level: "hard" },
    });
    expect(hotpot.meta.supportingTitles).toEqual(["Scott Derrickson", "Ed Wood"]);
    const musique = parseWikiTask({
      id: "2hop__1_2",
      question: "q",
      answer: "a",
      answer_aliases: ["b", "a"],
      answerable: true,
      paragraphs: [],
    });
    expect(musique.groundTruth).toEqual(["a", "b"]);
    expect(parseWikiTask({ Question: "q?", Answer: "x" }).id).toMatch(/^bamboogle-[0-9a-f]{8}$/);
    expect(parseWikiTask({ id: 7, question: "q", golden_answers: ["x", "y"], metadata: { hops: 2 } })).toMatchObject({
      id: "7",
      groundTruth: ["x", "y"],
      meta: { shape: "flashrag", hops: 2 },
    });
    expect(parseWikiTask({ _id: "a", question: "q", answer: "x", evidences: [["a", "b", "c"]] }).meta.shape).toBe(
      "2wikimultihopqa",
    );
    expect(parseWikiTask({ prompt: "q", ground_truth: "x" }, "f.jsonl:3")).toMatchObject({
      id: "f.jsonl:3",
      groundTruth: ["x"],
    });
    expect(parseWikiTask({ messages: [{ role: "user", content: "q?" }], ground_truth: ["x", 2] }).groundTruth).toEqual([
      "x",
      "2",
    ]);
  });

  it("names the file:line and field of a bad row", () => {
    expect(err(() => parseWikiTask({ _id: "a", question: "q" }, "dev.json[4]"))).toMatchObject({
      where: "dev.json[4]",
      field: "answer",
    });
    expect(
      err(() => parseWikiTask({ _id: "a", question: "q", answer: "x", supporting_facts: [["t", "zero"]] }, "d:1"))
        .field,
    ).toBe("supporting_facts.0.1");
    expect(err(() => parseWikiTask({ id: "x", question: "q", golden_answers: [] }, "r.jsonl:2")).message).toMatch(
      /r\.jsonl:2: golden_answers/,
    );
    expect(err(() => parseWikiTask({ Question: "q" }, "b.jsonl:9")).field).toBe("Answer");
    expect(err(() => parseWikiTask({ prompt: "q", ground_truth: [{ a: 1 }] }, "p:1")).field).toBe("ground_truth.0");
    expect(err(() => parseWikiTask({ foo: 1 }, "x.jsonl:5")).message).toMatch(/x\.jsonl:5: \(row\): unrecognised row/);
    expect(detectShape(null)).toBeUndefined();
  });

  it("reports malformed JSON lines with file:line", async () => {
    const dir = await mkdtemp(join(tmpdir(), "wiki-ds-"));
    const f = join(dir, "bad.jsonl");
    await writeFile(f, `${JSON.stringify({ Question: "a", Answer: "b" })}\n{not json\n`);
    await expect(loadWikiTasks(f)).rejects.toThrow(`${f}:2`);
  });

  it("ships one fixture file per shape, each parsing to its own shape", async () => {
    for (const [shape, file] of Object.entries(FIXTURE_FILES)) {
      const tasks = await loadWikiTasks(undefined, { split: shape });
      expect(tasks.length, file).toBeGreaterThanOrEqual(4);
      expect(tasks.every((t) => t.meta.shape === shape)).toBe(true);
    }
  });

  it("the fixture generator is deterministic and reproduces the committed fixtures", async () => {
    const out = await mkdtemp(join(tmpdir(), "wiki-fx-"));
    const run = spawnSync(process.execPath, [join(packageRoot, "scripts/make-corpus.mjs"), "--out", out], {
      encoding: "utf8",
    });
    expect(run.status, run.stderr).toBe(0);
    for (const f of await readdir(out)) {
      expect(await readFile(join(out, f), "utf8"), f).toBe(await readFile(join(fixturesDir, f), "utf8"));
    }
  });
});

describe("HotpotQA in the Hugging Face layout without `id` (issue 27)", () => {
  it("accepts the rows and derives a stable id from their content", async () => {
    const text = readFileSync(join(fixturesDir, "hotpotqa-hf.jsonl"), "utf8");
    const rows = text
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const stripped = rows.map(({ id: _id, ...rest }) => rest);
    const a = stripped.map((r, i) => parseWikiTask(r, `rows.jsonl:${i + 1}`));
    const b = stripped.map((r, i) => parseWikiTask(structuredClone(r), `elsewhere.jsonl:${i + 7}`));
    expect(a.map((t) => t.id)).toEqual(b.map((t) => t.id));
    for (const t of a) expect(t.id).toMatch(/^hotpot-[0-9a-f]{16}$/);
    expect(new Set(a.map((t) => t.id)).size).toBe(a.length);
    expect(a[0]!.groundTruth).toEqual([rows[0]!.answer]);
    expect(a[0]!.meta).toMatchObject({ shape: "hotpotqa", layout: "hf" });
    // rows that have an id keep it
    expect(parseWikiTask(rows[0], "x").id).toBe(rows[0]!.id);
  });
});
