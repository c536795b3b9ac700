import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from "node:fs";
import nodeModule, { createRequire } from "node:module";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { pathToFileURL } from "node:url";
import {
  assertEnvShape,
  descriptionOf,
  didYouMean,
  type Env,
  type EnvModule,
  type EnvOptions,
  UsageError,
} from "@benchmax/core";

const here = dirname(new URL(import.meta.url).pathname);

/** Where env packages are looked up: the working dir upward, then the CLI's own install. */
function searchBases(cwd: string): string[] {
  const bases: string[] = [];
  let d = resolve(cwd);
  for (;;) {
    bases.push(d);
    const up = dirname(d);
    if (up === d) break;
    d = up;
  }
  bases.push(here);
  return bases;
}

function isPathSpec(spec: string): boolean {
  // package names hold a slash only after a scope (@scope/name): `envs/my-env` is a path
  return (
    spec.startsWith(".") || isAbsolute(spec) || spec.includes("\\") || (spec.includes("/") && !spec.startsWith("@"))
  );
}

/** The newest modification time of any file under `dir` (0 when there is none). */
function newestMtime(dir: string): number {
  let newest = 0;
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === "node_modules" || e.name.startsWith(".")) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  if (existsSync(dir)) walk(dir);
  return newest;
}

const printedNotes = new Set<string>();

/** Say which build of an env runs (once per process, on stderr). */
function buildNote(note: string): void {
  if (printedNotes.has(note)) return;
  printedNotes.add(note);
  process.stderr.write(`${note}\n`);
}

/**
 * Run what the user edited: when a package dir has TypeScript sources (src/index.ts) and its built entry is
 * under dist/ but older than src/, load the source instead, and say so.
 */
function preferSource(pkgDir: string, entry: string, label: string): string {
  const src = ["src/index.ts", "src/index.mts", "index.ts"].map((c) => join(pkgDir, c)).find((c) => existsSync(c));
  if (!src || /\.(c|m)?tsx?$/.test(entry)) return entry;
  const srcDir = dirname(src) === pkgDir ? pkgDir : join(pkgDir, "src");
  const srcTime = srcDir === pkgDir ? statSync(src).mtimeMs : newestMtime(srcDir);
  const builtTime = statSync(entry).mtimeMs;
  if (srcTime > builtTime) {
    buildNote(
      `benchmax: ${label}: ${relativeOrAbs(entry)} is older than ${relativeOrAbs(srcDir)}/ — running the source (${relativeOrAbs(src)}); rebuild to update the package`,
    );
    return src;
  }
  return entry;
}

function relativeOrAbs(p: string): string {
  const r = relative(process.cwd(), p);
  return r && !r.startsWith("..") ? r : p;
}

/** The module file of a local package dir (its package.json main/exports, or src/index.ts / index.js). */
function localEntry(path: string): string {
  const abs = resolve(path);
  if (!existsSync(abs)) throw new UsageError(`no env at path ${path}`);
  if (statSync(abs).isFile()) return abs;
  const pkgPath = join(abs, "package.json");
  if (existsSync(pkgPath)) {
    const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { main?: string; exports?: unknown };
    const exp = pkg.exports as Record<string, unknown> | string | undefined;
    const dot = typeof exp === "string" ? exp : (exp?.["."] as Record<string, string> | string | undefined);
    const target = typeof dot === "string" ? dot : (dot?.import ?? dot?.default);
    for (const cand of [target, pkg.main]) {
      if (cand && existsSync(join(abs, cand))) return preferSource(abs, join(abs, cand), path);
    }
  }
  for (const cand of ["src/index.ts", "index.ts", "dist/index.js", "index.js", "index.mjs", "src/index.js"]) {
    if (existsSync(join(abs, cand))) return join(abs, cand);
  }
  throw new UsageError(`no entry module in ${path} (expected package.json main/exports, index.js or src/index.ts)`);
}

/** The package dir holding a resolved entry file (the nearest package.json upward). */
function packageDirOf(file: string): string | undefined {
  let d = dirname(file);
  for (;;) {
    if (existsSync(join(d, "package.json"))) return d;
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
  }
}

export function resolveEnvEntry(spec: string, cwd = process.cwd()): string {
  if (isPathSpec(spec)) return localEntry(resolve(cwd, spec));
  // a short name is one of ours (excel: @benchmax/env-excel); a published env of anyone's keeps its package name
  const pkgName = spec.startsWith("@") || spec.startsWith("benchmax-env-") ? spec : `@benchmax/env-${spec}`;
  for (const base of searchBases(cwd)) {
    try {
      const entry = createRequire(join(base, "noop.js")).resolve(pkgName);
      // a workspace-linked package (not a copy in node_modules): run its source when dist/ is stale
      const real = realpathSync(entry);
      const dir = packageDirOf(real);
      return dir && !real.includes(`${sep}node_modules${sep}`) ? preferSource(dir, real, pkgName) : entry;
    } catch {
      /* try the next base */
    }
  }
  const installed = listInstalledEnvs(cwd);
  const same = installed.find((e) => e.packageName === pkgName);
  if (same) {
    throw new UsageError(
      `env "${spec}": ${pkgName} is installed at ${same.dir} but its entry module is missing (not built? run npm run build)`,
    );
  }
  const known = installed.map((e) => e.name);
  const close = didYouMean(spec, known);
  if (close) throw new UsageError(`unknown env "${spec}"; did you mean ${close}?`);
  if (!spec.startsWith("@") && existsSync(resolve(cwd, spec))) {
    throw new UsageError(`unknown env "${spec}": to run the env in the folder ${spec}, write it as a path: ./${spec}`);
  }
  throw new UsageError(
    `unknown env "${spec}": no package ${pkgName} is installed${known.length ? ` (installed: ${known.join(", ")})` : ""}; pass a name or a path to a local env package`,
  );
}

let tsRegistered = false;
let hooksRegistered = false;

/**
 * Module hooks for envs loaded by path: `@benchmax/*` and `zod` resolve to the CLI's own copies when the env's folder
 * has none (an env in a bare folder, no package.json or npm install), and TypeScript files in a folder without any
 * package.json load as ES modules (the README's smallest env works verbatim).
 */
const HOOKS = `
let fallbackParent;
let zodParent;
export function initialize(data) {
  fallbackParent = data && data.fallbackParent;
  zodParent = (data && data.zodParent) || fallbackParent;
}
const bare = /^(@benchmax\\/|zod(\\/|$))/;
const esmTs = new Map();
async function isBareFolder(url) {
  const { existsSync } = await import("node:fs");
  const { dirname, join } = await import("node:path");
  const { fileURLToPath } = await import("node:url");
  let d = dirname(fileURLToPath(url));
  for (;;) {
    if (esmTs.has(d)) return esmTs.get(d);
    if (existsSync(join(d, "package.json"))) { esmTs.set(d, false); return false; }
    const up = dirname(d);
    if (up === d) { esmTs.set(d, true); return true; }
    d = up;
  }
}
export async function resolve(spec, ctx, next) {
  let r;
  try {
    r = await next(spec, ctx);
  } catch (e) {
    if (!fallbackParent || !e || e.code !== "ERR_MODULE_NOT_FOUND" || !bare.test(spec)) throw e;
    r = await next(spec, { ...ctx, parentURL: spec.startsWith("zod") ? zodParent : fallbackParent });
  }
  if (r.url.startsWith("file:") && /\\.tsx?$/.test(r.url) && !r.url.includes("/node_modules/") && (await isBareFolder(r.url))) {
    return { ...r, format: "module" };
  }
  return r;
}
`;

/** Local envs written in TypeScript load through tsx's ESM loader, with no build step. */
async function registerTypeScript(): Promise<void> {
  if (tsRegistered) return;
  const { register } = await import("tsx/esm/api");
  register();
  tsRegistered = true;
}

/** Where @benchmax/core lies: zod resolves from there (the copy core was built against). */
function coreUrl(): string | undefined {
  try {
    return import.meta.resolve("@benchmax/core");
  } catch {
    return undefined;
  }
}

function registerEnvHooks(): void {
  if (hooksRegistered) return;
  hooksRegistered = true;
  const mod = nodeModule as { register?: (s: string, parent?: string, o?: { data?: unknown }) => void };
  if (typeof mod.register !== "function") return;
  mod.register(`data:text/javascript,${encodeURIComponent(HOOKS)}`, import.meta.url, {
    data: { fallbackParent: import.meta.url, zodParent: coreUrl() },
  });
}

/** The module, its `createEnv` refusing an env written for the flat contract (its capabilities would be lost). */
function checked(m: EnvModule): EnvModule {
  const create = m.createEnv.bind(m);
  return Object.assign({}, m, {
    createEnv: async (options?: EnvOptions) => {
      const env = await create(options);
      assertEnvShape(env);
      return env;
    },
  });
}

function isEnvModule(x: unknown): x is EnvModule {
  return !!x && typeof x === "object" && typeof (x as EnvModule).createEnv === "function";
}

/** Import an env package (by name or path) and return its EnvModule. */
export async function loadEnvModule(spec: string, cwd = process.cwd()): Promise<EnvModule> {
  const entry = resolveEnvEntry(spec, cwd);
  let mod: Record<string, unknown>;
  if (/\.(c|m)?tsx?$/.test(entry)) await registerTypeScript();
  // registered after tsx so that these hooks run first
  if (isPathSpec(spec)) registerEnvHooks();
  try {
    mod = (await import(pathToFileURL(entry).href)) as Record<string, unknown>;
  } catch (e) {
    throw new UsageError(`could not load env "${spec}" from ${entry}: ${(e as Error).message}`);
  }
  const cand = [mod.default, (mod.default as Record<string, unknown> | undefined)?.default, mod.envModule];
  for (const c of cand) if (isEnvModule(c)) return checked(c);
  // a module that exports an Env object directly (the smallest custom env)
  for (const c of [mod.default, mod.env]) {
    if (c && typeof c === "object" && typeof (c as Env).runTool === "function") {
      const env = c as Env;
      return checked({ name: env.name, description: descriptionOf(env), createEnv: () => env });
    }
  }
  throw new UsageError(
    `${entry} does not export an env: export default an EnvModule ({name, description, createEnv}) or an Env`,
  );
}

export async function createEnv(spec: string, options: EnvOptions = {}, cwd = process.cwd()): Promise<Env> {
  const m = await loadEnvModule(spec, cwd);
  return m.createEnv(options);
}

export interface InstalledEnv {
  name: string;
  packageName: string;
  dir: string;
  version: string;
  description: string;
}

/** The @benchmax/env-* packages visible from `cwd` (and from the CLI's own install). */
export function listInstalledEnvs(cwd = process.cwd()): InstalledEnv[] {
  const found = new Map<string, InstalledEnv>();
  for (const base of searchBases(cwd)) {
    const scope = join(base, "node_modules", "@benchmax");
    if (!existsSync(scope)) continue;
    for (const entry of readdirSync(scope)) {
      if (!entry.startsWith("env-")) continue;
      const name = entry.slice(4);
      if (found.has(name)) continue;
      const dir = join(scope, entry);
      try {
        const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
          version?: string;
          description?: string;
        };
        found.set(name, {
          name,
          packageName: `@benchmax/${entry}`,
          dir,
          version: pkg.version ?? "0.0.0",
          description: pkg.description ?? "",
        });
      } catch {
        /* not a package */
      }
    }
  }
  return [...found.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** Parse repeated `key=value` flags into options (numbers, booleans and JSON decoded). */
export function parseKeyValues(pairs: string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const p of pairs) {
    const i = p.indexOf("=");
    if (i <= 0) throw new UsageError(`expected key=value, got "${p}"`);
    const k = p.slice(0, i);
    const raw = p.slice(i + 1);
    let v: unknown = raw;
    if (raw === "true" || raw === "false") v = raw === "true";
    else if (raw !== "" && !Number.isNaN(Number(raw))) v = Number(raw);
    else if (/^[[{]/.test(raw)) {
      try {
        v = JSON.parse(raw);
      } catch {
        v = raw;
      }
    }
    out[k] = v;
  }
  return out;
}
