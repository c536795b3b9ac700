import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from "node:fs";
import { dirname, join, relative } from "node:path";

/**
 * A copy of the workspace to release from, as a CI checkout after `pnpm install` and `npm run build` has it: the root
 * manifest, the workspace file, LICENSE and the pending changesets, and every workspace package with its built dist/
 * (node_modules aside). Each workspace dependency is linked as pnpm links it (node_modules/<name> → its folder), which
 * is what `pnpm publish` reads to turn `workspace:^` into a version.
 */
export function copyForRelease(root: string, dest: string): void {
  mkdirSync(dest, { recursive: true });
  for (const f of ["package.json", "pnpm-workspace.yaml", "LICENSE", ".changeset"]) {
    cpSync(join(root, f), join(dest, f), { recursive: true });
  }
  const dirs = new Map<string, string>();
  for (const group of ["packages", "envs", "examples"]) {
    if (!existsSync(join(root, group))) continue;
    for (const d of readdirSync(join(root, group))) {
      const src = join(root, group, d);
      if (!existsSync(join(src, "package.json"))) continue;
      cpSync(src, join(dest, group, d), {
        recursive: true,
        filter: (p) => !/[/\\](node_modules|\.turbo|runs|\.benchmax)$/.test(p),
      });
      dirs.set((JSON.parse(readFileSync(join(src, "package.json"), "utf8")) as { name: string }).name, join(group, d));
    }
  }
  for (const dir of dirs.values()) {
    const pkg = JSON.parse(readFileSync(join(dest, dir, "package.json"), "utf8")) as Record<
      string,
      Record<string, string> | undefined
    >;
    for (const field of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
      for (const [dep, range] of Object.entries(pkg[field] ?? {})) {
        const target = dirs.get(dep);
        if (!range.startsWith("workspace:") || !target) continue;
        const link = join(dest, dir, "node_modules", dep);
        if (existsSync(link)) continue;
        mkdirSync(dirname(link), { recursive: true });
        symlinkSync(relative(dirname(link), join(dest, target)), link);
      }
    }
  }
}
