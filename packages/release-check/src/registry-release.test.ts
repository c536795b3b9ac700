import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// a plain .mjs script (scripts/pack.d.mts types it): the same code as `npm run pack`
import { packAll, publicPackages } from "../../../scripts/pack.mjs";

/**
 * The packaging check, as a new user meets the packages: `npm run pack` (scripts/pack.mjs: `pnpm pack` of every public
 * package, so workspace:* becomes a real version), then a bare `npm init -y` project outside the workspace that
 * installs every tarball with plain npm, runs the README quickstarts under `npx tsc --init` defaults and plain node,
 * and the CLI through npx.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

const all = publicPackages();
const targets = all.map((p) => ({ name: p.name, dir: p.dir }));
const excelReady = existsSync(join(root, "envs/excel/fixtures/spreadsheetbench/dataset.json"));

/** Every TypeScript block of the public packages' READMEs (packages/*, envs/*): the quickstarts users copy. */
function readmeQuickstarts(): Array<{ name: string; file: string; code: string }> {
  const out: Array<{ name: string; file: string; code: string }> = [];
  for (const p of all) {
    const readme = join(root, p.dir, "README.md");
    if (!existsSync(readme)) continue;
    const blocks = [...readFileSync(readme, "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const d = p.dir.split("/")[1]!;
    blocks.forEach((code, i) => {
      out.push({ name: `${d}-${i + 1}`, file: `${p.dir}/README.md`, code });
    });
  }
  return out;
}

// a user's shell, not the pnpm run that started this test: pnpm's own npm_config_* settings (auto-install-peers, …)
// would make plain npm print "Unknown env config" warnings into every output the test reads
const npmEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k))),
  npm_config_update_notifier: "false",
  npm_config_fund: "false",
  npm_config_audit: "false",
};

function sh(cmd: string, args: string[], cwd: string, timeout = 180_000) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout, env: npmEnv });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) failed with ${r.status}:\n${out.slice(-4000)}`);
  return out;
}

let work: string;
let project: string;
const tarballs = new Map<string, string>();

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "benchmax-release-check-"));
  const made = packAll({ outDir: join(work, "packs") });
  for (const m of made) tarballs.set(m.name, m.tarball);
  // a bare project, as `npm init -y` makes it, made ESM as the READMEs say ("type": "module")
  project = join(work, "project");
  mkdirSync(project);
  sh("npm", ["init", "-y"], project);
  sh("npm", ["pkg", "set", "type=module"], project);
  // one plain `npm i` of every tarball (the CLI included) and the compiler; third-party deps from the registry
  sh(
    "npm",
    ["install", "--prefer-offline", "--loglevel=error", ...made.map((m) => m.tarball), "typescript@5.9.3"],
    project,
    400_000,
  );
}, 1_800_000);

// the work folder holds an npm project (400 packages) and a copy of the repo: removing it is slow on a busy runner
afterAll(() => {
  if (work && !process.env.KEEP) rmSync(work, { recursive: true, force: true });
}, 300_000);

function tarList(tgz: string): string[] {
  return sh("tar", ["tzf", tgz], work)
    .split("\n")
    .filter(Boolean)
    .map((l) => l.replace(/^package\//, ""));
}

describe("packed packages", () => {
  it("ship ESM + types, README, LICENSE, and no workspace: ranges", () => {
    for (const t of targets) {
      const files = tarList(tarballs.get(t.name)!);
      expect(files, t.name).toEqual(
        expect.arrayContaining(["package.json", "LICENSE", "dist/index.js", "dist/index.d.ts"]),
      );
      expect(
        files.some((f) => /^readme\.md$/i.test(f)),
        `${t.name} has a README`,
      ).toBe(true);
      expect(
        files.some((f) => f.startsWith("src/")),
        `${t.name} ships no sources`,
      ).toBe(false);
      const pkg = JSON.parse(readFileSync(join(project, "node_modules", t.name, "package.json"), "utf8"));
      expect(pkg.type).toBe("module");
      expect(pkg.exports["."].import).toBe("./dist/index.js");
      expect(pkg.exports["."].types).toBe("./dist/index.d.ts");
      expect(JSON.stringify(pkg.dependencies ?? {})).not.toContain("workspace:");
      // envs and packages take core as a range, and zod as a peer (the user's zod 4), never a pinned copy
      const coreRange = pkg.dependencies?.["@benchmax/core"];
      if (coreRange !== undefined) expect(coreRange, `${t.name} → @benchmax/core`).toMatch(/^\^\d+\.\d+\.\d+$/);
      expect(pkg.dependencies?.zod, `${t.name} pins zod`).toBeUndefined();
      if (pkg.peerDependencies?.zod !== undefined) expect(pkg.peerDependencies.zod).toBe("^4.0.0");
    }
  });

  it("import from an .mjs file outside the workspace and run a math rollout", () => {
    writeFileSync(
      join(project, "math.mjs"),
      `import { runRollout, summarize } from "@benchmax/core";
import math from "@benchmax/env-math";
const env = await math.createEnv({});
const [task] = await env.loadTasks(undefined, { limit: 1 });
const r = await runRollout(env, task, env.referencePolicy());
await env.close();
const s = summarize([r], { env: env.name, policy: "reference" });
console.log(JSON.stringify({ env: env.name, outcome: r.outcome, reward: r.reward, toolCalls: r.toolCalls, passRate: s.passRate }));
`,
    );
    const out = sh(process.execPath, ["math.mjs"], project).trim().split("\n").pop()!;
    expect(JSON.parse(out)).toEqual({
      env: "math",
      outcome: "completed",
      reward: 1,
      toolCalls: expect.any(Number),
      passRate: 1,
    });
  });

  it("write a self-contained report of an installed run (chart.js found inside the installed package)", () => {
    writeFileSync(
      join(project, "report.mjs"),
      `import { writeFileSync } from "node:fs";
import { runMany, summarize } from "@benchmax/core";
import math from "@benchmax/env-math";
import { writeReport } from "@benchmax/report";
const env = await math.createEnv({});
const tasks = await env.loadTasks(undefined, { limit: 3 });
const run = await runMany(env, tasks, env.referencePolicy(), { resultsPath: "run/results.jsonl" });
writeFileSync("run/summary.json", JSON.stringify(summarize(run.results, { env: env.name, policy: "reference" })));
await env.close();
console.log(await writeReport("run"));
`,
    );
    const out = sh(process.execPath, ["report.mjs"], project).trim().split("\n").pop()!;
    expect(out).toBe(join("run", "report.html"));
    const html = readFileSync(join(project, out), "utf8");
    expect(html).toContain("Chart.js");
    expect(html).not.toMatch(/<script[^>]+src=/);
  });

  it.skipIf(!excelReady)("import env-excel from an .mjs file and run one rollout", () => {
    writeFileSync(
      join(project, "excel.mjs"),
      `import { runRollout } from "@benchmax/core";
import excel from "@benchmax/env-excel";
const env = await excel.createEnv({});
const [task] = await env.loadTasks(undefined, { limit: 1 });
const r = await runRollout(env, task, env.referencePolicy());
await env.close();
console.log(JSON.stringify({ env: env.name, outcome: r.outcome, reward: r.reward, error: r.error ?? null }));
`,
    );
    const out = sh(process.execPath, ["excel.mjs"], project).trim().split("\n").pop()!;
    expect(JSON.parse(out)).toMatchObject({ env: "excel", outcome: "completed", error: null });
  });

  it("every public package was packed and installed: the CLI and every library it pulls in", () => {
    expect([...tarballs.keys()].sort()).toEqual(targets.map((t) => t.name).sort());
    for (const n of ["@benchmax/cli", "@benchmax/datagen", "@benchmax/skyrl", "@benchmax/core"]) {
      expect(tarballs.has(n), n).toBe(true);
    }
  });

  it("runs every README quickstart as written, under `npx tsc --init` defaults, then with plain node", () => {
    const blocks = readmeQuickstarts();
    expect(blocks.length).toBeGreaterThan(5);
    const dir = join(project, "quickstarts");
    mkdirSync(dir);
    // what the READMEs say lies beside a quickstart: the notes MCP server, and two run dirs for the report
    writeFileSync(
      join(dir, "notes-server.mjs"),
      readFileSync(join(root, "examples/mcp-notes/src/notes-server.mjs"), "utf8"),
    );
    for (const out of ["runs/math-base", "runs/math-new"]) {
      sh("npx", ["benchmax", "eval", "math", "--limit", "3", "--out", out, "--quiet"], dir);
    }
    for (const b of blocks) writeFileSync(join(dir, `${b.name}.ts`), b.code);
    // the tsconfig.json a new user gets (TypeScript 5.9: noUncheckedIndexedAccess, exactOptionalPropertyTypes,
    // verbatimModuleSyntax, module nodenext)
    sh("npx", ["tsc", "--init"], dir);
    const tsc = spawnSync("npx", ["tsc", "-p", "."], { cwd: dir, encoding: "utf8", env: npmEnv });
    // each error names the README it came from: <package>-<n>.ts
    expect(`${tsc.stdout}${tsc.stderr}`.trim()).toBe("");
    expect(tsc.status).toBe(0);
    for (const b of blocks) {
      const r = spawnSync(process.execPath, [`${b.name}.js`], { cwd: dir, encoding: "utf8", timeout: 120_000 });
      expect(`${b.file} (${b.name}) exit ${r.status}: ${r.stderr.slice(-2000)}`).toBe(`${b.file} (${b.name}) exit 0: `);
    }
  }, 600_000);

  it("runs the CLI with npx: version, eval on bundled fixtures, and `new` outside any repo", () => {
    expect(sh("npx", ["benchmax", "--version"], project).trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const out = sh("npx", ["benchmax", "eval", "math", "--limit", "2", "--json", "--out", "runs/cli"], project);
    expect(JSON.parse(out.slice(out.indexOf("{")))).toMatchObject({ env: "math", n: 2 });
    const made = sh("npx", ["benchmax", "new", "my-env"], project);
    const pkg = JSON.parse(readFileSync(join(project, "my-env/package.json"), "utf8"));
    // a name the user can publish (not our scope), and a core that installs before core is on the registry
    expect(pkg.name).not.toMatch(/^@benchmax\//);
    expect(made).not.toMatch(/@benchmax\/env-my-env/);
    const core = pkg.dependencies["@benchmax/core"] as string;
    if (core.startsWith("file:"))
      expect(existsSync(resolve(project, "my-env", core.slice(5), "package.json"))).toBe(true);
    else expect(core).toMatch(/^\^\d+\.\d+\.\d+$/);
  }, 300_000);

  // examples/ci-regression/env-project.sh, the steps user-project-audit.yml runs in a user's env project: audit (in
  // process, HTTP, MCP), eval, compare with a stored baseline, rescore the baseline, compare — on a `benchmax new`
  // scaffold and on the installed env-math, from the installed tarballs only
  it("runs the env-project CI steps (audit, eval, compare, rescore, compare) on a scaffolded env and on env-math", () => {
    const script = join(root, "examples/ci-regression/env-project.sh");
    sh("npx", ["benchmax", "new", "ci-env", "--dir", "ci-env"], project);
    const timings: string[] = [];
    for (const env of ["./ci-env", "math"]) {
      const name = env.replace(/\W/g, "");
      // the baseline a user makes once and commits (not timed)
      sh("npx", ["benchmax", "eval", env, "--out", `baselines/${name}`, "--quiet"], project);
      const t0 = performance.now();
      const out = sh("bash", [script, env, `baselines/${name}`, `runs/ci-${name}`], project, 600_000);
      const s = ((performance.now() - t0) / 1000).toFixed(0);
      expect(out, env).toContain("audit passed");
      expect(out, env).toMatch(/over in-process \+ http \+ mcp/);
      expect(out, env).toMatch(/rescored \d+ rollouts/);
      expect(out, env).toMatch(/env-project CI steps: \d+ s/);
      expect(existsSync(join(project, `runs/ci-${name}/rescored/results.jsonl`)), env).toBe(true);
      timings.push(
        `${env}: ${s} s (${out.match(/^(audit|eval|compare|rescore|compare-rescored): \d+ s$/gm)?.join(", ")})`,
      );
    }
    console.log(`env-project.sh from the installed tarballs: ${timings.join("; ")}`);
  }, 1_200_000);

  it("releases as a dry run: changeset version in a copy of the repo, then npm publish --dry-run of each tarball", () => {
    const copy = join(work, "repo");
    mkdirSync(copy);
    // the committed tree (what CI releases), without node_modules
    const archive = spawnSync("git", ["archive", "--format=tar", "HEAD"], { cwd: root, maxBuffer: 1 << 30 });
    expect(archive.status).toBe(0);
    const untar = spawnSync("tar", ["-x", "-C", copy], { input: archive.stdout });
    expect(untar.status).toBe(0);
    const pending = readdirSync(join(copy, ".changeset")).filter((f) => f.endsWith(".md") && f !== "README.md");
    const changeset = join(root, "node_modules/@changesets/cli/bin.js");
    sh(process.execPath, [changeset, "version"], copy);
    expect(readdirSync(join(copy, ".changeset")).filter((f) => f.endsWith(".md") && f !== "README.md")).toEqual([]);
    if (pending.length) {
      const bumped = all.filter((p) => {
        const v = JSON.parse(readFileSync(join(copy, p.dir, "package.json"), "utf8")).version as string;
        return v !== p.version && existsSync(join(copy, p.dir, "CHANGELOG.md"));
      });
      expect(bumped.length).toBeGreaterThan(0);
    }
    for (const [name, tgz] of tarballs) {
      const r = sh("npm", ["publish", "--dry-run", "--access", "public", tgz], work);
      expect(r, name).toContain(`+ ${name}@`);
    }
  }, 300_000);
});
