import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

export type PackageManager = "npm" | "pnpm" | "yarn" | "bun";

export interface Project {
  /** The folder of the nearest package.json at or above the working dir. */
  dir: string;
  packageManager: PackageManager;
}

const LOCKFILES: Array<[string, PackageManager]> = [
  ["pnpm-lock.yaml", "pnpm"],
  ["yarn.lock", "yarn"],
  ["bun.lock", "bun"],
  ["bun.lockb", "bun"],
  ["package-lock.json", "npm"],
  ["npm-shrinkwrap.json", "npm"],
];

/**
 * The project `cwd` is in and the package manager it uses: its lockfile (looked for up to the repository or file system
 * root, as in a workspace), else package.json `packageManager`, else npm. Undefined when no package.json is above.
 */
export function findProject(cwd = process.cwd()): Project | undefined {
  let dir: string | undefined;
  for (let d = resolve(cwd); ; d = dirname(d)) {
    if (existsSync(join(d, "package.json"))) {
      dir = d;
      break;
    }
    if (dirname(d) === d) return undefined;
  }
  for (let d = dir; ; d = dirname(d)) {
    for (const [file, pm] of LOCKFILES) if (existsSync(join(d, file))) return { dir, packageManager: pm };
    if (existsSync(join(d, ".git")) || dirname(d) === d) break;
  }
  try {
    const field = (JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { packageManager?: string })
      .packageManager;
    const name = field?.split("@")[0];
    if (name === "pnpm" || name === "yarn" || name === "bun" || name === "npm") return { dir, packageManager: name };
  } catch {
    /* npm */
  }
  return { dir, packageManager: "npm" };
}

/** The command that adds `spec` to the project's dependencies with its package manager. */
export function addCommand(pm: PackageManager, spec: string, registry?: string): [string, string[]] {
  const reg = registry ? [`--registry=${registry}`] : [];
  if (pm === "npm") return ["npm", ["install", spec, ...reg]];
  return [pm, ["add", spec, ...reg]];
}
