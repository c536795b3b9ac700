#!/usr/bin/env node
// `npm run pack`: a tarball of every public package (packages/*, envs/*) in dist-tarballs/, made by `pnpm pack`, so
// `workspace:` ranges become the real versions, as on publish. Stale or missing builds are built first (tsup).
// Install them anywhere with plain npm: `npm i /path/to/dist-tarballs/*.tgz`.
//   node scripts/pack.mjs [--out DIR] [--no-build] [--skip @benchmax/x,…]
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** The workspace's public packages: { name, version, dir } for each non-private packages/* and envs/*. */
export function publicPackages() {
  const out = [];
  for (const group of ["packages", "envs"]) {
    for (const d of readdirSync(join(root, group)).sort()) {
      const p = join(root, group, d, "package.json");
      if (!existsSync(p)) continue;
      const pkg = JSON.parse(readFileSync(p, "utf8"));
      if (pkg.private) continue;
      out.push({ name: pkg.name, version: pkg.version, dir: join(group, d) });
    }
  }
  return out;
}

/** dist/index.js or its types missing, or older than a source file, tsup.config.ts or package.json. */
export function needsBuild(dir) {
  const out = join(dir, "dist/index.js");
  if (!existsSync(out) || !existsSync(join(dir, "dist/index.d.ts"))) return true;
  const built = statSync(out).mtimeMs;
  const newer = (p) =>
    existsSync(p) &&
    (statSync(p).isDirectory()
      ? readdirSync(p).some((e) => !e.endsWith(".test.ts") && newer(join(p, e)))
      : statSync(p).mtimeMs > built);
  return newer(join(dir, "src")) || newer(join(dir, "package.json")) || newer(join(dir, "tsup.config.ts"));
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, npm_config_update_notifier: "false", TURBO_TELEMETRY_DISABLED: "1" },
  });
  if (r.status !== 0) {
    throw new Error(
      `${cmd} ${args.join(" ")} (in ${cwd}) failed with ${r.status}:\n${`${r.stdout}${r.stderr}`.slice(-4000)}`,
    );
  }
  return r.stdout;
}

/**
 * Pack every public package into `outDir` (emptied of old .tgz first); returns [{ name, version, dir, tarball }].
 * Packages are built in dependency order (core first) when their dist/ is stale, unless `build` is false.
 */
export function packAll({ outDir = join(root, "dist-tarballs"), build = true, skip = [], log = () => {} } = {}) {
  const pkgs = publicPackages().filter((p) => !skip.includes(p.name));
  mkdirSync(outDir, { recursive: true });
  for (const f of readdirSync(outDir)) if (f.endsWith(".tgz")) rmSync(join(outDir, f));
  if (build) buildStale({ skip, log });
  const pnpm = join(root, "scripts/pnpm.mjs");
  const made = [];
  for (const p of pkgs) {
    const before = new Set(readdirSync(outDir));
    run(process.execPath, [pnpm, "-C", p.dir, "pack", "--pack-destination", outDir], root);
    const files = readdirSync(outDir).filter((f) => !before.has(f) && f.endsWith(".tgz"));
    if (files.length !== 1) throw new Error(`pnpm pack of ${p.name} made ${files.length} tarballs`);
    made.push({ ...p, tarball: join(outDir, files[0]) });
    log(`packed ${p.name}@${p.version} → ${relative(process.cwd(), join(outDir, files[0]))}`);
  }
  return made;
}

/** Build (tsup) each public package whose dist/ is missing or stale, in dependency order; returns the names built. */
export function buildStale({ skip = [], log = () => {} } = {}) {
  const built = [];
  const order = publicPackages()
    .filter((p) => !skip.includes(p.name))
    .sort((a, b) => rank(a) - rank(b));
  for (const p of order) {
    const dir = join(root, p.dir);
    if (!needsBuild(dir)) continue;
    log(`building ${p.name}`);
    run(process.execPath, [join(root, "node_modules/tsup/dist/cli-default.js")], dir);
    built.push(p.name);
  }
  return built;
}

/** Build order: core, then the libraries on it, then envs, then the CLI (which imports all of them). */
function rank(p) {
  if (p.name === "@benchmax/core") return 0;
  if (p.name === "@benchmax/cli") return 3;
  if (p.dir.startsWith("envs/")) return 2;
  return 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const args = process.argv.slice(2);
  const i = args.indexOf("--out");
  const outDir = i >= 0 ? resolve(args[i + 1] ?? "") : join(root, "dist-tarballs");
  try {
    const s = args.indexOf("--skip");
    const skip = s >= 0 ? (args[s + 1] ?? "").split(",") : [];
    const made = packAll({ outDir, build: !args.includes("--no-build"), skip, log: (l) => console.log(l) });
    console.log(
      `\n${made.length} tarballs in ${relative(process.cwd(), outDir) || "."}. Install them in any npm project:`,
    );
    console.log(`  npm i ${made.map((m) => relative(process.cwd(), m.tarball)).join(" ")}`);
  } catch (e) {
    console.error(`benchmax pack: ${e.message}`);
    process.exit(1);
  }
}
