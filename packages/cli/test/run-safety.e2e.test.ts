import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, lines, root, spawnCli, tmp } from "./harness.js";

describe("SIGTERM (a CI cancel, `timeout`, Kubernetes)", () => {
  it("writes the partial summary and prints the resume hint, like Ctrl-C, and exits 143", async () => {
    const out = join(tmp(), "run");
    const child = spawnCli(
      ["eval", join(root, "packages/cli/test/fixtures/slow-env"), "--out", out, "--concurrency", "2"],
      { env: { SLOW_ENV_DELAY_MS: "50" } },
    );
    let stderr = "";
    let sent = false;
    child.stdout!.resume();
    child.stderr!.on("data", (d) => {
      stderr += d;
      if (!sent && / done, mean reward /.test(stderr)) {
        sent = true;
        child.kill("SIGTERM");
      }
    });
    const code = await new Promise<number | null>((r) => child.on("close", r));
    expect(sent).toBe(true);
    expect(code).toBe(143);
    expect(stderr).toMatch(/terminated \(SIGTERM\); finishing the summary/);
    expect(stderr).toMatch(new RegExp(`resume with: npx benchmax eval .* --out ${out} --resume`));
    const partial = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(partial.run).toMatchObject({ completed: false, expectedRollouts: 40 });
    expect(partial.n).toBeLessThan(40);
  }, 120_000);
});

describe("--resume checks the rows it keeps (issue 27)", () => {
  it("refuses a row from another task, and a forged reward, instead of counting them", () => {
    const out = tmp();
    expect(cli(["eval", "math", "--limit", "5", "--out", out, "--quiet"]).code).toBe(0);
    const path = join(out, "results.jsonl");
    const rows = lines(path).map((l) => JSON.parse(l));
    expect(rows).toHaveLength(5);
    // a row of a task outside this run
    const stranger = { ...rows[0], taskId: "other-task", rolloutId: "other-task#0" };
    writeFileSync(path, [...rows, stranger].map((r) => `${JSON.stringify(r)}\n`).join(""));
    const a = cli(["eval", "math", "--limit", "5", "--out", out, "--resume", "--json"]);
    expect(a.code).toBe(1);
    expect(a.stderr).toContain(`${path}:6: rollout "other-task#0" is not one of this run's tasks × group 1`);
    // a hand-edited reward
    const forged = rows.map((r, i) => (i === 1 ? { ...r, reward: 1e9 } : r));
    writeFileSync(path, forged.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const b = cli(["eval", "math", "--limit", "5", "--out", out, "--resume", "--json"]);
    expect(b.code).toBe(1);
    expect(b.stderr).toContain(`${path}:2: reward 1000000000 is outside [0, 1], the range this env's weights allow`);
    // issue 41: a forged reward whose components agree with it (the mean was 200000000.8)
    const agreeing = rows.map((r, i) =>
      i === 1 ? { ...r, reward: 1e9, rewards: Object.fromEntries(Object.keys(r.rewards).map((k) => [k, 1e9])) } : r,
    );
    writeFileSync(path, agreeing.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const b2 = cli(["eval", "math", "--limit", "5", "--out", out, "--resume", "--json"]);
    expect(b2.code).toBe(1);
    expect(b2.stderr).toMatch(/results\.jsonl:2: reward component \w+ = 1000000000 is outside \[0, 1\]/);
    expect(b2.stdout).not.toContain("200000000");
    // a row whose rollout id is this dataset's but whose task id is another
    const swapped = rows.map((r, i) => (i === 3 ? { ...r, taskId: rows[0].taskId } : r));
    writeFileSync(path, swapped.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const b3 = cli(["eval", "math", "--limit", "5", "--out", out, "--resume", "--json"]);
    expect(b3.code).toBe(1);
    expect(b3.stderr).toContain(`${path}:4: rollout "${rows[3].rolloutId}" names task "${rows[0].taskId}"`);
    // the run's own rows resume
    writeFileSync(path, rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const c = cli(["eval", "math", "--limit", "5", "--out", out, "--resume", "--json"]);
    expect(c.code).toBe(0);
    expect(JSON.parse(c.stdout).n).toBe(5);
  }, 180_000);

  it("refuses --out / and a folder of other files; `eval .` names its run dir after the folder", () => {
    const r = cli(["eval", "math", "--limit", "1", "--out", "/"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/--out \/ is a folder that holds other things/);
    const cwd = join(root, "examples/custom-env");
    const dot = cli(["eval", ".", "--limit", "1", "--quiet"], { cwd });
    expect(dot.code).toBe(0);
    const m = /run dir: (runs\/custom-env-\d{4}-\S+)/.exec(dot.stdout);
    expect(m).not.toBeNull();
    rmSync(join(cwd, m![1]!), { recursive: true, force: true });
  }, 120_000);
});
