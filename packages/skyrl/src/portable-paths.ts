import { existsSync, statSync } from "node:fs";
import { dirname, isAbsolute, relative, resolve, sep } from "node:path";

/** Keys whose values are text a model reads (never file names): left alone. */
const TEXT_KEYS = new Set(["id", "prompt", "messages", "content", "system", "systemPrompt", "instruction", "question"]);

function isUnder(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel !== "" && !rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel);
}

/** Every absolute path of an existing file or folder named in a task (outside its text fields). */
export function absolutePathsIn(value: unknown, out: string[] = [], depth = 0): string[] {
  if (depth > 12) return out;
  if (typeof value === "string") {
    if (isAbsolute(value) && !value.includes("\n") && value.length < 4096 && existsSync(value)) out.push(value);
  } else if (Array.isArray(value)) {
    for (const v of value) absolutePathsIn(v, out, depth + 1);
  } else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value))
      if (!(depth === 0 && TEXT_KEYS.has(k))) absolutePathsIn(v, out, depth + 1);
  }
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
export function relativizePaths<T>(value: T, root: string, depth = 0): T {
  if (typeof value === "string") {
    if (isAbsolute(value) && isUnder(root, value)) return `./${relative(root, value).split(sep).join("/")}` as T;
    return value;
  }
  if (depth > 12) return value;
  if (Array.isArray(value)) return value.map((v) => relativizePaths(v, root, depth + 1)) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      out[k] = depth === 0 && TEXT_KEYS.has(k) ? v : relativizePaths(v, root, depth + 1);
    return out as T;
  }
  return value;
}
