/**
 * Shell lines that build a jail's read-only root: one shared piece of the code tools' jail (jail.ts) and the
 * LibreOffice jail (libreoffice-jail.ts). The lines expect `$R` (the new root) and a shell function
 * `ro HOST INSIDE d|f` (a read-only bind) to be defined by the script they go into.
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from "node:fs";
import { dirname } from "node:path";

/** A single-quoted shell word. */
export const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Library folders a dynamically linked program needs (whichever exist here). */
export const LIB_DIRS = [
  "/lib",
  "/lib64",
  "/usr/lib64",
  "/lib/x86_64-linux-gnu",
  "/usr/lib/x86_64-linux-gnu",
  "/lib/aarch64-linux-gnu",
  "/usr/lib/aarch64-linux-gnu",
];

/** Whether a host path has a symlink among its ancestors (then binding it is binding its target twice). */
function underSymlink(p: string): boolean {
  try {
    return realpathSync(dirname(p)) !== dirname(p);
  } catch {
    return true;
  }
}

/** A read-only bind (or a recreated symlink) for each existing host path, at the same path inside the root. */
export function bindLines(paths: string[]): string[] {
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const p of paths) {
    if (seen.has(p) || !existsSync(p) || underSymlink(p)) continue;
    seen.add(p);
    const st = lstatSync(p);
    if (st.isSymbolicLink()) lines.push(`mkdir -p "$R"${q(dirname(p))}; ln -sfn ${q(readlinkSync(p))} "$R"${q(p)}`);
    else lines.push(`ro ${q(p)} ${q(p)} ${st.isDirectory() ? "d" : "f"}`);
  }
  return lines;
}
