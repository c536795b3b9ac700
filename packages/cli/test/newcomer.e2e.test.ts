import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { describe, expect, it } from "vitest";
import { cli, cliArgv, cliAsync, fakeOpenAI, lines, root, spawnCli, tmp } from "./harness.js";

const customEnv = join(root, "examples/custom-env");

/** The "Write an env" snippet of the root README, as a user would copy it. */
function readmeSmallestEnv(): string {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const at = readme.indexOf("**Write an env.**");
  const m = /```ts\n([\s\S]*?)```/.exec(readme.slice(at));
  if (at < 0 || !m) throw new Error("README has no 'Write an env' TypeScript block");
  return m[1]!;
}

describe("the README's smallest env", () => {
  it("evals verbatim from a bare folder outside the repo (no package.json), with --dataset", async () => {
    const dir = tmp();
    writeFileSync(join(dir, "index.ts"), readmeSmallestEnv());
    writeFileSync(
      join(dir, "capitals.jsonl"),
      '{"prompt":"Capital of France?","ground_truth":"Paris"}\n{"prompt":"Capital of Peru?","ground_truth":"Lima"}\n',
    );
    const model = await fakeOpenAI("It is <answer>Paris</answer>.");
    try {
      const r = await cliAsync(
        [
          "eval",
          ".",
          "--dataset",
          "capitals.jsonl",
          "--policy",
          "openai",
          "--model",
          "m",
          "--base-url",
          model.url,
          "--out",
          "run",
        ],
        { cwd: dir },
      );
      expect(r.stderr).not.toMatch(/cycle|ERR_|at .*\.js:\d+/);
      expect(r.code).toBe(0);
      const s = JSON.parse(readFileSync(join(dir, "run", "summary.json"), "utf8"));
      expect(s).toMatchObject({ env: "capitals", n: 2, passRate: 0.5, outcomes: { completed: 2 } });
      // task ids carry the dataset's name, never its absolute path
      const ids = lines(join(dir, "run", "results.jsonl")).map((l) => JSON.parse(l).taskId);
      expect(ids).toEqual(["capitals.jsonl:1", "capitals.jsonl:2"]);
    } finally {
      model.server.close();
    }
  });

  it("examples/custom-env, copied out of the repo without its package.json, evals with its fixtures", () => {
    const dir = join(tmp(), "custom-env");
    mkdirSync(dir);
    cpSync(join(customEnv, "index.ts"), join(dir, "index.ts"));
    cpSync(join(customEnv, "fixtures"), join(dir, "fixtures"), { recursive: true });
    const r = cli(["eval", "./custom-env", "--out", "run"], { cwd: dirname(dir) });
    expect(r.stderr).not.toMatch(/cycle|ERR_/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/capitals/);
    expect(r.stdout).toMatch(/100\.0%/);
  });

  it("says to pass --dataset when the env has no tasks of its own, and shows no stack for dataset errors", () => {
    const dir = tmp();
    writeFileSync(join(dir, "index.ts"), readmeSmallestEnv());
    const none = cli(["eval", ".", "--policy", "openai", "--model", "m", "--api-key", "k"], { cwd: dir });
    expect(none.code).toBe(1);
    expect(none.stderr.trim()).toBe("benchmax: env capitals has no embedded tasks: pass --dataset <file.jsonl>");
    writeFileSync(join(dir, "bad.jsonl"), '{"prompt":"a","ground_truth":"b"}\n{"prompt":"c"}\n');
    const bad = cli(["eval", ".", "--dataset", "bad.jsonl", "--policy", "openai", "--model", "m", "--api-key", "k"], {
      cwd: dir,
    });
    expect(bad.code).toBe(1);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
    expect(bad.stderr).toMatch(/bad\.jsonl:2: ground_truth: /);
    expect(bad.stderr).not.toMatch(/\n\s+at /);
  });
});

describe("stale builds", () => {
  it("runs the source when dist/ is older than src/, and says so", () => {
    const dir = tmp();
    mkdirSync(join(dir, "src"));
    mkdirSync(join(dir, "dist"));
    cpSync(join(customEnv, "fixtures"), join(dir, "fixtures"), { recursive: true });
    writeFileSync(
      join(dir, "package.json"),
      JSON.stringify({ name: "my-env", type: "module", main: "./dist/index.js", exports: { ".": "./dist/index.js" } }),
    );
    const source = readFileSync(join(customEnv, "index.ts"), "utf8").replace("./fixtures/", "../fixtures/");
    writeFileSync(join(dir, "src", "index.ts"), source.replace('name: "capitals"', 'name: "edited"'));
    writeFileSync(
      join(dir, "dist", "index.js"),
      'export default { name: "stale", description: "", createEnv() { throw new Error("stale build ran"); } };\n',
    );
    const old = new Date(Date.now() - 3600_000);
    utimesSync(join(dir, "dist", "index.js"), old, old);
    const r = cli(["eval", "./", "--out", "run"], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/edited/);
    expect(r.stderr).toMatch(/dist\/index\.js is older than src\/ — running the source \(src\/index\.ts\)/);
  });
});

describe("run dirs", () => {
  it("refuses an existing --out without --resume or --force, and checks what a resume continues", () => {
    const out = tmp();
    expect(cli(["eval", customEnv, "--out", out, "--quiet"]).code).toBe(0);
    const again = cli(["eval", customEnv, "--out", out]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(
      /already holds a run \(.*results\.jsonl.*\): pass --resume to continue it, --force to overwrite it/,
    );
    expect(cli(["eval", customEnv, "--out", out, "--force", "--limit", "2", "--quiet"]).code).toBe(0);
    expect(lines(join(out, "results.jsonl"))).toHaveLength(2);
    const other = cli(["eval", customEnv, "--out", out, "--resume", "--limit", "2", "--group", "2"]);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/--resume: .* is a different run \(group 1 → 2\)/);
    const math = cli(["eval", "math", "--out", out, "--resume", "--limit", "2"]);
    expect(math.code).toBe(1);
    expect(math.stderr).toMatch(/env capitals → math/);
  });

  it("resumes from another checkout of the dataset without doubling the run", () => {
    const a = tmp();
    const b = tmp();
    const rows =
      '{"prompt":"Capital of France?","ground_truth":"Paris"}\n{"prompt":"Capital of Peru?","ground_truth":"Lima"}\n';
    writeFileSync(join(a, "data.jsonl"), rows);
    writeFileSync(join(b, "data.jsonl"), rows);
    const out = join(tmp(), "run");
    expect(cli(["eval", customEnv, "--dataset", join(a, "data.jsonl"), "--out", out, "--quiet"]).code).toBe(0);
    const r = cli(["eval", customEnv, "--dataset", join(b, "data.jsonl"), "--out", out, "--resume", "--json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).n).toBe(2);
    expect(lines(join(out, "results.jsonl"))).toHaveLength(2);
  });

  it("on Ctrl-C writes a partial summary and prints the exact resume command, which finishes the run", async () => {
    const out = join(tmp(), "run");
    const child = spawnCli(
      ["eval", join(root, "packages/cli/test/fixtures/slow-env"), "--out", out, "--concurrency", "2"],
      {
        env: { SLOW_ENV_DELAY_MS: "50" },
      },
    );
    let stderr = "";
    let stdout = "";
    let sent = false;
    child.stdout!.on("data", (d) => {
      stdout += d;
    });
    child.stderr!.on("data", (d) => {
      stderr += d;
      // the first progress line means a result is on disk: interrupt now
      if (!sent && / done, mean reward /.test(stderr)) {
        sent = true;
        child.kill("SIGINT");
      }
    });
    const code = await new Promise<number | null>((r) => child.on("close", r));
    expect(sent).toBe(true);
    expect(code).toBe(130);
    const m = /resume with: (npx benchmax .*)\n/.exec(stderr);
    expect(m).not.toBeNull();
    const resume = m![1]!;
    expect(resume).toContain(`--out ${out} --resume`);
    const partial = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(partial.run).toMatchObject({ completed: false, expectedRollouts: 40 });
    expect(partial.n).toBeLessThan(40);
    expect(partial.outcomes.infra_error).toBe(0);
    expect(stdout).toMatch(/slow/);
    // the printed command, as the user would paste it
    const args = resume.split(" ").slice(2);
    const r = cli(args, { env: { SLOW_ENV_DELAY_MS: "0" } });
    expect(r.code).toBe(0);
    const ids = lines(join(out, "results.jsonl"))
      .map((l) => JSON.parse(l))
      .filter((x) => x.outcome !== "infra_error")
      .map((x) => x.rolloutId);
    expect(new Set(ids).size).toBe(40);
    const done = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
    expect(done).toMatchObject({ n: 40, run: { completed: true } });
  });
});

const hasScript = spawnSync("script", ["--version"], { encoding: "utf8" }).status === 0;
if (!hasScript)
  console.warn("newcomer.e2e: TTY Ctrl-C test skipped: util-linux `script` (a pseudo-terminal) is not installed");

describe("Ctrl-C on a terminal", () => {
  it.skipIf(!hasScript)("restores the cursor the progress bar hid; the bar labels its ETA", async () => {
    const out = join(tmp(), "run");
    const cmd = [
      process.execPath,
      ...cliArgv(["eval", join(root, "packages/cli/test/fixtures/slow-env"), "--out", out, "--concurrency", "1"]),
    ]
      .map((a) => `'${a}'`)
      .join(" ");
    const child = spawn("script", ["-qfec", cmd, "/dev/null"], {
      cwd: root,
      env: { ...process.env, SLOW_ENV_DELAY_MS: "50" },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let text = "";
    let sent = false;
    child.stdout!.on("data", (d) => {
      text += d;
      // the bar is up (cursor hidden) and a rollout has finished: press Ctrl-C in the terminal
      if (!sent && text.includes("\x1b[?25l") && /\] [1-9]\d*\/40/.test(text)) {
        sent = true;
        child.stdin!.write("\x03");
      }
    });
    const code = await new Promise<number | null>((r) => child.on("close", r));
    expect(sent).toBe(true);
    expect(code).toBe(130);
    expect(text.lastIndexOf("\x1b[?25h")).toBeGreaterThan(text.lastIndexOf("\x1b[?25l"));
    expect(text).toMatch(/resume with: npx benchmax eval /);
    expect(text).toMatch(/elapsed \d+s \| ETA /);
    expect(JSON.parse(readFileSync(join(out, "summary.json"), "utf8")).run.completed).toBe(false);
  });
});

describe("the regression gate on real run dirs", () => {
  it("refuses a killed run (no summary.json) and a different env, naming the override", () => {
    const base = tmp();
    expect(cli(["eval", customEnv, "--out", base, "--quiet"]).code).toBe(0);
    const killed = tmp();
    expect(cli(["eval", customEnv, "--out", killed, "--quiet"]).code).toBe(0);
    // what a SIGKILL leaves: run.json and some results, no summary
    const kept = lines(join(killed, "results.jsonl")).slice(0, 2);
    writeFileSync(join(killed, "results.jsonl"), `${kept.join("\n")}\n`);
    rmSync(join(killed, "summary.json"));
    const r = cli(["compare", base, killed]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/not comparable: candidate is partial: 2 of 5 rollouts/);
    expect(r.stdout).toMatch(/pass --allow-partial to compare them anyway/);
    const math = tmp();
    expect(cli(["eval", "math", "--limit", "5", "--out", math, "--quiet"]).code).toBe(0);
    const crossEnv = cli(["compare", base, math]);
    expect(crossEnv.code).toBe(1);
    expect(crossEnv.stdout).toMatch(/not comparable: different env: baseline capitals, candidate math/);
  });
});

describe("hung endpoints", () => {
  it("the start-up check fails fast on a server that accepts connections and never answers", async () => {
    const sockets: Socket[] = [];
    const server = createServer((s) => sockets.push(s));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const port = (server.address() as { port: number }).port;
    try {
      const r = await cliAsync([
        "eval",
        customEnv,
        "--policy",
        "openai",
        "--model",
        "m",
        "--base-url",
        `http://127.0.0.1:${port}/v1`,
        "--timeout",
        "1",
        "--out",
        join(tmp(), "run"),
      ]);
      expect(r.code).toBe(1);
      expect(sockets.length).toBeGreaterThan(0);
      expect(r.stderr.replace(/^benchmax: note:.*\n/m, "").trim()).toBe(
        `benchmax: policy endpoint http://127.0.0.1:${port}/v1 accepted a connection but sent no answer in 1 s (hung server?)`,
      );
    } finally {
      for (const s of sockets) s.destroy();
      server.close();
    }
  });
});

describe("bad input", () => {
  it("gives one clear error for each bad number flag", () => {
    const cases: Array<[string[], RegExp]> = [
      [["--temperature", "abc"], /^benchmax: --temperature must be a number, got "abc"$/],
      [["--max-turns", "0"], /^benchmax: --max-turns must be a positive integer, got "0"$/],
      [["--concurrency", "0"], /^benchmax: --concurrency must be a positive integer, got "0"$/],
      [["--limit", "-1"], /^benchmax: --limit must be a positive integer, got "-1"$/],
      [["--timeout", "0"], /^benchmax: --timeout must be a positive number of seconds, got "0"$/],
    ];
    for (const [flags, want] of cases) {
      const r = cli(["eval", customEnv, ...flags]);
      expect(r.code, flags.join(" ")).toBe(1);
      expect(r.stderr.trim(), flags.join(" ")).toMatch(want);
    }
  });

  it("an unknown env name suggests the close one; a folder name without ./ is a path", () => {
    expect(cli(["eval", "mth"]).stderr.trim()).toBe('benchmax: unknown env "mth"; did you mean math?');
    const dir = tmp();
    mkdirSync(join(dir, "envs"));
    cpSync(customEnv, join(dir, "envs", "capitals"), { recursive: true, filter: (p) => !p.includes("node_modules") });
    rmSync(join(dir, "envs", "capitals", "package.json"));
    const r = cli(["eval", "envs/capitals", "--out", "run"], { cwd: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/capitals/);
  });

  it("a misspelt --env-opt fails with one line that suggests the option", () => {
    const r = cli(["eval", join(root, "packages/cli/test/fixtures/typed-env"), "--env-opt", "datset=x.jsonl"]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/unknown option datset; did you mean dataset\?/);
  });

  it("validate lists every bad line, malformed JSON and missing fields alike, with file:line", () => {
    const data = join(tmp(), "data.jsonl");
    writeFileSync(
      data,
      [
        '{"prompt":"a","ground_truth":"b"}',
        '{"prompt": "x",',
        '{"prompt":"c"}',
        "",
        "not json",
        '{"ground_truth":"d"}',
      ].join("\n"),
    );
    const r = cli(["validate", customEnv, data]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/5 rows, 1 valid, 4 invalid/);
    const listed = r.stdout.split("\n").filter((l) => l.startsWith("  "));
    expect(listed.map((l) => /data\.jsonl:(\d+)/.exec(l)?.[1])).toEqual(["2", "3", "5", "6"]);
    expect(listed[0]).toMatch(/malformed JSON/);
    expect(listed[1]).toMatch(/ground_truth/);
  });

  it("stops quietly when the reader of its output goes away (| head)", () => {
    const dir = tmp();
    const cases = join(dir, "cases.jsonl");
    const row = JSON.stringify({
      id: 1,
      task: { prompt: "Capital of France?", ground_truth: "Paris" },
      completion: "<answer>Paris</answer>",
    });
    writeFileSync(cases, `${Array.from({ length: 4000 }, () => row).join("\n")}\n`);
    const cmd = [process.execPath, ...cliArgv(["score", customEnv, cases])].map((a) => `'${a}'`).join(" ");
    const r = spawnSync("bash", ["-c", `set -o pipefail; ${cmd} 2>${join(dir, "err")} | head -n 1`], {
      cwd: root,
      encoding: "utf8",
    });
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(readFileSync(join(dir, "err"), "utf8")).toBe("");
    expect(existsSync(join(dir, "err"))).toBe(true);
  });
});

describe("oracles", () => {
  it("refuses a policy that reads the gold on a dataset other than the fixtures, unless --allow-oracle", () => {
    const data = join(root, "envs/math/fixtures/arithmetic.jsonl");
    const r = cli(["eval", "math", "--dataset", data, "--limit", "2", "--out", join(tmp(), "run")]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/is an oracle \(it reads the gold answer\).*--allow-oracle/);
    const ok = cli(["eval", "math", "--dataset", data, "--limit", "2", "--allow-oracle", "--out", join(tmp(), "run")]);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/ORACLE/);
  });
});
