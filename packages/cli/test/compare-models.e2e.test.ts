import { readFileSync } from "node:fs";
import type { Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, fakeOpenAI, openaiEvalArgs, root, tmp } from "./harness.js";

/**
 * The root README's model-vs-model example (baseline model, then a new model at another endpoint, then `compare`),
 * run as written: its commands are read from the README, with the two endpoints pointed at fake OpenAI-compatible
 * servers on 127.0.0.1 and `runs/` at a temp folder.
 */

/** The shell commands of the README's fenced block that holds `benchmax compare`, continuation lines joined. */
function readmeCompareExample(): string[][] {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((m) => m[1]!)
    .find((b) => /benchmax compare /.test(b));
  if (!block) throw new Error("README.md has no ```sh block with `benchmax compare`");
  return block
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((l) => l.replace(/#.*$/, "").trim())
    .filter(Boolean)
    .map((l) => l.split(/\s+/));
}

// the answer a baseline model gives: right on several arithmetic fixtures (17), wrong on the rest
let candidateReply = "\\boxed{17}";
let a: { url: string; server: Server };
let b: { url: string; server: Server };
beforeAll(async () => {
  a = await fakeOpenAI(() => "\\boxed{17}");
  b = await fakeOpenAI(() => candidateReply);
});
afterAll(async () => {
  await Promise.all([a, b].map((m) => new Promise<void>((r) => m.server.close(() => r()))));
});

/** Run the README's example, endpoints and run dirs substituted; returns the compare result and the run dirs. */
async function runReadmeExample() {
  const commands = readmeCompareExample();
  expect(commands.map((c) => c.slice(0, 3).join(" "))).toEqual([
    "npx benchmax eval",
    "npx benchmax eval",
    "npx benchmax compare",
  ]);
  const runs = tmp();
  const urls = new Map<string, string>();
  const args = commands.map((c) =>
    c.slice(2).map((w) => {
      if (/^http:\/\/localhost:\d+\/v1$/.test(w)) {
        if (!urls.has(w)) urls.set(w, urls.size === 0 ? a.url : b.url);
        return urls.get(w)!;
      }
      return w.startsWith("runs/") ? join(runs, w.slice("runs/".length)) : w;
    }),
  );
  // two models at two endpoints, as the README has them
  expect(urls.size).toBe(2);
  for (const evalArgs of args.slice(0, 2)) {
    const r = await cliAsync([...evalArgs, "--quiet"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
  }
  return { compare: cli(args[2]!), runs };
}

describe("compare, model vs model (issue 38)", () => {
  it("the README's example passes a same-protocol comparison of two models, naming both", async () => {
    candidateReply = "\\boxed{17}";
    const { compare } = await runReadmeExample();
    expect(compare.stdout).not.toMatch(/not comparable/);
    expect(compare.stdout).toContain(
      "model vs model: baseline openai:Qwen/Qwen2.5-7B-Instruct, candidate openai:my-org/qwen-math-grpo (different model, base URL); same protocol",
    );
    expect(compare.stdout).toMatch(/base: openai:Qwen\/Qwen2\.5-7B-Instruct .* cand: openai:my-org\/qwen-math-grpo/);
    expect(compare.stdout).toContain(`candidate: `);
    expect(compare.stdout).toMatch(/no regression/);
    expect(compare.code).toBe(0);
  });

  it("the README's example flags the new model's regression with exit 1", async () => {
    candidateReply = "\\boxed{-1}";
    const { compare, runs } = await runReadmeExample();
    expect(compare.stdout).toMatch(/reward\.mean .*REGRESSION/);
    expect(compare.stdout).toContain(
      `regression: candidate ${join(runs, "qwen-math")} (openai:my-org/qwen-math-grpo) is worse than baseline ${join(runs, "baseline")} (openai:Qwen/Qwen2.5-7B-Instruct)`,
    );
    expect(compare.code).toBe(1);
  });

  it("still refuses protocol drift between two models, naming each differing field", async () => {
    candidateReply = "\\boxed{17}";
    const base = tmp();
    const cand = tmp();
    const evalArgs = (url: string, model: string, out: string, ...extra: string[]) =>
      openaiEvalArgs({ url, out, limit: 3, model }, ...extra);
    expect((await cliAsync(evalArgs(a.url, "model-a", base, "--checkpoint", "step-100"))).code).toBe(0);
    expect(
      (await cliAsync(evalArgs(b.url, "model-b", cand, "--temperature", "0.7", "--max-turns", "3", "--seed", "1")))
        .code,
    ).toBe(0);
    const r = cli(["compare", base, cand]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(
      /not comparable: different config: maxTurns 10 → 3, seed null → 1, temperature null → 0\.7\n/,
    );
    expect(r.stdout).not.toMatch(/not comparable: .*model/);
    expect(r.stdout).toContain(
      "model vs model: baseline openai:model-a, candidate openai:model-b (different model, base URL, checkpoint)\n",
    );
    expect(r.stdout).toContain(
      `baseline:  ${base} (openai:model-a, at ${a.url}, checkpoint step-100, tool format hermes`,
    );
    expect(r.stdout).toContain("pass --allow-different-config to compare them anyway");
  });
});
