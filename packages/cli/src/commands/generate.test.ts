import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { type FakeOpenAi, startFakeOpenAi } from "@benchmax/datagen/testing";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { main } from "../index.js";

const datagen = resolve(fileURLToPath(new URL("../../../datagen/fixtures", import.meta.url)));
const tmp = () => mkdtempSync(join(tmpdir(), "bmx-generate-"));

function capture() {
  const out: string[] = [];
  const err: string[] = [];
  vi.spyOn(process.stdout, "write").mockImplementation((s) => {
    out.push(String(s));
    return true;
  });
  vi.spyOn(process.stderr, "write").mockImplementation((s) => {
    err.push(String(s));
    return true;
  });
  return { out: () => out.join(""), err: () => err.join("") };
}

async function run(args: string[]) {
  process.exitCode = undefined;
  const io = capture();
  const code = await main(["node", "benchmax", ...args]);
  vi.restoreAllMocks();
  process.exitCode = undefined;
  return { code, stdout: io.out(), stderr: io.err() };
}

/** The argv of `generate qa`: `n` rows from `corpus` into `out`, then `flags`. */
const qaArgs = (corpus: string, n: number, out: string, ...flags: string[]) => [
  "generate",
  "qa",
  "--corpus",
  corpus,
  "--n",
  String(n),
  "--out",
  out,
  ...flags,
];

let fake: FakeOpenAi;
beforeAll(async () => {
  fake = await startFakeOpenAi();
});
afterAll(() => fake.close());
afterEach(() => vi.restoreAllMocks());

describe("benchmax generate", () => {
  it("traces: writes rows and lists bad lines with line numbers (exit 1)", async () => {
    const dir = tmp();
    const out = join(dir, "data.jsonl");
    const r = await run([
      "generate",
      "traces",
      "--in",
      join(datagen, "traces.jsonl"),
      "--out",
      out,
      "--eval-fraction",
      "0.5",
    ]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/10 traces → \d train rows/);
    expect(r.stdout).toMatch(/eval rows in .*data\.eval\.jsonl/);
    expect(r.stderr).toContain("traces.jsonl:7: messages: must be an array of chat messages");
    expect(r.stderr).toContain("traces.jsonl:8: not valid JSON");
    const rows = [out, join(dir, "data.eval.jsonl")].flatMap((p) => readFileSync(p, "utf8").trim().split("\n"));
    expect(rows).toHaveLength(5);
  });

  it("traces: clean input exits 0", async () => {
    const dir = tmp();
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(dir, "t.jsonl"), `${JSON.stringify({ input: "q", output: "a" })}\n`);
    const r = await run(["generate", "traces", "--in", join(dir, "t.jsonl"), "--out", join(dir, "o.jsonl")]);
    expect(r.code).toBe(0);
    expect(JSON.parse(readFileSync(join(dir, "o.jsonl"), "utf8"))).toMatchObject({ prompt: "q", ground_truth: "a" });
  });

  it("qa: generates against an OpenAI-compatible endpoint and resumes", async () => {
    const out = join(tmp(), "qa.jsonl");
    const flags = ["--model", "fake", "--base-url", fake.baseURL, "--api-key", "k", "--chunk-chars", "250"];
    const r = await run(qaArgs(join(datagen, "corpus.jsonl"), 3, out, ...flags));
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/3 rows \(3 new, 0 resumed\)/);
    expect(r.stdout).toMatch(/ungrounded/);
    const r2 = await run(qaArgs(join(datagen, "corpus.jsonl"), 5, out, ...flags));
    expect(r2.stdout).toMatch(/5 rows \(2 new, 3 resumed\)/);
    expect(readFileSync(out, "utf8").trim().split("\n")).toHaveLength(5);
  });

  it("qa: a bad corpus or a missing model is one clear line", async () => {
    const r = await run(qaArgs("/no/such", 1, join(tmp(), "x.jsonl"), "--model", "m"));
    expect(r.code).toBe(1);
    const r2 = await run(qaArgs(join(datagen, "corpus.jsonl"), 1, join(tmp(), "x.jsonl")));
    expect(r2.code).toBe(1);
  });
});
