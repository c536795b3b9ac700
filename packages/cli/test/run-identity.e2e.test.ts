import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, fakeOpenAI, openaiEvalArgs, tmp } from "./harness.js";

/** An OpenAI-compatible endpoint on 127.0.0.1 that keeps every request body it gets. */
let model: Awaited<ReturnType<typeof fakeOpenAI>>;
let url = "";
let bodies: Array<Record<string, unknown>> = [];
beforeAll(async () => {
  model = await fakeOpenAI("\\boxed{4}");
  url = model.url;
  bodies = model.bodies;
});
afterAll(() => new Promise<void>((r) => model.server.close(() => r())));

const evalArgs = (out: string, ...extra: string[]) => openaiEvalArgs({ url, out, limit: 2 }, ...extra);

describe("run identity (issue 24)", () => {
  it("records model, endpoint, sampling, seed, tool format and extra sampling args, and sends them", async () => {
    const out = tmp();
    const r = await cliAsync(
      evalArgs(
        out,
        "--model",
        "model-a",
        "--temperature",
        "0.2",
        "--top-p",
        "0.9",
        "--max-tokens",
        "64",
        "--seed",
        "7",
        "--sampling-args",
        '{"top_k":20,"min_p":0.05}',
      ),
    );
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const run = JSON.parse(readFileSync(join(out, "run.json"), "utf8"));
    expect(run.config).toMatchObject({
      model: "model-a",
      baseUrl: url,
      temperature: 0.2,
      topP: 0.9,
      maxTokens: 64,
      seed: 7,
      toolFormat: "hermes",
      samplingArgs: { top_k: 20, min_p: 0.05 },
    });
    expect(bodies.at(-1)).toMatchObject({
      model: "model-a",
      temperature: 0.2,
      top_p: 0.9,
      max_tokens: 64,
      seed: 7,
      top_k: 20,
      min_p: 0.05,
    });
  });

  it("compare refuses config drift first, names both runs in order and both policies, unless allowed", async () => {
    const base = tmp();
    const cand = tmp();
    expect((await cliAsync(evalArgs(base, "--model", "model-a", "--temperature", "0"))).code).toBe(0);
    expect(
      (await cliAsync(evalArgs(cand, "--model", "model-b", "--temperature", "1.5", "--max-tokens", "5"))).code,
    ).toBe(0);
    const r = cli(["compare", base, cand]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/not comparable: different config: .*maxTokens null → 5/);
    // the model is what is evaluated, not how: compare names both sides and never calls it drift
    expect(r.stdout).not.toMatch(/model "model-a" → "model-b"/);
    expect(r.stdout).toContain("model vs model: baseline openai:model-a, candidate openai:model-b (different model)\n");
    expect(r.stdout).toMatch(/temperature 0 → 1\.5/);
    // the reason before any table, and no REGRESSION verdicts on runs that were not compared
    expect(r.stdout.indexOf("not comparable")).toBeLessThan(r.stdout.indexOf("metric"));
    expect(r.stdout).not.toMatch(/REGRESSION/);
    expect(r.stdout).toContain(`gate failed: baseline ${base} and candidate ${cand} are different runs`);
    expect(r.stdout).toContain("--allow-different-config");
    expect(r.stdout).toMatch(/base: openai:model-a .* cand: openai:model-b/);
    expect(r.stdout).toContain(`candidate: ${cand} (openai:model-b, at ${url}, temperature 1.5, max_tokens 5`);
    const allowed = cli(["compare", base, cand, "--allow-different-config"]);
    expect(allowed.stdout).toMatch(/note: different config: .* \(allowed by --allow-different-config\)/);
    expect(allowed.code).toBe(0);
  });

  it("a resume with other sampling settings is a different run", async () => {
    const out = tmp();
    expect((await cliAsync(evalArgs(out, "--model", "model-a", "--seed", "1"))).code).toBe(0);
    const r = await cliAsync(evalArgs(out, "--model", "model-a", "--seed", "2", "--resume"));
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is a different run \(seed 1 → 2\)/);
  });

  it("--sampling-args takes a JSON object and leaves flag-owned fields to their flags", () => {
    const out = tmp();
    const bad = cli(evalArgs(out, "--model", "m", "--sampling-args", "[1]"));
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/--sampling-args must be a JSON object/);
    const owned = cli(evalArgs(out, "--model", "m", "--sampling-args", '{"temperature":1}'));
    expect(owned.code).toBe(1);
    expect(owned.stderr).toMatch(/"temperature" is set by --temperature/);
  });
});
