import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "@benchmax/core";
import { cliVersion } from "../version.js";

/** Versions the scaffold pins (the workspace's own). */
export const SCAFFOLD_VERSIONS = {
  zod: "4.6.7",
  typescript: "5.9.3",
  tsup: "8.5.0",
  vitest: "4.1.12",
  typesNode: "20.19.43",
};

export interface ScaffoldOptions {
  /** Env name: lowercase letters, digits and dashes (`my-env`). */
  name: string;
  /** Target folder (default: `envs/<name>` inside the benchmax repo, else `./<name>`). */
  dir?: string;
  /** npm package name (default `@benchmax/env-<name>` inside the repo, else `benchmax-env-<name>`: a name you can publish). */
  packageName?: string;
  cwd?: string;
  /** Version range of @benchmax/core (default `workspace:*` inside the repo, else `^<this CLI's core version>`). */
  coreVersion?: string;
}

export interface ScaffoldResult {
  dir: string;
  packageName: string;
  files: string[];
  /** True when the package was made inside the benchmax monorepo. */
  workspace: boolean;
  /** @benchmax packages linked (`file:`) to the copies installed above the new package, by name. */
  linked: Record<string, string>;
}

/** The templates folder shipped with the CLI (found upward from this module, in src/ and in dist/). */
export function templatesDir(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const cand = join(d, "templates", "env");
    if (existsSync(cand)) return cand;
    const up = dirname(d);
    if (up === d) throw new Error("benchmax: the env templates are missing from this install (templates/env)");
    d = up;
  }
}

/** The benchmax monorepo root above `dir`, if any. */
export function findWorkspaceRoot(dir: string): string | undefined {
  let d = resolve(dir);
  for (;;) {
    const core = join(d, "packages", "core", "package.json");
    if (existsSync(join(d, "pnpm-workspace.yaml")) && existsSync(core)) {
      try {
        if ((JSON.parse(readFileSync(core, "utf8")) as { name?: string }).name === "@benchmax/core") return d;
      } catch {
        /* not ours */
      }
    }
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
  }
}

function coreVersionOfThisCli(pkg = "core"): string {
  try {
    const root = dirname(templatesDir()).replace(/templates$/, "");
    const ws = findWorkspaceRoot(root);
    const p = ws ? join(ws, "packages", pkg, "package.json") : undefined;
    if (p && existsSync(p)) return (JSON.parse(readFileSync(p, "utf8")) as { version: string }).version;
    // an installed CLI: the copy it depends on
    const own = createRequire(import.meta.url).resolve(`@benchmax/${pkg}/package.json`);
    return (JSON.parse(readFileSync(own, "utf8")) as { version: string }).version;
  } catch {
    /* fall through */
  }
  return "0.1.0";
}

/** A kebab-case name's words, capitalized: `my-env` → `My`, `Env`. */
const words = (name: string) =>
  name
    .split("-")
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1));
const pascal = (name: string) => words(name).join("");
const title = (name: string) => words(name).join(" ");

function listTemplates(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir).sort()) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...listTemplates(p, base));
    else if (e.endsWith(".tmpl")) out.push(relative(base, p));
  }
  return out;
}

/** Scaffold a new env package from the template: same layout as every env, builds and passes its tests at once. */
export function scaffoldEnv(options: ScaffoldOptions): ScaffoldResult {
  const name = options.name;
  if (!/^[a-z][a-z0-9]*(-[a-z0-9]+)*$/.test(name)) {
    throw new UsageError(
      `env name "${name}" is not valid: use lowercase letters, digits and single dashes (e.g. "my-env")`,
    );
  }
  const cwd = options.cwd ?? process.cwd();
  const root = findWorkspaceRoot(cwd);
  const dir = resolve(cwd, options.dir ?? (root ? join(root, "envs", name) : name));
  if (existsSync(dir) && readdirSync(dir).length > 0) throw new UsageError(`${dir} already exists and is not empty`);
  const workspace = findWorkspaceRoot(dir) !== undefined;
  const packageName = options.packageName ?? (workspace ? `@benchmax/env-${name}` : `benchmax-env-${name}`);
  // outside the repo, use the @benchmax packages the user already installed: a copy from the registry by its version
  // range, a copy from a tarball (which the registry may not have yet) by a file: link, so that `npm install` never
  // asks the registry for it
  const linked: Record<string, string> = {};
  const installed: Record<string, string> = {};
  if (!workspace) {
    for (const pkg of ["@benchmax/core", "@benchmax/cli", "@benchmax/audit"]) {
      const at = installedAbove(dirname(dir), pkg);
      if (!at) continue;
      const fromRegistry = registryVersion(at, pkg);
      if (fromRegistry) installed[pkg] = `^${fromRegistry}`;
      else linked[pkg] = `file:${relative(dir, at).split("\\").join("/")}`;
    }
  }
  const vars: Record<string, string> = {
    name,
    pascal: pascal(name),
    title: title(name),
    package: packageName,
    coreVersion:
      options.coreVersion ??
      (workspace
        ? "workspace:^"
        : (linked["@benchmax/core"] ?? installed["@benchmax/core"] ?? `^${coreVersionOfThisCli()}`)),
    cliVersion: workspace
      ? "workspace:^"
      : (linked["@benchmax/cli"] ?? installed["@benchmax/cli"] ?? `^${cliVersion()}`),
    auditVersion: workspace
      ? "workspace:^"
      : (linked["@benchmax/audit"] ?? installed["@benchmax/audit"] ?? `^${coreVersionOfThisCli("audit")}`),
    zodVersion: SCAFFOLD_VERSIONS.zod,
    typescriptVersion: SCAFFOLD_VERSIONS.typescript,
    tsupVersion: SCAFFOLD_VERSIONS.tsup,
    vitestVersion: SCAFFOLD_VERSIONS.vitest,
    typesNodeVersion: SCAFFOLD_VERSIONS.typesNode,
  };
  const src = templatesDir();
  const files: string[] = [];
  for (const rel of listTemplates(src)) {
    let text = readFileSync(join(src, rel), "utf8").replace(/\{\{(\w+)\}\}/g, (m, k: string) => {
      const v = vars[k];
      if (v === undefined) throw new Error(`template ${rel}: unknown placeholder ${m}`);
      return v;
    });
    text = workspace ? publishWithoutSource(rel, text) : withoutSourceCondition(text);
    const target = join(dir, rel.slice(0, -".tmpl".length));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, text);
    if (target.endsWith(".sh")) chmodSync(target, 0o755);
    files.push(relative(dir, target));
  }
  // the workspace's LICENSE travels with packages made inside the repo
  const license = root ? join(root, "LICENSE") : undefined;
  if (workspace && license && existsSync(license)) {
    writeFileSync(join(dir, "LICENSE"), readFileSync(license));
    files.push("LICENSE");
  }
  return { dir, packageName, files, workspace, linked };
}

/** The folder of `pkg` in the nearest node_modules at or above `from`, if installed there. */
export function installedAbove(from: string, pkg: string): string | undefined {
  let d = resolve(from);
  for (;;) {
    const cand = join(d, "node_modules", pkg);
    if (existsSync(join(cand, "package.json"))) return cand;
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
  }
}

/**
 * Outside the benchmax repo nothing serves the "@benchmax/source" condition: the installed @benchmax packages ship only
 * dist/, and the new package's own src/ is not in its `files`. Its package.json, tsconfig and vitest config drop it.
 */
function withoutSourceCondition(text: string): string {
  return text
    .split("\n")
    .filter((l) => !l.includes('"@benchmax/source"'))
    .join("\n");
}

/** Inside the repo: the exports keep the source condition for the workspace, and pnpm publishes them without it. */
function publishWithoutSource(rel: string, text: string): string {
  if (rel !== "package.json.tmpl") return text;
  const pkg = JSON.parse(text) as { exports?: unknown; publishConfig?: Record<string, unknown> };
  const strip = (v: unknown): unknown =>
    v && typeof v === "object"
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([k]) => k !== "@benchmax/source")
            .map(([k, x]) => [k, strip(x)]),
        )
      : v;
  pkg.publishConfig = { ...pkg.publishConfig, exports: strip(pkg.exports) };
  return `${JSON.stringify(pkg, null, 2)}\n`;
}

/** The version of the copy of `pkg` at `dir` when npm installed it from a registry (not from a tarball or a link). */
function registryVersion(dir: string, pkg: string): string | undefined {
  const nodeModules = dirname(pkg.startsWith("@") ? dirname(dir) : dir);
  try {
    const lock = JSON.parse(readFileSync(join(nodeModules, ".package-lock.json"), "utf8")) as {
      packages?: Record<string, { version?: string; resolved?: string; link?: boolean }>;
    };
    const entry = lock.packages?.[`node_modules/${pkg}`];
    if (!entry?.version || entry.link) return undefined;
    // npm records a registry copy's tarball URL (or nothing, with omit-lockfile-registry-resolved) and a file: spec else
    return entry.resolved === undefined || /^https?:/.test(entry.resolved) ? entry.version : undefined;
  } catch {
    return undefined;
  }
}
