import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, cliAsync, lines, root, spawnCli, tmp } from "../../test/harness.js";

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
    expect(cli(["rescore", run, "--out", out]).stderr).toContain(
      "already holds a run (results.jsonl, summary.json, run.json): pass --force",
    );
  });

  it("excel: eval keeps each rollout's final workbook content-addressed; rescore restores it, and a changed state changes the reward task by task", {
    timeout: 300_000,
  }, () => {
    const dir = tmp();
    const run = join(dir, "run");
    const ev = cli(["eval", "excel", "--limit", "3", "--out", run, "--quiet"]);
    expect(ev.code, ev.stderr).toBe(0);
    const rows = lines(join(run, "results.jsonl")).map((l) => JSON.parse(l));
    expect(rows.map((r) => r.reward)).toEqual([1, 1, 1]);
    const shas = new Set<string>();
    for (const r of rows) {
      expect(Object.keys(r.artifacts).sort()).toEqual(["calls.json", "workbook.xlsx"]);
      for (const a of Object.values(r.artifacts) as Array<{ sha256: string; bytes: number }>) {
        const bytes = readFileSync(join(run, "artifacts", a.sha256));
        expect(createHash("sha256").update(bytes).digest("hex")).toBe(a.sha256);
        expect(bytes.length).toBe(a.bytes);
        shas.add(a.sha256);
      }
    }
    expect(readdirSync(join(run, "artifacts")).sort()).toEqual([...shas].sort());

    // the same reward code on the stored state: nothing changes
    const same = join(dir, "same");
    const r0 = cli(["rescore", run, "--out", same]);
    expect(r0.code, r0.stderr).toBe(0);
    expect(r0.stdout).toContain("rescored 3 rollouts of excel (0 changed, 0 errors kept as they were)");

    // rollout 0's stored final workbook is another task's: its reward, read from the restored state, drops
    rows[0].artifacts["workbook.xlsx"] = rows[1].artifacts["workbook.xlsx"];
    writeFileSync(join(run, "results.jsonl"), rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const out = join(dir, "new");
    const r1 = cli(["rescore", run, "--out", out]);
    expect(r1.code, r1.stderr).toBe(0);
    expect(r1.stdout).toContain("rescored 3 rollouts of excel (1 changed, 0 errors kept as they were)");
    const next = lines(join(out, "results.jsonl")).map((l) => JSON.parse(l));
    expect(next.map((x) => x.reward)).toEqual([0, 1, 1]);
    // the new run dir holds the artifacts it names: it can be re-scored on its own
    for (const r of next)
      for (const a of Object.values(r.artifacts) as Array<{ sha256: string }>)
        expect(existsSync(join(out, "artifacts", a.sha256))).toBe(true);
    const cmp = cli(["compare", run, out]);
    expect(cmp.code).toBe(1);
    expect(cmp.stdout).toContain("1 task(s) changed:");
    expect(cmp.stdout).toMatch(new RegExp(`${rows[0].taskId}\\s*│\\s*1\\.000\\s*│\\s*0\\.000\\s*│\\s*-1\\.000`));
    const json = JSON.parse(cli(["compare", run, out, "--json"]).stdout);
    expect(json.tasks).toEqual([
      { task: rows[0].taskId, base: { meanReward: 1, passRate: 1 }, cand: { meanReward: 0, passRate: 0 }, delta: -1 },
    ]);

    // a run without the artifacts its env's reward reads is refused, with the reason, and nothing is written
    for (const r of rows) delete r.artifacts;
    writeFileSync(join(run, "results.jsonl"), rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const bare = join(dir, "bare");
    const r2 = cli(["rescore", run, "--out", bare]);
    expect(r2.code).toBe(1);
    expect(r2.stderr).toMatch(/env excel: its reward reads the rollout's final state .* has no stored artifacts/);
    expect(existsSync(bare)).toBe(false);
  });

  it("excel: a recording server (serve --record) keeps the artifacts too, so its rollouts rescore", {
    timeout: 300_000,
  }, async () => {
    const dir = tmp();
    const rec = join(dir, "rec");
    const data = join(root, "envs/excel/fixtures");
    const server = spawnCli([
      "serve",
      "excel",
      "--port",
      "0",
      "--token",
      "sekret",
      "--record",
      rec,
      "--data-root",
      data,
    ]);
    let out = "";
    const url = await new Promise<string>((res, rej) => {
      server.stdout?.on("data", (d) => {
        out += d;
        const m = /serving excel at (http:\/\/[^\s]+)/.exec(out);
        if (m) res(m[1]!);
      });
      server.once("exit", (code) => rej(new Error(`serve exited ${code}: ${out}`)));
    });
    try {
      const ev = await cliAsync([
        "eval",
        "excel",
        "--endpoint",
        url,
        "--token",
        "sekret",
        "--limit",
        "2",
        "--out",
        join(dir, "ev"),
        "--quiet",
      ]);
      expect(ev.code, ev.stderr).toBe(0);
    } finally {
      const exited = new Promise((res) => server.once("exit", res));
      server.kill("SIGTERM");
      await exited;
    }
    const rows = lines(join(rec, "results.jsonl")).map((l) => JSON.parse(l));
    expect(rows.map((r) => r.reward)).toEqual([1, 1]);
    for (const r of rows) expect(Object.keys(r.artifacts ?? {}).sort()).toEqual(["calls.json", "workbook.xlsx"]);
    expect(JSON.parse(readFileSync(join(rec, "run.json"), "utf8"))).toMatchObject({
      env: "excel",
      dataset: "fixtures",
    });
    const r = cli(["rescore", rec, "--out", join(dir, "new")]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("rescored 2 rollouts of excel (0 changed");
  });

  // issue 41: rescore imported the module run.json's `env` named, so a run dir someone handed you ran its code
  it("never imports a module a run dir names: a path in run.json is refused, nothing is imported", {
    timeout: 120_000,
  }, () => {
    const dir = tmp();
    const run = join(dir, "run");
    mkdirSync(run);
    const marker = join(dir, "pwned");
    const evil = join(dir, "evil.mjs");
    writeFileSync(
      evil,
      `import { writeFileSync } from "node:fs";\nwriteFileSync(${JSON.stringify(marker)}, "imported");\nexport default { name: "evil", description: "", createEnv: () => { throw new Error("no"); } };\n`,
    );
    const row = {
      taskId: "t",
      rolloutId: "t#0",
      outcome: "completed",
      reward: 1,
      rewards: { correct: 1 },
      messages: [],
    };
    writeFileSync(join(run, "results.jsonl"), `${JSON.stringify(row)}\n`);
    for (const name of [
      evil,
      "./evil.mjs",
      "../evil.mjs",
      `file://${evil}`,
      "@evil/env-x",
      "@benchmax/env-../../evil",
    ]) {
      writeFileSync(join(run, "run.json"), JSON.stringify({ env: name, policy: "reference", dataset: "fixtures" }));
      const r = cli(["rescore", run, "--out", join(dir, "new")], { cwd: dir });
      expect(r.code, name).toBe(1);
      expect(r.stderr).toContain(`names the env ${JSON.stringify(name)}, which is not an env package name`);
      expect(r.stderr).toContain("pass it yourself: --env <name|path>");
      expect(existsSync(marker), name).toBe(false);
      expect(existsSync(join(dir, "new"))).toBe(false);
    }
    // a name is looked up as an installed package only (no file of that name is imported either)
    writeFileSync(join(run, "run.json"), JSON.stringify({ env: "evil.mjs", policy: "reference", dataset: "fixtures" }));
    const byName = cli(["rescore", run, "--out", join(dir, "new")], { cwd: dir });
    expect(byName.code).toBe(1);
    expect(byName.stderr).toContain('unknown env "evil.mjs"');
    expect(existsSync(marker)).toBe(false);
    // the user can still name a path on the command line: then it is theirs to trust, and it is imported
    const own = cli(["rescore", run, "--out", join(dir, "new"), "--env", evil], { cwd: dir });
    expect(own.code).toBe(1);
    expect(existsSync(marker)).toBe(true);
  });

  it("refuses a folder that is not a run", { timeout: 60_000 }, () => {
    const r = cli(["rescore", tmp(), "--out", join(tmp(), "x")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("is not a run dir: no results.jsonl");
  });
});
