import { spawnSync } from "node:child_process";
import {
  accessSync,
  constants,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "@benchmax/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { cliArgv } from "../../test/harness.js";
import { main } from "../index.js";
import { findWorkspaceRoot, scaffoldEnv } from "./scaffold.js";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const tmp = () => mkdtempSync(join(tmpdir(), "bmx-new-"));

const LAYOUT = [
  "DEPLOY.md",
  "README.md",
  "audit.json",
  "fixtures/glossary.json",
  "fixtures/tasks.jsonl",
  "package.json",
  "scripts/build-image.sh",
  "skyrl/run.sh",
  "src/audit.test.ts",
  "src/dataset.ts",
  "src/index.ts",
  "src/reference-policy.ts",
  "src/reward.test.ts",
  "src/reward.ts",
  "src/tools.ts",
  "tsconfig.json",
  "tsup.config.ts",
  "vitest.config.ts",
];

/**
 * Make the scaffolded package's dependencies resolvable without a registry: link @benchmax/core to the workspace
 * sources and the tools (zod, vitest, typescript, tsup, @types/node) to the workspace's installed copies.
 */
function linkDeps(dir: string): void {
  const nm = join(dir, "node_modules");
  mkdirSync(join(nm, "@benchmax"), { recursive: true });
  mkdirSync(join(nm, "@types"), { recursive: true });
  symlinkSync(join(root, "packages/core"), join(nm, "@benchmax/core"));
  symlinkSync(join(root, "packages/audit"), join(nm, "@benchmax/audit"));
  symlinkSync(realpathSync(join(root, "packages/core/node_modules/zod")), join(nm, "zod"));
  for (const p of ["vitest", "typescript", "tsup", "@types/node"]) {
    symlinkSync(realpathSync(join(root, "node_modules", p)), join(nm, p));
  }
}

function run(cmd: string[], cwd: string) {
  const r = spawnSync(process.execPath, cmd, {
    cwd,
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, CI: "1" },
  });
  return { code: r.status, out: `${r.stdout}\n${r.stderr}` };
}

afterEach(() => vi.restoreAllMocks());

describe("benchmax new", () => {
  it("scaffolds an env that type-checks, passes its tests, builds and lints at once", () => {
    const dir = join(tmp(), "glossary-demo");
    const res = scaffoldEnv({ name: "glossary-demo", dir });
    expect(res.files).toEqual(LAYOUT);
    expect(res.workspace).toBe(false);
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    // outside the repo: a name the user can publish, not our scope
    expect(pkg.name).toBe("benchmax-env-glossary-demo");
    // found by `benchmax search` once published
    expect(pkg.keywords).toContain("benchmax-env");
    // installed @benchmax packages ship dist/ only, and so will this one: nothing asks for or serves the source
    // condition outside the repo (its vitest config asked for it, and core resolved to a src/ it does not ship)
    for (const f of ["package.json", "tsconfig.json", "vitest.config.ts"]) {
      expect(readFileSync(join(dir, f), "utf8"), f).not.toContain("@benchmax/source");
    }
    expect(pkg.exports["."]).toEqual({
      types: "./dist/index.d.ts",
      import: "./dist/index.js",
      default: "./dist/index.js",
    });
    expect(pkg.dependencies["@benchmax/core"]).toMatch(/^\^\d+\.\d+\.\d+$/);
    accessSync(join(dir, "skyrl/run.sh"), constants.X_OK);
    expect(readFileSync(join(dir, "src/index.ts"), "utf8")).not.toContain("{{");

    linkDeps(dir);
    const tsc = run([join(dir, "node_modules/typescript/bin/tsc"), "--noEmit", "-p", "."], dir);
    expect(tsc.out.trim()).toBe("");
    expect(tsc.code).toBe(0);
    const test = run([join(dir, "node_modules/vitest/vitest.mjs"), "run"], dir);
    expect(test.out).toMatch(/5 passed/);
    expect(test.code).toBe(0);
    const build = run([join(dir, "node_modules/tsup/dist/cli-default.js")], dir);
    expect(build.code).toBe(0);
    const built = readFileSync(join(dir, "dist/index.js"), "utf8");
    expect(built).toContain("glossary-demo");
    // the repo's lint rules (biome) pass on the generated sources
    const cfg = JSON.parse(readFileSync(join(root, "shared/biome.json"), "utf8"));
    delete cfg.vcs;
    delete cfg.files;
    writeFileSync(join(dir, "biome.json"), JSON.stringify({ ...cfg, root: true }));
    const lint = spawnSync(
      join(root, "node_modules/.bin/biome"),
      ["check", "src", "vitest.config.ts", "tsup.config.ts", "package.json", "tsconfig.json", "README.md"],
      {
        cwd: dir,
        encoding: "utf8",
      },
    );
    expect(`${lint.stdout}${lint.stderr}`).toMatch(/No fixes applied/);
    expect(lint.status).toBe(0);
  }, 180_000);

  it("outside the repo, links @benchmax packages installed above it (tarballs the registry lacks) instead of a 404", () => {
    const project = tmp();
    for (const n of ["core", "cli"]) {
      mkdirSync(join(project, "node_modules/@benchmax", n), { recursive: true });
      writeFileSync(join(project, "node_modules/@benchmax", n, "package.json"), `{"name":"@benchmax/${n}"}`);
    }
    const res = scaffoldEnv({ name: "linked-demo", cwd: project });
    const pkg = JSON.parse(readFileSync(join(project, "linked-demo/package.json"), "utf8"));
    expect(pkg.name).toBe("benchmax-env-linked-demo");
    expect(pkg.dependencies["@benchmax/core"]).toBe("file:../node_modules/@benchmax/core");
    expect(pkg.devDependencies["@benchmax/cli"]).toBe("file:../node_modules/@benchmax/cli");
    expect(res.linked).toEqual({
      "@benchmax/core": "file:../node_modules/@benchmax/core",
      "@benchmax/cli": "file:../node_modules/@benchmax/cli",
    });
  });

  it("outside the repo, takes a version range of @benchmax packages npm installed above it from a registry", () => {
    const project = tmp();
    const lock: Record<string, unknown> = {};
    for (const [n, resolved] of [
      ["core", undefined],
      ["cli", "http://127.0.0.1:4873/@benchmax/cli/-/cli-0.3.1.tgz"],
      ["audit", "file:../packs/benchmax-audit-0.3.1.tgz"],
    ] as const) {
      mkdirSync(join(project, "node_modules/@benchmax", n), { recursive: true });
      writeFileSync(join(project, "node_modules/@benchmax", n, "package.json"), `{"name":"@benchmax/${n}"}`);
      lock[`node_modules/@benchmax/${n}`] = { version: "0.3.1", ...(resolved ? { resolved } : {}) };
    }
    writeFileSync(join(project, "node_modules/.package-lock.json"), JSON.stringify({ packages: lock }));
    const res = scaffoldEnv({ name: "registry-demo", cwd: project });
    const pkg = JSON.parse(readFileSync(join(project, "registry-demo/package.json"), "utf8"));
    // from the registry (npm omits the URL with omit-lockfile-registry-resolved): a range; from a tarball: a link
    expect(pkg.dependencies["@benchmax/core"]).toBe("^0.3.1");
    expect(pkg.devDependencies["@benchmax/cli"]).toBe("^0.3.1");
    expect(pkg.devDependencies["@benchmax/audit"]).toBe("file:../node_modules/@benchmax/audit");
    expect(res.linked).toEqual({ "@benchmax/audit": "file:../node_modules/@benchmax/audit" });
  });

  it("prints next steps that work outside the repo (npm install replaced by links to this workspace)", async () => {
    const out: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation((s) => {
      out.push(String(s));
      return true;
    });
    const parent = tmp();
    const cwd = process.cwd();
    process.chdir(parent);
    let code: number;
    try {
      code = await main(["node", "benchmax", "new", "word-demo"]);
    } finally {
      process.chdir(cwd);
      vi.restoreAllMocks();
    }
    expect(code).toBe(0);
    const next = /^next: (.*)$/m.exec(out.join(""))?.[1];
    expect(next).toBe("cd word-demo && npm install && npm test && npx benchmax eval .");
    const dir = join(parent, "word-demo");
    const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    expect(pkg.devDependencies["@benchmax/cli"]).toMatch(/^\^\d+\.\d+\.\d+$/);
    expect(pkg.peerDependencies.zod).toBe("^4.0.0");
    // what `npm install` would do, offline: the packages and their bin links
    linkDeps(dir);
    symlinkSync(join(root, "packages/cli"), join(dir, "node_modules/@benchmax/cli"));
    const bin = join(dir, "node_modules/.bin");
    mkdirSync(bin);
    symlinkSync(join(root, "node_modules/vitest/vitest.mjs"), join(bin, "vitest"));
    // the CLI from its sources (this checkout may hold no fresh dist/)
    writeFileSync(
      join(bin, "benchmax"),
      `#!/bin/sh\nexec "${process.execPath}" ${cliArgv([])
        .map((a) => `'${a}'`)
        .join(" ")} "$@"\n`,
      {
        mode: 0o755,
      },
    );
    const steps = next!.replace("npm install", "true");
    const r = spawnSync("bash", ["-c", steps], {
      cwd: parent,
      encoding: "utf8",
      timeout: 170_000,
      env: { ...process.env, CI: "1", npm_config_offline: "true", PATH: `${bin}:${process.env.PATH}` },
    });
    const all = `${r.stdout}\n${r.stderr}`;
    expect(all).toMatch(/5 passed/);
    expect(all).toMatch(/word-demo/);
    expect(all).toMatch(/100\.0%/);
    expect(r.status).toBe(0);
  }, 180_000);

  it("inside a benchmax workspace: envs/<name> and a workspace:^ core", () => {
    const ws = tmp();
    writeFileSync(join(ws, "pnpm-workspace.yaml"), "packages:\n  - packages/*\n  - envs/*\n");
    mkdirSync(join(ws, "packages/core"), { recursive: true });
    writeFileSync(join(ws, "packages/core/package.json"), JSON.stringify({ name: "@benchmax/core", version: "0.1.0" }));
    writeFileSync(join(ws, "LICENSE"), "Apache-2.0");
    expect(findWorkspaceRoot(join(ws, "envs"))).toBe(ws);
    expect(findWorkspaceRoot(root)).toBe(root);
    const res = scaffoldEnv({ name: "kv-store", cwd: join(ws, "packages/core") });
    expect(res.dir).toBe(join(ws, "envs/kv-store"));
    expect(res.workspace).toBe(true);
    expect(res.files).toContain("LICENSE");
    const pkg = JSON.parse(readFileSync(join(res.dir, "package.json"), "utf8"));
    expect(pkg.dependencies["@benchmax/core"]).toBe("workspace:^");
    // the workspace resolves its sources; pnpm publishes the exports without that condition
    expect(pkg.exports["."]["@benchmax/source"]).toBe("./src/index.ts");
    expect(pkg.publishConfig.exports["."]).toEqual({
      types: "./dist/index.d.ts",
      import: "./dist/index.js",
      default: "./dist/index.js",
    });
  });

  it("rejects a bad name or a non-empty target", () => {
    expect(() => scaffoldEnv({ name: "My Env", dir: join(tmp(), "x") })).toThrow(UsageError);
    expect(() => scaffoldEnv({ name: "a--b", dir: join(tmp(), "x") })).toThrow(/not valid/);
    const dir = tmp();
    writeFileSync(join(dir, "keep.txt"), "x");
    expect(() => scaffoldEnv({ name: "ok", dir })).toThrow(/already exists and is not empty/);
  });

  it("is the `benchmax new` command", async () => {
    const out: string[] = [];
    vi.spyOn(process.stdout, "write").mockImplementation((s) => {
      out.push(String(s));
      return true;
    });
    const dir = join(tmp(), "notes");
    const code = await main(["node", "benchmax", "new", "notes", "--dir", dir, "--package", "benchmax-env-notes"]);
    vi.restoreAllMocks();
    expect(code).toBe(0);
    expect(out.join("")).toMatch(/created benchmax-env-notes/);
    expect(JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).name).toBe("benchmax-env-notes");
  });
});
