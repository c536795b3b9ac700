import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, lines, tmp } from "../../test/harness.js";

describe("benchmax rescore", () => {
  it("re-scores stored rollouts with the current reward, and compare reads the result", { timeout: 180_000 }, () => {
    const dir = tmp();
    const run = join(dir, "run");
    const ev = cli(["eval", "math", "--limit", "4", "--out", run, "--quiet"]);
    expect(ev.code, ev.stderr).toBe(0);
    // the reward code "changed": the stored run says rollout 0 scored 0
    const rows = lines(join(run, "results.jsonl")).map((l) => JSON.parse(l));
    expect(rows.every((r) => r.reward === 1)).toBe(true);
    rows[0] = { ...rows[0], reward: 0, rewards: { ...rows[0].rewards, correct: 0 } };
    writeFileSync(join(run, "results.jsonl"), rows.map((r) => `${JSON.stringify(r)}\n`).join(""));

    const out = join(dir, "new");
    const r = cli(["rescore", run, "--out", out]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("rescored 4 rollouts of math (1 changed, 0 errors kept as they were)");
    const next = lines(join(out, "results.jsonl")).map((l) => JSON.parse(l));
    expect(next.map((x) => x.reward)).toEqual([1, 1, 1, 1]);
    expect(next.map((x) => x.rolloutId)).toEqual(rows.map((x) => x.rolloutId));
    const summary = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(summary.n).toBe(4);
    expect(JSON.parse(readFileSync(join(out, "run.json"), "utf8")).rescoredFrom).toBe(run);
    const cmp = cli(["compare", run, out]);
    expect(cmp.code, `${cmp.stdout}${cmp.stderr}`).toBe(0);
    // an existing --out is refused
    expect(cli(["rescore", run, "--out", out]).stderr).toContain("is not empty: pass --force");
  });

  it("refuses an env whose reward reads the final state, with the reason", { timeout: 180_000 }, () => {
    const dir = tmp();
    const run = join(dir, "run");
    const ev = cli(["eval", "excel", "--limit", "1", "--out", run, "--quiet"]);
    expect(ev.code, ev.stderr).toBe(0);
    const r = cli(["rescore", run, "--out", join(dir, "new")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/env excel: its reward reads .*holds no final-state artifacts/);
  });

  it("refuses a folder that is not a run", { timeout: 60_000 }, () => {
    const r = cli(["rescore", tmp(), "--out", join(tmp(), "x")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("is not a benchmax eval run dir");
  });
});
