import { existsSync, statSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";
import { forEachTaskString, mapTaskStrings } from "@benchmax/core";

function isUnder(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel !== "" && !rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel);
}

/** Every absolute path of an existing file or folder named in a task (outside its text fields). */
export function absolutePathsIn(value: unknown, out: string[] = []): string[] {
  forEachTaskString(value, (s) => {
    if (isAbsolute(s) && !s.includes("\n") && s.length < 4096 && existsSync(s)) out.push(s);
    return true;
  });
  return out;
}

/** The deepest folder holding every path (undefined when they share only the filesystem root). */
export function commonRoot(paths: string[]): string | undefined {
  if (paths.length === 0) return undefined;
  const dirOf = (p: string) => (existsSync(p) && statSync(p).isDirectory() ? resolve(p) : dirname(resolve(p)));
  let root = dirOf(paths[0]!);
  for (const p of paths.slice(1)) {
    const abs = resolve(p);
    while (root !== dirname(root) && !isUnder(root, abs)) root = dirname(root);
  }
  return root === dirname(root) ? undefined : root;
}

/**
 * A copy of `value` where every absolute path under `root` is `./<relative path>` (POSIX separators): the env
 * server resolves it against its own data root (`benchmax serve --data-root`), so exported rows carry no paths of
 * the machine that exported them. Text fields (prompt, messages, …) are left as they are.
 */
export function relativizePaths<T>(value: T, root: string): T {
  return mapTaskStrings(value, (s) =>
    isAbsolute(s) && isUnder(root, s) ? `./${relative(root, s).split(sep).join("/")}` : s,
  );
}
