/**
 * The one file of library code run_code's child may read: exceljs with its dependencies bundled (esbuild, at build
 * time into `dist/sandbox/exceljs.cjs`). Granting a package folder instead would hand the sandbox whatever sits
 * beside it in node_modules (gold workbooks and solutions of installed envs included).
 */
import { createHash } from "node:crypto";
import { chmodSync, existsSync, readFileSync, renameSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { boxFolder } from "./jail.js";

let cached: string | undefined;

/** Path of the exceljs bundle: the built one beside this module, else one built now with esbuild (source checkouts). */
export function exceljsBundle(): string {
  if (cached && existsSync(cached)) return cached;
  const here = dirname(fileURLToPath(import.meta.url));
  // dist/index.js → dist/sandbox/exceljs.cjs
  const built = join(here, "sandbox", "exceljs.cjs");
  if (existsSync(built)) return (cached = built);
  const fresh = buildWithEsbuild(here);
  if (fresh) return (cached = fresh);
  // src/sandbox/bundle.ts run from source without esbuild: a previous build's bundle
  const dist = join(here, "..", "..", "dist", "sandbox", "exceljs.cjs");
  if (existsSync(dist)) return (cached = dist);
  throw new Error("run_code: the exceljs bundle (dist/sandbox/exceljs.cjs) is missing; build the package (tsup)");
}

function buildWithEsbuild(here: string): string | undefined {
  const require = createRequire(import.meta.url);
  let esbuild: { buildSync(o: Record<string, unknown>): unknown } | undefined;
  try {
    esbuild = require(createRequire(require.resolve("tsup")).resolve("esbuild"));
  } catch {
    return undefined;
  }
  const entry = join(here, "exceljs-entry.cjs");
  if (!existsSync(entry)) return undefined;
  const pkg = require.resolve("exceljs/package.json");
  const version = (JSON.parse(readFileSync(pkg, "utf8")) as { version: string }).version;
  const key = createHash("sha256")
    .update(`${pkg}\0${version}\0${statSync(pkg).mtimeMs}`)
    .digest("hex")
    .slice(0, 12);
  // the jail's unprivileged uid must be able to read it: not under the env's private workspace root
  const dir = boxFolder();
  const out = join(dir, `exceljs-${key}.cjs`);
  if (existsSync(out)) return out;
  const tmp = `${out}.${process.pid}.tmp`;
  esbuild!.buildSync({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    outfile: tmp,
    logLevel: "error",
  });
  chmodSync(tmp, 0o644);
  renameSync(tmp, out);
  return out;
}
