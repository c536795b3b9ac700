import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RolloutResult } from "@benchmax/core";
import { summarize } from "@benchmax/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { main } from "../index.js";

afterEach(() => vi.restoreAllMocks());

function runDir(rewards: number[]): string {
  const dir = mkdtempSync(join(tmpdir(), "bmx-report-"));
  const results: RolloutResult[] = rewards.map((reward, i) => ({
    taskId: `t${i}`,
    rolloutId: `t${i}#0`,
    groupId: `t${i}`,
    sample: 0,
    attempt: 0,
    outcome: "completed",
    reward,
    rewards: { exact_match: reward },
    turns: 2,
    toolCalls: 1,
    toolErrors: 0,
    durationMs: 5,
    messages: [],
  }));
  writeFileSync(join(dir, "results.jsonl"), results.map((r) => `${JSON.stringify(r)}\n`).join(""));
  writeFileSync(join(dir, "summary.json"), JSON.stringify(summarize(results, { env: "demo", policy: "reference" })));
  return dir;
}

async function run(args: string[]) {
  const out: string[] = [];
  vi.spyOn(process.stdout, "write").mockImplementation((s) => {
    out.push(String(s));
    return true;
  });
  const err = vi.spyOn(console, "error").mockImplementation(() => {});
  const code = await main(["node", "benchmax", ...args]);
  const stderr = err.mock.calls.map((c) => c.join(" ")).join("\n");
  vi.restoreAllMocks();
  return { code, stdout: out.join(""), stderr };
}

describe("benchmax report", () => {
  it("writes report.html into the run dir, with a baseline comparison", async () => {
    const base = runDir([1, 1, 1]);
    const cand = runDir([1, 0, 1]);
    const r = await run(["report", cand, "--baseline", base]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(join(cand, "report.html"));
    const html = readFileSync(join(cand, "report.html"), "utf8");
    expect(html).toContain("Comparison with baseline");
    expect(html).toContain("demo / reference");
  });

  it("a dir without results is one clear error", async () => {
    const empty = mkdtempSync(join(tmpdir(), "bmx-report-"));
    mkdirSync(join(empty, "x"));
    const r = await run(["report", empty]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/not a run dir: no results\.jsonl/);
    expect(existsSync(join(empty, "report.html"))).toBe(false);
  });

  // issue 41: report followed a results.jsonl symlinked out of the run dir
  it("refuses a run dir whose results.jsonl links out of it, with one clear error", async () => {
    const dir = runDir([1]);
    const outside = join(mkdtempSync(join(tmpdir(), "bmx-outside-")), "other.jsonl");
    renameSync(join(dir, "results.jsonl"), outside);
    symlinkSync(outside, join(dir, "results.jsonl"));
    const r = await run(["report", dir]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`is a symlink to ${outside}, outside the run dir ${dir}`);
    expect(existsSync(join(dir, "report.html"))).toBe(false);
  });

  it("with several run dirs writes the last one's report with a curve per metric across them", async () => {
    const a = runDir([0, 0, 1]);
    const b = runDir([0, 1, 1]);
    const c = runDir([1, 1, 1]);
    const r = await run(["report", a, b, c]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(join(c, "report.html"));
    const html = readFileSync(join(c, "report.html"), "utf8");
    expect(html).toContain('<h2 id="runs">Across 3 runs</h2>');
    expect(html).toContain('<canvas id="chart-runs">');
    const row = html.match(/<tr data-metric="exact_match">(.*?)<\/tr>/)![1]!;
    expect([...row.matchAll(/<td class="num">([^<]*)<\/td>/g)].map((m) => m[1])).toEqual(["0.333", "0.667", "1"]);
    expect(existsSync(join(a, "report.html"))).toBe(false);
  });
});
