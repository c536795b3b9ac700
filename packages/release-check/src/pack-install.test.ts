import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * The packaging check: pack the public packages with `pnpm pack` (workspace:* becomes a real version), install the
 * tarballs with plain npm into a project outside the workspace, import them from an .mjs file and run a rollout.
 */
const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
const pnpm = join(root, "scripts/pnpm.mjs");

interface Target {
  name: string;
  dir: string;
}
const core: Target = { name: "@benchmax/core", dir: "packages/core" };
const math: Target = { name: "@benchmax/env-math", dir: "envs/math" };
const excel: Target = { name: "@benchmax/env-excel", dir: "envs/excel" };
const report: Target = { name: "@benchmax/report", dir: "packages/report" };
const mcp: Target = { name: "@benchmax/mcp", dir: "packages/mcp" };
const server: Target = { name: "@benchmax/server", dir: "packages/server" };
const crm: Target = { name: "@benchmax/env-crm", dir: "envs/crm" };
const wikipedia: Target = { name: "@benchmax/env-wikipedia", dir: "envs/wikipedia" };
// env-excel is packed once its fixtures (the embedded SpreadsheetBench-shaped tasks) are in the repo
const excelReady = existsSync(join(root, excel.dir, "fixtures/spreadsheetbench/dataset.json"));
if (!excelReady)
  console.warn("release-check: env-excel skipped: envs/excel/fixtures/spreadsheetbench is not there yet");
const targets = [core, math, report, mcp, server, crm, wikipedia, ...(excelReady ? [excel] : [])];

/** Every TypeScript block of the public packages' READMEs (packages/*, envs/*): the quickstarts users copy. */
function readmeQuickstarts(): Array<{ name: string; file: string; code: string }> {
  const out: Array<{ name: string; file: string; code: string }> = [];
  for (const group of ["packages", "envs"]) {
    for (const d of readdirSync(join(root, group)).sort()) {
      const pkgPath = join(root, group, d, "package.json");
      const readme = join(root, group, d, "README.md");
      if (!existsSync(pkgPath) || !existsSync(readme)) continue;
      const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { private?: boolean };
      if (pkg.private) continue;
      const blocks = [...readFileSync(readme, "utf8").matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]!);
      blocks.forEach((code, i) => {
        out.push({ name: `${d}-${i + 1}`, file: `${group}/${d}/README.md`, code });
      });
    }
  }
  return out;
}

function sh(cmd: string, args: string[], cwd: string, timeout = 180_000) {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    timeout,
    env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" },
  });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) failed with ${r.status}:\n${out.slice(-4000)}`);
  return out;
}

/** dist/index.js missing, or older than a source file or package.json. */
function needsBuild(dir: string): boolean {
  const out = join(dir, "dist/index.js");
  if (!existsSync(out)) return true;
  const built = statSync(out).mtimeMs;
  const newer = (p: string): boolean =>
    statSync(p).isDirectory() ? readdirSync(p).some((e) => newer(join(p, e))) : statSync(p).mtimeMs > built;
  return newer(join(dir, "src")) || newer(join(dir, "package.json"));
}

let work: string;
let project: string;
const tarballs = new Map<string, string>();

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "benchmax-release-check-"));
  const packs = join(work, "packs");
  mkdirSync(packs);
  for (const t of targets) {
    const dir = join(root, t.dir);
    // turbo builds these before this test (they are devDependencies); build here when run on its own and stale
    if (needsBuild(dir)) sh(process.execPath, [join(root, "node_modules/tsup/dist/cli-default.js")], dir);
    const before = new Set(readdirSync(packs));
    sh(process.execPath, [pnpm, "-C", t.dir, "pack", "--pack-destination", packs], root);
    const made = readdirSync(packs).filter((f) => !before.has(f));
    expect(made).toHaveLength(1);
    tarballs.set(t.name, join(packs, made[0]!));
  }
  project = join(work, "project");
  mkdirSync(project);
  const deps = Object.fromEntries(targets.map((t) => [t.name, `file:${tarballs.get(t.name)}`]));
  // what a TypeScript user has beside the packages: the compiler and Node's types (for the README check)
  const devDependencies = { typescript: "5.9.3", "@types/node": "20.19.43" };
  writeFileSync(
    join(project, "package.json"),
    JSON.stringify(
      { name: "release-check-project", private: true, type: "module", dependencies: deps, devDependencies },
      null,
      2,
    ),
  );
  // one install; third-party deps (zod, openai, …) come from the registry or npm's cache
  sh("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"], project, 200_000);
}, 300_000);

afterAll(() => {
  if (work && !process.env.KEEP) rmSync(work, { recursive: true, force: true });
});

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

  it("type-check every README quickstart (packages/*/README.md, envs/*/README.md) against the packed packages", () => {
    const blocks = readmeQuickstarts();
    expect(blocks.length).toBeGreaterThan(5);
    const dir = join(project, "readme");
    mkdirSync(dir);
    for (const b of blocks) writeFileSync(join(dir, `${b.name}.ts`), `// ${b.file}\n${b.code}\nexport {};\n`);
    // beside the READMEs: a typed env is usable wherever an Env is expected, and createEnv is typed as written
    writeFileSync(
      join(dir, "env-types.ts"),
      `import type { Env, Task } from "@benchmax/core";
import excel, { type ExcelTask } from "@benchmax/env-excel";
import { createMathEnv } from "@benchmax/env-math";
const typed: Env<ExcelTask> = excel.createEnv({});
const plain: Env = typed;
const envs: Env<Task>[] = [plain, createMathEnv()];
export { envs };
`,
    );
    // names the README fragments take from the text around them
    writeFileSync(
      join(dir, "context.d.ts"),
      `declare const env: import("@benchmax/core").Env;
declare const myPolicy: import("@benchmax/core").Policy;
`,
    );
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ES2022",
          module: "NodeNext",
          moduleResolution: "NodeNext",
          lib: ["ES2023"],
          strict: true,
          skipLibCheck: true,
          noEmit: true,
          types: ["node"],
        },
        include: ["*.ts"],
      }),
    );
    const r = spawnSync(process.execPath, [join(project, "node_modules/typescript/bin/tsc"), "-p", dir], {
      cwd: project,
      encoding: "utf8",
    });
    // each error names the README it came from: readme/<package>-<n>.ts
    expect(`${r.stdout}${r.stderr}`.trim()).toBe("");
    expect(r.status).toBe(0);
  });
});
