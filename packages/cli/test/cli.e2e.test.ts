import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cli, cliArgv, lines, root, tmp } from "./harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const slowEnv = join(here, "fixtures/slow-env");
const customEnv = join(root, "examples/custom-env");

describe("benchmax CLI", () => {
  it("evals a local env by path and writes a run dir", () => {
    const out = tmp();
    const r = cli(["eval", customEnv, "--out", out]);
    expect(r.stderr).not.toMatch(/Error/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/capitals/);
    expect(r.stdout).toMatch(/100\.0%/);
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary).toMatchObject({ env: "capitals", policy: "reference", n: 5, passRate: 1, reward: { mean: 1 } });
    expect(summary.outcomes).toEqual({ completed: 5, truncated: 0, env_error: 0, infra_error: 0 });
    expect(Object.keys(summary)).toEqual(expect.arrayContaining(["components", "durationMs", "startedAt", "versions"]));
    const first = JSON.parse(lines(join(out, "results.jsonl"))[0]!);
    expect(Object.keys(first)).toEqual(
      expect.arrayContaining([
        "taskId",
        "rolloutId",
        "groupId",
        "outcome",
        "reward",
        "rewards",
        "turns",
        "toolCalls",
        "durationMs",
        "messages",
      ]),
    );
  });

  it("evals the math env by name with both tool formats, and compares real run dirs", () => {
    const a = tmp();
    const b = tmp();
    const r = cli(["eval", "math", "--out", a, "--group", "2"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/math/);
    const s = JSON.parse(readFileSync(join(a, "summary.json"), "utf8"));
    expect(s.outcomes.completed).toBe(s.n);
    expect(s.n).toBeGreaterThanOrEqual(160);
    expect(s.components.correct).toBe(1);
    expect(cli(["eval", "math", "--out", b, "--tool-format", "openai", "--limit", "20"]).code).toBe(0);
    const rows = lines(join(b, "results.jsonl")).map((l) => JSON.parse(l));
    expect(rows[0].messages.some((m: { tool_calls?: unknown[] }) => Array.isArray(m.tool_calls))).toBe(true);
    // a --limit 20 run with another tool format and group size is not the baseline's run: the gate refuses it
    const refused = cli(["compare", a, b]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toMatch(/not comparable: different rollout count: baseline \d+ .*--limit 20/);
    expect(refused.stdout).toMatch(/not comparable: different config: .*toolFormat "hermes" → "openai"/);
    const cmp = cli(["compare", a, b, "--allow-partial", "--allow-different-dataset", "--allow-different-config"]);
    expect(cmp.code).toBe(0);
    expect(cmp.stdout).toMatch(/component\.correct/);
    const info = cli(["info", "math"]);
    expect(info.code).toBe(0);
    expect(info.stdout).toMatch(/calculator/);
    const list = cli(["list", "--json"]);
    expect(JSON.parse(list.stdout).map((e: { name: string }) => e.name)).toContain("math");
  });

  it("scores math completions as the official MATH evaluation does", () => {
    const cases = join(tmp(), "cases.jsonl");
    const row = {
      problem: "Compute 1/2.",
      level: "Level 1",
      type: "Algebra",
      solution: "It is $\\boxed{\\frac{1}{2}}$.",
    };
    writeFileSync(
      cases,
      [
        { id: 1, task: row, completion: "So \\boxed{\\dfrac12}" },
        { id: 2, task: row, completion: "So \\boxed{0.5}" },
        { id: 3, task: row, completion: "no box" },
        { id: 4, task: { task: "2 + 3", answer: "5" }, completion: "<answer>5.0</answer>" },
      ]
        .map((c) => JSON.stringify(c))
        .join("\n"),
    );
    const r = cli(["score", "math", cases]);
    expect(r.code).toBe(0);
    const out = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(out.map((o) => o.rewards.correct)).toEqual([1, 1, 0, 1]);
    expect(out[2].rewards.format).toBe(0);
  });

  it("prints JSON with --json and honours --limit and --group", () => {
    const out = tmp();
    const r = cli(["eval", customEnv, "--out", out, "--limit", "2", "--group", "3", "--json"]);
    expect(r.code).toBe(0);
    const s = JSON.parse(r.stdout);
    expect(s.n).toBe(6);
    expect(Object.keys(s.tasks)).toHaveLength(2);
  });

  it("resumes a run killed half-way without losing or duplicating rollouts", async () => {
    const out = tmp();
    const results = join(out, "results.jsonl");
    const child: ChildProcess = spawn(
      process.execPath,
      cliArgv(["eval", slowEnv, "--out", out, "--concurrency", "2"]),
      {
        cwd: root,
        env: { ...process.env, SLOW_ENV_DELAY_MS: "40" },
        stdio: "ignore",
      },
    );
    // wait until some (not all) rollouts are on disk, then kill the run hard
    for (let i = 0; i < 2000; i++) {
      if (existsSync(results) && lines(results).length >= 6) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    child.kill("SIGKILL");
    await new Promise((r) => child.once("exit", r));
    const before = lines(results).length;
    expect(before).toBeGreaterThanOrEqual(6);
    expect(before).toBeLessThan(40);
    const r = cli(["eval", slowEnv, "--out", out, "--resume", "--json"]);
    expect(r.code).toBe(0);
    const ids = lines(results).map((l) => JSON.parse(l).rolloutId);
    expect(ids).toHaveLength(40);
    expect(new Set(ids).size).toBe(40);
    expect(JSON.parse(r.stdout)).toMatchObject({ n: 40, passRate: 1 });
  });

  it("compare exits 1 on a regression and 0 otherwise, with a per-component table", () => {
    const base = tmp();
    const cand = tmp();
    expect(cli(["eval", customEnv, "--out", base]).code).toBe(0);
    expect(cli(["eval", customEnv, "--out", cand]).code).toBe(0);
    const same = cli(["compare", base, cand]);
    expect(same.code).toBe(0);
    expect(same.stdout).toMatch(/component\.exact_match/);
    expect(same.stdout).toMatch(/no regression/);
    // make the candidate worse: one wrong answer
    const s = JSON.parse(readFileSync(join(cand, "summary.json"), "utf8"));
    s.reward.mean = 0.8;
    s.passRate = 0.8;
    s.components.exact_match = 0.8;
    writeFileSync(join(cand, "summary.json"), JSON.stringify(s));
    const worse = cli(["compare", base, cand]);
    expect(worse.code).toBe(1);
    expect(worse.stdout).toMatch(/REGRESSION/);
    expect(cli(["compare", base, cand, "--max-drop", "0.25"]).code).toBe(0);
    s.reward.mean = 1;
    s.passRate = 1;
    s.components.exact_match = 1;
    s.outcomes.infra_error = 1;
    writeFileSync(join(cand, "summary.json"), JSON.stringify(s));
    expect(cli(["compare", base, cand, "--max-drop", "0.5"]).code).toBe(1);
  });

  it("scores cases and validates datasets", () => {
    const dir = tmp();
    const cases = join(dir, "cases.jsonl");
    writeFileSync(
      cases,
      [
        {
          id: "a",
          task: { prompt: "Capital of France?", ground_truth: "Paris" },
          completion: "<answer>paris</answer>",
        },
        { id: "b", task: { prompt: "Capital of Peru?", ground_truth: "Lima" }, completion: "Lima" },
        { id: "c", task: { prompt: 3 }, completion: "x" },
      ]
        .map((c) => JSON.stringify(c))
        .join("\n"),
    );
    const r = cli(["score", customEnv, cases]);
    expect(r.code).toBe(1);
    const out = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(out[0]).toEqual({ id: "a", reward: 1, rewards: { exact_match: 1 } });
    expect(out[1]).toEqual({ id: "b", reward: 0, rewards: { exact_match: 0 } });
    expect(out[2].error).toMatch(/cases\.jsonl:3: .*prompt/);
    const data = join(dir, "data.jsonl");
    writeFileSync(data, '{"prompt":"a","ground_truth":"b"}\n{"prompt":"a"}\n');
    const v = cli(["validate", customEnv, data]);
    expect(v.code).toBe(1);
    expect(v.stdout).toMatch(/2 rows, 1 valid, 1 invalid/);
    expect(v.stdout).toMatch(/data\.jsonl:2: ground_truth/);
  });

  it("gives one clear line and a non-zero exit on bad input", () => {
    const unknown = cli(["eval", "no-such-env"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim().split("\n")).toHaveLength(1);
    expect(unknown.stderr).toMatch(/unknown env "no-such-env"/);
    const badData = join(tmp(), "bad.jsonl");
    writeFileSync(badData, '{"prompt":"ok","ground_truth":1}\n{"prompt": 5, "ground_truth": 1}\n');
    const malformed = cli(["eval", customEnv, "--dataset", badData, "--out", tmp()]);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/bad\.jsonl:2: prompt: /);
    const flag = cli(["eval", customEnv, "--group", "zero"]);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toMatch(/--group must be a positive integer, got "zero"/);
    const down = cli([
      "eval",
      customEnv,
      "--policy",
      "openai",
      "--model",
      "m",
      "--base-url",
      "http://127.0.0.1:9/v1",
      "--out",
      tmp(),
    ]);
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/unreachable/);
    expect(
      down.stderr
        .trim()
        .split("\n")
        .filter((l) => !l.startsWith("benchmax: note:")),
    ).toHaveLength(1);
  });
});
