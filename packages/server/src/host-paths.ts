import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve, sep } from "node:path";
import { forEachTaskString, mapTaskStrings } from "@benchmax/core";
import { RolloutServiceError } from "./service/service-error.js";

const PATHISH =
  /^(?:\/|~[\\/]|\.\.?[\\/]|[A-Za-z]:[\\/]|file:)|(?:^|[\\/])\.\.(?:[\\/]|$)|^[\w.-]+(?:[\\/][\w .-]+)+\.[A-Za-z]\w{0,7}$/;

/** Whether a task's string reads as a file path (one line, at most 4096 characters). */
const pathLike = (s: string) => s.length <= 4096 && !s.includes("\n") && PATHISH.test(s);

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return resolve(p);
  }
}

/** Host paths a client-built task names, with where they sit in it (`task.init.file`); at most 65. */
export function hostPathsIn(
  value: unknown,
  where = "task",
  out: Array<[string, string]> = [],
): Array<[string, string]> {
  forEachTaskString(
    value,
    (s, at) => {
      if (pathLike(s)) out.push([at, s]);
      return out.length <= 64;
    },
    where,
  );
  return out;
}

/**
 * Refuse a client-built task that names a file on this host outside the operator's data root (403 HOST_PATH): no
 * client may point an env at the server's gold data, keys or system files. Relative paths count from the root.
 */
export function checkHostPaths(task: unknown, dataRoot: string | undefined): void {
  const found = hostPathsIn(task);
  if (found.length === 0) return;
  if (!dataRoot) {
    const [where, p] = found[0]!;
    throw new RolloutServiceError(
      "forbidden",
      `${where} names a host path (${JSON.stringify(p)}); this server accepts host files in client tasks only under a data root the operator configured (serveEnv {dataRoot} / benchmax serve --data-root)`,
      { reason: "HOST_PATH" },
    );
  }
  const root = real(dataRoot);
  for (const [where, p0] of found) {
    const p = p0.startsWith("file:") ? p0.replace(/^file:(\/\/)?/, "") : p0;
    const abs = real(isAbsolute(p) ? p : resolve(root, p));
    const rel = relative(root, abs);
    if (rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel))) continue;
    throw new RolloutServiceError(
      "forbidden",
      `${where} names ${JSON.stringify(p0)}, outside the data root ${dataRoot}: client tasks may name host files only under it`,
      { reason: "HOST_PATH" },
    );
  }
}

/**
 * A client task with its relative host paths (`./sheets/1_input.xlsx`, as `benchmax export skyrl` writes them)
 * made absolute under the data root, so the env opens them there rather than in the server's working directory.
 * Call after `checkHostPaths` accepted the task. Without a data root the task is returned as is.
 */
export function resolveHostPaths<T>(value: T, dataRoot: string | undefined): T {
  if (!dataRoot) return value;
  return mapTaskStrings(value, (s) => {
    const relativePath = pathLike(s) && !isAbsolute(s) && !/^(?:~|file:|[A-Za-z]:)/.test(s);
    return relativePath ? resolve(dataRoot, s) : s;
  });
}
