import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// a plain .mjs script (scripts/pack.d.mts types it): the same code as `npm run pack`
import { buildStale, publicPackages } from "../../../scripts/pack.mjs";
import { copyForRelease } from "./release-copy.js";
import { type LocalRegistry, registryReachable, startVerdaccio } from "./verdaccio.js";

/**
 * The release check, as the packages reach a new user: a local npm registry (verdaccio, on 127.0.0.1) gets every public
 * package through the changesets release flow (`changeset version`, then `changeset publish`, which runs
 * `pnpm publish` in each package) in a copy of the workspace. Then a bare project (a package.json and an .npmrc naming
 * the registry) installs `@benchmax/env-excel @benchmax/cli` by name, runs the READMEs' quickstarts and
 * `npx benchmax eval excel`; `benchmax new` makes an env whose `npm install`, `npm test`, `eval .` and `audit .` run on
 * what the registry serves; the env is published, found by `benchmax search` and installed by `benchmax add`.
 * publint and @arethetypeswrong/cli check every published tarball.
 *
 * Third-party dependencies (exceljs, zod, …) come through the registry too: verdaccio proxies them from the npm
 * registry, while @benchmax/* and benchmax-env-* are served only from what was published here.
 */
const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");
const bin = (name: string) => join(here, "../node_modules/.bin", name);

const all = publicPackages();
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

// a user's shell, not the pnpm run that started this test: pnpm's own npm_config_* settings (auto-install-peers,
// registry, …) would make plain npm print "Unknown env config" warnings, or ask another registry
const baseEnv = {
  ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_config_/i.test(k))),
  npm_config_update_notifier: "false",
  npm_config_fund: "false",
  npm_config_audit: "false",
};
let userEnv: NodeJS.ProcessEnv = baseEnv;

function run(cmd: string, args: string[], cwd: string, timeout = 180_000, env = userEnv) {
  const r = spawnSync(cmd, args, { cwd, encoding: "utf8", timeout, env, maxBuffer: 64 << 20 });
  const out = `${r.stdout ?? ""}${r.stderr ?? ""}`;
  if (r.status !== 0)
    throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) failed with ${r.status ?? r.signal}:\n${out.slice(-4000)}`);
  return { out, stdout: r.stdout ?? "" };
}

/** Run a command; its stdout and stderr together. */
const sh = (...a: Parameters<typeof run>) => run(...a).out;
/** Run a command that prints JSON (after any lines of its own) on stdout. */
function json(...a: Parameters<typeof run>) {
  const out = run(...a).stdout;
  return JSON.parse(out.slice(out.indexOf("{")));
}

/** The npm registry this machine's npm uses (verdaccio's uplink), asked with the user's own settings. */
function npmRegistryOfThisMachine(): string {
  const r = spawnSync("npm", ["config", "get", "registry"], { encoding: "utf8", env: baseEnv });
  return r.status === 0 && /^https?:\/\//.test(r.stdout.trim()) ? r.stdout.trim() : "https://registry.npmjs.org/";
}

const uplink = npmRegistryOfThisMachine();
const online = await registryReachable(uplink);
if (!online) {
  console.log(
    `registry release check skipped: the npm registry ${uplink} is not reachable, so verdaccio cannot proxy the third-party dependencies (exceljs, zod, …)`,
  );
}

let work: string;
let registry: LocalRegistry;
let project: string;
/** Versions changesets gave the packages in the release copy, by name. */
const released = new Map<string, string>();
/** The tarballs the registry serves, downloaded, by name. */
const published = new Map<string, string>();
const timings: string[] = [];

function timed<T>(label: string, f: () => T): T {
  const t0 = performance.now();
  const r = f();
  timings.push(`${label} ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  return r;
}

/** The registry's document of each public package, read once the release is published. */
const packuments = new Map<string, Awaited<ReturnType<typeof packument>>>();

async function packument(name: string): Promise<{
  versions: Record<string, { dist: { tarball: string }; keywords?: string[] }>;
  "dist-tags": Record<string, string>;
}> {
  const res = await fetch(new URL(name.replace("/", "%2f"), registry.url));
  if (!res.ok) throw new Error(`${name}: the registry answered ${res.status}`);
  return (await res.json()) as never;
}

beforeAll(async () => {
  if (!online) return;
  work = mkdtempSync(join(tmpdir(), "benchmax-registry-release-"));
  timed("build", () => buildStale());
  registry = await startVerdaccio({ dir: join(work, "registry"), uplink });
  // the user's npm points at the registry (`npm config set registry`); publishing takes the token as well
  writeFileSync(join(work, "user.npmrc"), `registry=${registry.url}\n`);
  writeFileSync(join(work, "publish.npmrc"), `registry=${registry.url}\n${registry.authLine}\n`);
  userEnv = { ...baseEnv, npm_config_userconfig: join(work, "user.npmrc") };

  // the release flow of package.json `release`, in a copy of the workspace so that the checkout stays as it is
  const copy = join(work, "release");
  copyForRelease(root, copy);
  for (const p of all) {
    // a build running in this checkout at the same time (tsup empties dist/ first) would publish half a package
    for (const f of ["dist/index.js", "dist/index.d.ts"]) {
      if (!existsSync(join(copy, p.dir, f)))
        throw new Error(`${p.name}: ${f} is missing from the build being released`);
    }
  }
  const changeset = join(root, "node_modules/@changesets/cli/bin.js");
  // changeset publish runs `pnpm publish`: the pinned pnpm (package.json packageManager), through npx's cache
  const pnpmBin = sh("npx", ["-y", "-p", packageManager(), "-c", "command -v pnpm"], root, 300_000, baseEnv)
    .trim()
    .split("\n")
    .pop()!;
  const releaseEnv = {
    ...baseEnv,
    PATH: `${dirname(pnpmBin)}:${process.env.PATH}`,
    npm_config_registry: registry.url,
    npm_config_userconfig: join(work, "publish.npmrc"),
  };
  timed("changeset version", () => sh(process.execPath, [changeset, "version"], copy, 120_000, releaseEnv));
  for (const p of all) {
    released.set(p.name, JSON.parse(readFileSync(join(copy, p.dir, "package.json"), "utf8")).version);
  }
  const out = timed("changeset publish", () => sh(process.execPath, [changeset, "publish"], copy, 600_000, releaseEnv));
  if (!/packages published successfully/.test(out)) throw new Error(`changeset publish:\n${out.slice(-4000)}`);
  mkdirSync(join(work, "published"));
  for (const p of all) {
    const doc = await packument(p.name);
    packuments.set(p.name, doc);
    const v = released.get(p.name)!;
    const res = await fetch(doc.versions[v]!.dist.tarball);
    const file = join(work, "published", `${p.name.replace("@", "").replace("/", "-")}-${v}.tgz`);
    writeFileSync(file, Buffer.from(await res.arrayBuffer()));
    published.set(p.name, file);
  }

  // a bare project: a package.json and an .npmrc that names the registry; the mission's first command, by name
  project = join(work, "project");
  mkdirSync(project);
  writeFileSync(join(project, "package.json"), `${JSON.stringify({ name: "bare", private: true, type: "module" })}\n`);
  writeFileSync(join(project, ".npmrc"), `registry=${registry.url}\n`);
  timed("npm i @benchmax/env-excel @benchmax/cli", () =>
    sh("npm", ["install", "--loglevel=error", "@benchmax/env-excel", "@benchmax/cli"], project, 600_000),
  );
}, 2_400_000);

function packageManager(): string {
  return JSON.parse(readFileSync(join(root, "package.json"), "utf8")).packageManager as string;
}

afterAll(async () => {
  if (timings.length) console.log(`registry release check: ${timings.join(", ")}`);
  await registry?.close();
  // the work folder holds npm projects (400 packages each) and a copy of the repo: removing it is slow on a busy runner
  if (work && !process.env.KEEP) rmSync(work, { recursive: true, force: true });
}, 300_000);

function tarList(tgz: string): string[] {
  return sh("tar", ["tzf", tgz], work)
    .split("\n")
    .filter(Boolean)
    .map((l) => l.replace(/^package\//, ""));
}

/** Every file an exports map, main, types or bin names. */
function manifestTargets(pkg: Record<string, unknown>): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === "string") out.push(v);
    else if (v && typeof v === "object") for (const x of Object.values(v)) walk(x);
  };
  walk(pkg.exports);
  for (const f of ["main", "types", "module"]) if (typeof pkg[f] === "string") out.push(pkg[f] as string);
  walk(pkg.bin);
  return out.map((t) => t.replace(/^\.\//, ""));
}

describe.skipIf(!online)("release through a registry", () => {
  it("changesets versioned and published every public package; the registry serves each at that version", () => {
    expect([...published.keys()].sort()).toEqual(all.map((p) => p.name).sort());
    const pending = readdirSync(join(root, ".changeset")).filter((f) => f.endsWith(".md") && f !== "README.md");
    for (const p of all) expect(packuments.get(p.name)!["dist-tags"].latest, p.name).toBe(released.get(p.name));
    // pending changesets bump at least one package past the checkout's version
    if (pending.length) expect(all.some((p) => released.get(p.name) !== p.version)).toBe(true);
  });

  it("published tarballs ship ESM + types, README, LICENSE, no sources, real ranges, and every file they point to", () => {
    for (const p of all) {
      const tgz = published.get(p.name)!;
      const files = tarList(tgz);
      expect(files, p.name).toEqual(
        expect.arrayContaining(["package.json", "LICENSE", "dist/index.js", "dist/index.d.ts"]),
      );
      expect(
        files.some((f) => /^readme\.md$/i.test(f)),
        `${p.name} has a README`,
      ).toBe(true);
      expect(
        files.some((f) => f.startsWith("src/")),
        `${p.name} ships no sources`,
      ).toBe(false);
      const pkg = JSON.parse(sh("tar", ["xzOf", tgz, "package/package.json"], work));
      expect(pkg.type).toBe("module");
      expect(pkg.exports["."].import).toBe("./dist/index.js");
      expect(pkg.exports["."].types).toBe("./dist/index.d.ts");
      // no export condition (the workspace's @benchmax/source among them) points to a file the package does not ship
      expect(JSON.stringify(pkg.exports), p.name).not.toContain("@benchmax/source");
      for (const t of manifestTargets(pkg)) expect(files, `${p.name} ships ${t}`).toContain(t);
      expect(JSON.stringify(pkg.dependencies ?? {})).not.toContain("workspace:");
      const coreRange = pkg.dependencies?.["@benchmax/core"];
      if (coreRange !== undefined)
        expect(coreRange, `${p.name} → @benchmax/core`).toBe(`^${released.get("@benchmax/core")}`);
      expect(pkg.dependencies?.zod, `${p.name} pins zod`).toBeUndefined();
      if (pkg.peerDependencies?.zod !== undefined) expect(pkg.peerDependencies.zod).toBe("^4.0.0");
      if (p.dir.startsWith("envs/")) expect(pkg.keywords, p.name).toContain("benchmax-env");
    }
  });

  it("publint (strict) and @arethetypeswrong/cli (ESM-only profile) pass on every published tarball", () => {
    const lines: string[] = [];
    for (const [name, tgz] of published) {
      const pl = spawnSync(bin("publint"), ["run", tgz, "--strict"], { cwd: work, encoding: "utf8", env: baseEnv });
      const plOut = `${pl.stdout}${pl.stderr}`;
      expect(`${name}: publint exit ${pl.status}`, plOut).toBe(`${name}: publint exit 0`);
      expect(plOut, name).toMatch(/All good!/);
      // ESM-only packages: node10 and CommonJS `require` resolutions are out of scope (profile esm-only)
      const at = spawnSync(bin("attw"), [tgz, "--profile", "esm-only", "--format", "json"], {
        cwd: work,
        encoding: "utf8",
        env: baseEnv,
      });
      const report = JSON.parse(at.stdout) as {
        analysis?: { problems?: Array<{ kind: string; resolutionKind?: string }> };
      };
      const problems = (report.analysis?.problems ?? []).filter(
        (pr) => pr.resolutionKind !== "node10" && pr.resolutionKind !== "node16-cjs",
      );
      expect(problems, `${name}: attw ${at.stderr}`).toEqual([]);
      expect(at.status, name).toBe(0);
      lines.push(`${name} ok`);
    }
    console.log(`publint --strict and attw --profile esm-only: ${lines.length} packages clean`);
  });

  it("`npm i @benchmax/env-excel @benchmax/cli` by name: the whole @benchmax tree came from the registry", () => {
    const lock = JSON.parse(readFileSync(join(project, "node_modules/.package-lock.json"), "utf8")) as {
      packages: Record<string, { version: string; resolved?: string; link?: boolean }>;
    };
    const ours = Object.entries(lock.packages).filter(([k]) => k.includes("node_modules/@benchmax/"));
    expect(ours.map(([k]) => k.replace(/^.*node_modules\//, "")).sort()).toEqual(
      expect.arrayContaining(["@benchmax/cli", "@benchmax/core", "@benchmax/env-excel"]),
    );
    for (const [k, e] of ours) {
      expect(e.link, k).toBeUndefined();
      if (e.resolved !== undefined) expect(e.resolved, k).toMatch(new RegExp(`^${registry.url}`));
      expect(e.version, k).toBe(released.get(k.replace(/^.*node_modules\//, "")));
    }
    expect(sh("npx", ["benchmax", "--version"], project).trim()).toBe(released.get("@benchmax/cli"));
  });

  it.skipIf(!excelReady)(
    "`npx benchmax eval excel`: its bundled fixtures with the reference policy, as npm start runs it",
    () => {
      const out = timed("eval excel", () =>
        sh("npx", ["benchmax", "eval", "excel", "--json", "--out", "runs/excel"], project, 600_000),
      );
      const s = JSON.parse(out.slice(out.indexOf("{")));
      expect(s).toMatchObject({ env: "excel", passRate: 1 });
      expect(s.n).toBeGreaterThan(0);
      expect(s.outcomes.completed).toBe(s.n);
    },
    600_000,
  );

  it("runs every README quickstart as written, under `npx tsc --init` defaults, then with plain node", () => {
    // the packages the quickstarts import, by name, and the compiler
    timed("npm i the other packages", () =>
      sh("npm", ["install", "--loglevel=error", ...all.map((p) => p.name), "typescript@5.9.3"], project, 600_000),
    );
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
    const tsc = spawnSync("npx", ["tsc", "-p", "."], { cwd: dir, encoding: "utf8", env: userEnv });
    // each error names the README it came from: <package>-<n>.ts
    expect(`${tsc.stdout}${tsc.stderr}`.trim()).toBe("");
    expect(tsc.status).toBe(0);
    for (const b of blocks) {
      const r = spawnSync(process.execPath, [`${b.name}.js`], { cwd: dir, encoding: "utf8", timeout: 120_000 });
      expect(`${b.file} (${b.name}) exit ${r.status}: ${r.stderr.slice(-2000)}`).toBe(`${b.file} (${b.name}) exit 0: `);
    }
  }, 900_000);

  it("imports the installed packages from .mjs files: a math rollout, and a self-contained report", () => {
    writeFileSync(
      join(project, "math.mjs"),
      `import { referencePolicyOf, runRollout, summarize, tasksOf } from "@benchmax/core";
import math from "@benchmax/env-math";
const env = await math.createEnv({});
const [task] = await tasksOf(env, undefined, { limit: 1 });
const r = await runRollout(env, task, referencePolicyOf(env));
await env.close();
const s = summarize([r], { env: env.name, policy: "reference" });
console.log(JSON.stringify({ env: env.name, outcome: r.outcome, reward: r.reward, passRate: s.passRate }));
`,
    );
    const out = sh(process.execPath, ["math.mjs"], project).trim().split("\n").pop()!;
    expect(JSON.parse(out)).toEqual({ env: "math", outcome: "completed", reward: 1, passRate: 1 });
    writeFileSync(
      join(project, "report.mjs"),
      `import { writeFileSync } from "node:fs";
import { referencePolicyOf, runMany, summarize, tasksOf } from "@benchmax/core";
import math from "@benchmax/env-math";
import { writeReport } from "@benchmax/report";
const env = await math.createEnv({});
const tasks = await tasksOf(env, undefined, { limit: 3 });
const run = await runMany(env, tasks, referencePolicyOf(env), { resultsPath: "run/results.jsonl" });
writeFileSync("run/summary.json", JSON.stringify(summarize(run.results, { env: env.name, policy: "reference" })));
await env.close();
console.log(await writeReport("run"));
`,
    );
    const report = sh(process.execPath, ["report.mjs"], project).trim().split("\n").pop()!;
    expect(report).toBe(join("run", "report.html"));
    const html = readFileSync(join(project, report), "utf8");
    expect(html).toContain("Chart.js");
    expect(html).not.toMatch(/<script[^>]+src=/);
  });

  it("`benchmax new my-env`, then its npm install (from the registry), npm test, eval . and audit .", () => {
    const made = sh("npx", ["benchmax", "new", "my-env"], project);
    const next = /^next: (.*)$/m.exec(made)?.[1];
    expect(next).toBe("cd my-env && npm install && npm test && npx benchmax eval .");
    const env = join(project, "my-env");
    const pkg = JSON.parse(readFileSync(join(env, "package.json"), "utf8"));
    // the copies installed above came from the registry: version ranges, no file: links
    expect(pkg.dependencies["@benchmax/core"]).toBe(`^${released.get("@benchmax/core")}`);
    expect(pkg.devDependencies["@benchmax/cli"]).toBe(`^${released.get("@benchmax/cli")}`);
    expect(pkg.devDependencies["@benchmax/audit"]).toBe(`^${released.get("@benchmax/audit")}`);
    expect(pkg.keywords).toContain("benchmax-env");
    timed("my-env npm install", () => sh("npm", ["install", "--loglevel=error"], env, 600_000));
    expect(existsSync(join(env, "node_modules/@benchmax/core/dist/index.js"))).toBe(true);
    const test = timed("my-env npm test", () => sh("npm", ["test"], env, 300_000));
    expect(test).toMatch(/5 passed/);
    expect(json("npx", ["benchmax", "eval", ".", "--json", "--out", "runs/dot"], env, 300_000)).toMatchObject({
      env: "my-env",
      passRate: 1,
    });
    const audit = timed("my-env audit", () => sh("npx", ["benchmax", "audit", "."], env, 600_000));
    expect(audit).toContain("audit passed");
  }, 1_200_000);

  it("the author publishes the env; `benchmax search` lists it with the catalog's envs, by the registry's search API", () => {
    const env = join(project, "my-env");
    sh("npm", ["run", "build"], env, 300_000);
    const pub = sh("npm", ["publish"], env, 300_000, {
      ...baseEnv,
      npm_config_userconfig: join(work, "publish.npmrc"),
    });
    expect(pub).toContain("+ benchmax-env-my-env@0.1.0");
    const envNames = [...all.filter((p) => p.dir.startsWith("envs/")).map((p) => p.name), "benchmax-env-my-env"].sort();
    // the project's .npmrc names the registry (the user's npm config names none here)
    const quiet = { ...baseEnv, npm_config_userconfig: join(work, "empty.npmrc") };
    writeFileSync(join(work, "empty.npmrc"), "");
    const listed = json("npx", ["benchmax", "search", "--json"], project, 120_000, quiet);
    expect(listed.registry).toBe(registry.url);
    expect(listed.envs.map((e: { name: string }) => e.name)).toEqual(envNames);
    expect(listed.envs.find((e: { name: string }) => e.name === "@benchmax/env-excel").version).toBe(
      released.get("@benchmax/env-excel"),
    );
    // npm_config_registry, from a folder with no .npmrc; text narrows the list
    const narrowed = json(
      process.execPath,
      [join(project, "node_modules/@benchmax/cli/bin/benchmax.js"), "search", "glossary", "--json"],
      work,
      120_000,
      { ...quiet, npm_config_registry: registry.url },
    );
    expect(narrowed.envs.map((e: { name: string }) => e.name)).toEqual(["benchmax-env-my-env"]);
    const table = sh("npx", ["benchmax", "search"], project, 120_000, quiet);
    expect(table).toMatch(/^@benchmax\/env-excel\s+\S+\s+Excel env/m);
    expect(table).toContain(`5 env packages on ${registry.url}`);
  });

  it("`benchmax add` installs an env into another project by name and checks that it loads", () => {
    const consumer = join(work, "consumer");
    mkdirSync(consumer);
    writeFileSync(
      join(consumer, "package.json"),
      `${JSON.stringify({ name: "consumer", private: true, type: "module" })}\n`,
    );
    const cli = join(project, "node_modules/@benchmax/cli/bin/benchmax.js");
    const mine = json(process.execPath, [cli, "add", "benchmax-env-my-env", "--json"], consumer, 600_000);
    expect(mine).toMatchObject({
      package: "benchmax-env-my-env",
      version: "0.1.0",
      packageManager: "npm",
      env: "my-env",
    });
    expect(mine.tools.length).toBeGreaterThan(0);
    expect(mine.tasks).toBeGreaterThan(0);
    const consumerPkg = JSON.parse(readFileSync(join(consumer, "package.json"), "utf8"));
    expect(consumerPkg.dependencies["benchmax-env-my-env"]).toBe("^0.1.0");
    // a short name is one of ours; the table names the env, its tools and tasks
    const math = sh(process.execPath, [cli, "add", "math"], consumer, 600_000);
    expect(math).toMatch(
      new RegExp(
        `added @benchmax/env-math@${released.get("@benchmax/env-math")!.replace(/\./g, "\\.")} \\(npm\\): env "math", \\d+ tools \\(.+\\), \\d+ tasks`,
      ),
    );
    expect(math).toContain("next: npx benchmax eval math");
    // what add printed next runs: the added env by its package name
    const ev = json(
      process.execPath,
      [cli, "eval", "benchmax-env-my-env", "--limit", "2", "--json"],
      consumer,
      300_000,
    );
    expect(ev).toMatchObject({ env: "my-env", n: 2 });
    const missing = spawnSync(process.execPath, [cli, "add", "benchmax-env-no-such-env"], {
      cwd: consumer,
      encoding: "utf8",
      env: userEnv,
    });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/benchmax-env-no-such-env is not installed/);
  }, 1_200_000);

  // examples/ci-regression/env-project.sh, the steps user-project-audit.yml runs in a user's env project: audit (in
  // process, HTTP, MCP), eval, compare with a stored baseline, rescore the baseline, compare — on a `benchmax new`
  // scaffold and on the installed env-math, from the registry's packages only
  it("runs the env-project CI steps (audit, eval, compare, rescore, compare) on a scaffolded env and on env-math", () => {
    const script = join(root, "examples/ci-regression/env-project.sh");
    sh("npx", ["benchmax", "new", "ci-env", "--dir", "ci-env"], project);
    const steps: string[] = [];
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
      expect(existsSync(join(project, `runs/ci-${name}/rescored/results.jsonl`)), env).toBe(true);
      steps.push(`${env}: ${s} s`);
    }
    timings.push(`env-project.sh ${steps.join(", ")}`);
  }, 1_200_000);
});
