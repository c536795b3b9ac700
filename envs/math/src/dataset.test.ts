import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatasetError } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectRowKind, loadMathTasks, parseMathRow, stableHash } from "./dataset.js";

function datasetError(fn: () => unknown): DatasetError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(DatasetError);
    return e as DatasetError;
  }
  throw new Error("expected a DatasetError");
}

describe("parseMathRow", () => {
  it("reads arithmetic rows {task, answer}", () => {
    const t = parseMathRow({ task: "12 + 8 × 3", answer: "36" });
    expect(t.prompt).toBe("12 + 8 × 3");
    expect(t.groundTruth).toEqual({ kind: "arithmetic", value: 36, text: "36" });
    expect(t.id).toMatch(/^arith-[0-9a-f]{16}$/);
    expect(parseMathRow({ task: "12 + 8 × 3", answer: "36" }).id).toBe(t.id); // stable
    expect(parseMathRow({ task: "7 ÷ 2", answer: 3.5 }).groundTruth).toMatchObject({ value: 3.5 });
    expect(parseMathRow({ id: 7, task: "1+1", answer: "2" }).id).toBe("7");
  });

  it("reads MATH rows: the gold is the official last \\boxed{} of the solution", () => {
    const t = parseMathRow({
      problem: "Simplify $\\frac{18}{24}$.",
      level: "Level 1",
      type: "Prealgebra",
      solution: "We get $\\boxed{\\frac{2}{3}}$... no: $\\frac{18}{24} = \\boxed{\\frac{3}{4}}$.",
    });
    expect(t.groundTruth).toEqual({ kind: "math", answer: "\\frac{3}{4}" });
    expect(t.prompt).toBe("Simplify $\\frac{18}{24}$.");
    expect(t.meta).toEqual({ dataset: "math", level: "Level 1", type: "Prealgebra" });
    expect(t.id).toMatch(/^math-[0-9a-f]{16}$/);
  });

  it("reads MATH-500 style rows", () => {
    const t = parseMathRow({
      problem: "What is $1+1$?",
      solution: "$1 + 1 = \\boxed{2}$",
      answer: "2",
      subject: "Algebra",
      level: 1,
      unique_id: "test/algebra/1.json",
    });
    expect(t.id).toBe("test/algebra/1.json");
    expect(t.groundTruth).toEqual({ kind: "math", answer: "2" });
    expect(t.meta).toMatchObject({ level: 1, type: "Algebra" });
    expect(parseMathRow({ problem: "p", answer: "\\frac12" }).groundTruth).toEqual({
      kind: "math",
      answer: "\\frac12",
    });
  });

  it("reads plain rows", () => {
    expect(parseMathRow({ prompt: "2+2?", ground_truth: 4 }).groundTruth).toEqual({
      kind: "arithmetic",
      value: 4,
      text: "4",
    });
    expect(parseMathRow({ prompt: "half?", ground_truth: "\\boxed{\\frac12}" }).groundTruth).toEqual({
      kind: "math",
      answer: "\\frac12",
    });
    const m = parseMathRow({ id: "q1", messages: [{ role: "user", content: "x?" }], ground_truth: "x^2" });
    expect(m.id).toBe("q1");
    expect(m.messages).toHaveLength(1);
    expect(m.groundTruth).toEqual({ kind: "math", answer: "x^2" });
  });

  it("detects shapes", () => {
    expect(detectRowKind({ task: "1", answer: "1" })).toBe("arithmetic");
    expect(detectRowKind({ problem: "p", solution: "s" })).toBe("math");
    expect(detectRowKind({ prompt: "p", ground_truth: "g" })).toBe("plain");
  });

  it.each([
    [{ task: "1+1" }, "answer", /answer/],
    [{ task: "", answer: "2" }, "task", /task/],
    [{ task: "1+1", answer: "two" }, "answer", /not a number: "two"/],
    [{ task: 5, answer: "2" }, "task", /task/],
    [{ problem: "p", level: "Level 1", type: "Algebra" }, "solution", /solution/],
    [{ problem: "p", level: "Level 1", type: "Algebra", solution: "no box" }, "solution", /no \\boxed\{…\} answer/],
    [{ problem: "p", solution: "\\fbox{3}" }, "solution", /no \\boxed/],
    [{ solution: "\\boxed{3}" }, "problem", /problem/],
    [{ problem: "p", level: [1], solution: "\\boxed{3}" }, "level", /level/],
    [{ prompt: "p", ground_truth: { a: 1 } }, "ground_truth", /number or a non-empty string/],
    [{ prompt: "p" }, "ground_truth", /ground_truth/],
    [{ question: "q" }, "(row)", /unrecognised row/],
  ])("names the field of a bad row %j", (row, field, message) => {
    const e = datasetError(() => parseMathRow(row, "data.jsonl:3"));
    expect(e.field).toBe(field);
    expect(e.where).toBe("data.jsonl:3");
    expect(e.message).toMatch(message);
    expect(e.message).toContain("data.jsonl:3");
  });

  it("rejects rows that are not objects", () => {
    expect(datasetError(() => parseMathRow([1, 2], "f:1")).message).toMatch(/must be a JSON object, got an array/);
    expect(datasetError(() => parseMathRow("x", "f:2")).message).toMatch(/got string/);
  });
});

describe("loadMathTasks", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "math-env-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("loads both fixture files by default, one with a subset / split", async () => {
    const all = await loadMathTasks(undefined);
    const arith = all.filter((t) => t.groundTruth.kind === "arithmetic");
    const math = all.filter((t) => t.groundTruth.kind === "math");
    expect(arith.length).toBeGreaterThanOrEqual(50);
    expect(math.length).toBeGreaterThanOrEqual(30);
    expect(arith[0]!.id).toBe("arith-1");
    expect(math[0]!.id).toBe("math-1");
    expect(new Set(math.map((t) => t.meta?.type)).size).toBe(7);
    expect(new Set(math.map((t) => t.meta?.level)).size).toBeGreaterThanOrEqual(5);
    expect((await loadMathTasks(undefined, { subset: "math" })).length).toBe(math.length);
    expect((await loadMathTasks(undefined, { split: "arithmetic" })).length).toBe(arith.length);
    expect((await loadMathTasks(undefined, { limit: 3 })).map((t) => t.id)).toEqual(["arith-1", "arith-2", "arith-3"]);
    await expect(loadMathTasks(undefined, { split: "train" })).rejects.toThrow(/split must be/);
  });

  it("loads a user's JSONL and JSON files", async () => {
    const jsonl = join(dir, "mixed.jsonl");
    await writeFile(
      jsonl,
      [
        JSON.stringify({ task: "2 × 3", answer: "6" }),
        "",
        JSON.stringify({ problem: "p", level: "Level 2", type: "Algebra", solution: "\\boxed{4}" }),
        JSON.stringify({ prompt: "q", ground_truth: "7" }),
      ].join("\n"),
    );
    const tasks = await loadMathTasks(jsonl);
    expect(tasks.map((t) => t.id)).toEqual(["arith-1", "math-2", "row-3"]);
    expect((await loadMathTasks(jsonl, { split: "math" })).map((t) => t.id)).toEqual(["math-2"]);
    expect((await loadMathTasks(jsonl, { subset: "arithmetic" })).map((t) => t.id)).toEqual(["arith-1", "row-3"]);
    const json = join(dir, "rows.json");
    await writeFile(
      json,
      JSON.stringify([
        { task: "1+1", answer: 2 },
        { task: "1+2", answer: 3 },
      ]),
    );
    expect((await loadMathTasks(json)).map((t) => t.groundTruth)).toEqual([
      { kind: "arithmetic", value: 2, text: "2" },
      { kind: "arithmetic", value: 3, text: "3" },
    ]);
  });

  it("loads a folder laid out like the MATH release", async () => {
    const root = join(dir, "MATH", "test");
    await mkdir(join(root, "algebra"), { recursive: true });
    await mkdir(join(root, "geometry"), { recursive: true });
    const row = (a: string) =>
      JSON.stringify({ problem: `p${a}`, level: "Level 1", type: "Algebra", solution: `\\boxed{${a}}` });
    await writeFile(join(root, "algebra", "1.json"), row("1"));
    await writeFile(join(root, "geometry", "7.json"), row("7"));
    const tasks = await loadMathTasks(root);
    expect(tasks.map((t) => t.id)).toEqual(["algebra/1.json", "geometry/7.json"]);
  });

  it("names file, line and field of a bad row", async () => {
    const bad = join(dir, "bad.jsonl");
    await writeFile(bad, `${JSON.stringify({ task: "1", answer: "1" })}\n${JSON.stringify({ task: "2" })}\n`);
    await expect(loadMathTasks(bad)).rejects.toThrow(/bad\.jsonl:2: answer: /);
    const broken = join(dir, "broken.jsonl");
    await writeFile(broken, '{"task": "1", "answer": "1"}\n{"task": \n');
    await expect(loadMathTasks(broken)).rejects.toThrow(/broken\.jsonl:2: malformed JSON line/);
    await expect(loadMathTasks(join(dir, "missing.jsonl"))).rejects.toThrow(/cannot read dataset \(ENOENT\)/);
    const dup = join(dir, "dup.jsonl");
    await writeFile(
      dup,
      `${JSON.stringify({ id: "a", task: "1", answer: "1" })}\n${JSON.stringify({ id: "a", task: "2", answer: "2" })}\n`,
    );
    await expect(loadMathTasks(dup)).rejects.toThrow(/duplicate task id "a"/);
  });
});

describe("PRM800K rows", () => {
  const file = new URL("../fixtures/prm800k.jsonl", import.meta.url).pathname;

  it("loads one task per distinct problem, gold from question.ground_truth_answer", async () => {
    const tasks = await loadMathTasks(file);
    expect(tasks).toHaveLength(2);
    expect(tasks[0]!.groundTruth).toEqual({ kind: "math", answer: "28,\\!800" });
    expect(tasks[0]!.id).toMatch(/^prm800k-[0-9a-f]{16}$/);
    expect(tasks[0]!.meta).toEqual({ dataset: "prm800k" });
    expect(tasks[1]!.groundTruth).toEqual({ kind: "math", answer: "\\frac{7}{8}" });
  });

  it("falls back to the \\boxed{} of ground_truth_solution, and names the field when neither is there", () => {
    const t = parseMathRow({ question: { problem: "p", ground_truth_solution: "so $\\boxed{5}$" }, label: {} });
    expect(t.groundTruth).toEqual({ kind: "math", answer: "5" });
    const e = datasetError(() => parseMathRow({ question: { problem: "p" }, label: {} }, "f.jsonl:3"));
    expect(e.message).toContain("f.jsonl:3");
    expect(e.message).toContain("ground_truth_answer");
  });

  it("refuses two rows of one problem with different gold answers", async () => {
    const dir = await mkdtemp(join(tmpdir(), "prm-"));
    const a = { question: { problem: "same", ground_truth_answer: "1" }, label: {} };
    const b = { question: { problem: "same", ground_truth_answer: "2" }, label: {} };
    await writeFile(join(dir, "x.jsonl"), `${JSON.stringify(a)}\n${JSON.stringify(b)}\n`);
    await expect(loadMathTasks(join(dir, "x.jsonl"))).rejects.toThrow(/x\.jsonl:2.*ground_truth_answer/);
    await rm(dir, { recursive: true, force: true });
  });
});

describe("the reference policy", () => {
  it("declares itself an oracle (it reads the gold answer)", async () => {
    const { mathReferencePolicy } = await import("./reference-policy.js");
    expect(mathReferencePolicy().oracle).toBe(true);
  });
});

describe("typed env options", () => {
  it("an unknown option name fails and suggests the right one", async () => {
    const mod = (await import("./index.js")).default;
    expect(() => mod.createEnv({ subst: "math" } as never)).toThrow(/unknown option subst; did you mean subset\?/);
    const env = mod.createEnv({ subset: "arithmetic" });
    expect((await env.capabilities!.tasks!.loadTasks!()).every((t) => t.groundTruth.kind === "arithmetic")).toBe(true);
  });
});

describe("derived ids (issue 27)", () => {
  it("100,000 distinct arithmetic rows without ids get 100,000 distinct ids (64-bit content hashes)", () => {
    const ids = new Set<string>();
    for (let i = 0; i < 100_000; i++) ids.add(`arith-${stableHash(`add\u0000${i} + ${i * 7 + 3} = ?`)}`);
    expect(ids.size).toBe(100_000);
    expect(stableHash("x")).toBe(stableHash("x"));
    expect(stableHash("x")).toMatch(/^[0-9a-f]{16}$/);
  });
});
