import { existsSync, lstatSync, realpathSync, statSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { UsageError } from "@benchmax/core";

/** The files of a run dir the report reads. */
export const RUN_DIR_FILES = ["results.jsonl", "summary.json", "run.json"] as const;

/** The most bytes one results line may hold before the report skips it unread (16 MiB). */
export const DEFAULT_MAX_LINE_BYTES = 16 << 20;

/** The most bytes summary.json or run.json may hold (they are read whole). */
export const MAX_JSON_FILE_BYTES = 64 << 20;

/** True when `path` is `dir` itself or lies under it (both real paths). */
function inside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !rel.startsWith(sep));
}

/**
 * Refuse a run dir whose files lead out of it: a run dir is data someone may hand you, and a `results.jsonl` (or
 * `summary.json`, `run.json`) that is a symlink to a file elsewhere would make the report read, and put in a page,
 * whatever that file holds. A symlink that stays inside the run dir is fine.
 */
export function assertRunFilesInside(dir: string): void {
  if (!existsSync(dir)) return;
  const realDir = realpathSync(dir);
  for (const name of RUN_DIR_FILES) {
    const path = join(dir, name);
    let st: ReturnType<typeof lstatSync>;
    try {
      st = lstatSync(path);
    } catch {
      continue;
    }
    if (name !== "results.jsonl" && existsSync(path) && statSync(path).size > MAX_JSON_FILE_BYTES) {
      throw new UsageError(
        `${path} is ${statSync(path).size.toLocaleString("en-US")} bytes, over the ${MAX_JSON_FILE_BYTES.toLocaleString("en-US")} a run's ${name} may hold: not read`,
      );
    }
    if (!st.isSymbolicLink()) continue;
    let target: string;
    try {
      target = realpathSync(path);
    } catch {
      throw new UsageError(`${path} is a symlink to nothing: the report reads only files inside the run dir`);
    }
    if (!inside(realDir, target)) {
      throw new UsageError(
        `${path} is a symlink to ${target}, outside the run dir ${dir}: the report reads only files inside the run dir (copy the file in if you mean it)`,
      );
    }
  }
}

/** Refuse to write through a symlink: a report's sidecar folder is never a link (it would write, and clear files, elsewhere). */
export function assertNotSymlink(path: string, what: string): void {
  try {
    if (lstatSync(path).isSymbolicLink())
      throw new UsageError(`${path} is a symlink: the report does not write its ${what} through a link`);
  } catch (e) {
    if (e instanceof UsageError) throw e;
  }
}
