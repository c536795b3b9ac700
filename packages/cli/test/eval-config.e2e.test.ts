import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cli, cliAsync, fakeOpenAI, tmp } from "./harness.js";

let a: Awaited<ReturnType<typeof fakeOpenAI>>;
let b: Awaited<ReturnType<typeof fakeOpenAI>>;
let broken: Awaited<ReturnType<typeof fakeOpenAI>>;
beforeAll(async () => {
  a = await fakeOpenAI("\\boxed{17}");
  b = await fakeOpenAI("\\boxed{17}");
  broken = await fakeOpenAI("", { status: 400 });
});
afterAll(async () => {
  await Promise.all([a, b, broken].map((m) => new Promise<void>((r) => m.server.close(() => r()))));
});

describe("eval --config (issue 38)", () => {
  it("runs a two-env, two-model TOML file: four run dirs as single evals make them, one table", async () => {
    const dir = tmp();
    const file = join(dir, "sweep.toml");
    writeFileSync(
      file,
      `# two envs × two models
n = 2
max_turns = 3

[endpoints.model-a]
model = "model-a"
base_url = "${a.url}"

[endpoints.model-b]
model = "model-b"
base_url = "${b.url}"
api_key_env = "BMX_TEST_KEY_B"

[[eval]]
env = ["math", "crm"]
endpoint = ["model-a", "model-b"]
`,
    );
    const out = join(dir, "runs");
    const r = await cliAsync(["eval", "--config", file, "--out", out], { env: { BMX_TEST_KEY_B: "sk-test-b" } });
    expect(r.code).toBe(0);
    expect(readdirSync(out).sort()).toEqual(["crm-model-a", "crm-model-b", "math-model-a", "math-model-b"]);
    for (const d of readdirSync(out)) {
      const run = JSON.parse(readFileSync(join(out, d, "run.json"), "utf8"));
      const [env, ...model] = d.split("-");
      expect(run).toMatchObject({ env, tasks: 2, group: 1, completed: true });
      expect(run.config).toMatchObject({ model: model.join("-"), maxTurns: 3, toolFormat: "hermes" });
      expect(existsSync(join(out, d, "summary.json"))).toBe(true);
      expect(
        readFileSync(join(out, d, "results.jsonl"), "utf8")
          .trim()
          .split("\n"),
      ).toHaveLength(2);
    }
    // the key from api_key_env went to model-b's endpoint only
    expect(new Set(b.auth)).toEqual(new Set(["Bearer sk-test-b"]));
    expect(a.auth.every((h) => h !== "Bearer sk-test-b")).toBe(true);
    // one results table, a row per run, and every run dir
    expect(r.stdout.match(/│ (math|crm) +│ openai:model-[ab]/g)).toHaveLength(4);
    for (const d of ["math-model-a", "math-model-b", "crm-model-a", "crm-model-b"]) {
      expect(r.stdout).toContain(`run dir: ${join(out, d)}`);
    }
    // and the two models' runs of one env compare as the same protocol
    const cmp = cli(["compare", join(out, "math-model-a"), join(out, "math-model-b")]);
    expect(cmp.stdout).toContain("model vs model: baseline openai:model-a, candidate openai:model-b");
    expect(cmp.code).toBe(0);
  });

  it("applies the gate to each run, naming the one whose every rollout failed", async () => {
    const dir = tmp();
    const file = join(dir, "gate.json");
    writeFileSync(
      file,
      JSON.stringify({
        endpoints: { ok: { model: "ok", base_url: a.url }, down: { model: "down", base_url: broken.url } },
        eval: [{ env: "math", endpoint: ["ok", "down"], n: 1, retries: 0 }],
      }),
    );
    const out = join(dir, "runs");
    const r = await cliAsync(["eval", "--config", file, "--out", out, "--quiet"]);
    expect(r.code).toBe(1);
    expect(readdirSync(out).sort()).toEqual(["math-down", "math-ok"]);
    expect(r.stderr).toContain(
      `benchmax: every rollout of math (openai:down, ${join(out, "math-down")}) failed with infra_error`,
    );
    expect(r.stderr).not.toContain("openai:ok");
  });

  it("gives each setting to the run as its flag would: run.json and the requests carry them", async () => {
    const c = await fakeOpenAI("\\boxed{17}");
    try {
      const dir = tmp();
      const file = join(dir, "settings.json");
      writeFileSync(
        file,
        JSON.stringify({
          group: 2,
          eval: [
            {
              env: "math",
              model: "m",
              base_url: c.url,
              n: 1,
              max_turns: 2,
              concurrency: 1,
              retries: 0,
              temperature: 0.5,
              top_p: 0.9,
              max_tokens: 64,
              seed: 7,
              sampling_args: { top_k: 20 },
              timeout: 30,
            },
          ],
        }),
      );
      const out = join(dir, "runs");
      const r = await cliAsync(["eval", "--config", file, "--out", out, "--quiet"]);
      expect(r.code).toBe(0);
      const run = JSON.parse(readFileSync(join(out, "math-m", "run.json"), "utf8"));
      expect(run).toMatchObject({ tasks: 1, group: 2, expectedRollouts: 2 });
      expect(run.config).toMatchObject({
        maxTurns: 2,
        limit: 1,
        temperature: 0.5,
        topP: 0.9,
        maxTokens: 64,
        seed: 7,
        samplingArgs: { top_k: 20 },
      });
      expect(c.bodies.length).toBeGreaterThan(0);
      for (const b of c.bodies) {
        expect(b).toMatchObject({ model: "m", temperature: 0.5, top_p: 0.9, max_tokens: 64, seed: 7, top_k: 20 });
      }
    } finally {
      await new Promise<void>((r) => c.server.close(() => r()));
    }
  });

  it("refuses a bad file before running anything, naming the line and key", () => {
    const dir = tmp();
    const file = join(dir, "bad.toml");
    writeFileSync(file, `[[eval]]\nenv = "math"\nendpoint = "nowhere"\nmax_turn = 3\n`);
    const out = join(dir, "runs");
    const r = cli(["eval", "--config", file, "--out", out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${file}:4: eval[0].max_turn: unknown key (known: env, endpoint, model,`);
    expect(existsSync(out)).toBe(false);
    const both = cli(["eval", "math", "--config", file]);
    expect(both.stderr).toMatch(/give an env or --config, not both/);
  });
});
