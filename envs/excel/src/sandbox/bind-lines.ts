/**
 * A jail's read-only root, planned in Node and built by a handful of processes: one shared piece of the code tools'
 * jail (jail.ts) and the LibreOffice jail (libreoffice-jail.ts).
 *
 * A jail start used to run two `mount` processes and a `mkdir` (and a `dirname`) per bind: about 40 processes a
 * start, each an exec costing tens of milliseconds on a loaded machine. The plan instead gives:
 * - `prepare()`: shell lines that make every folder with one `mkdir -p`, every file mount point with the shell's
 *   own `: >`, and the symlinks with one `ln` per folder;
 * - `fstab()`: every mount, in order, for one `mount -a -T <file>` (libmount does a read-only bind as a bind plus a
 *   remount carrying `ro,nosuid,nodev`; the flags are checked from inside the jail by jail.test.ts).
 */
import { existsSync, lstatSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, posix } from "node:path";

/** A single-quoted shell word. */
export const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** A path as an fstab field: whitespace, backslash and `#` as octal escapes (libmount reads them back). */
export const fsField = (s: string) => s.replace(/[\s\\#]/g, (c) => `\\${c.charCodeAt(0).toString(8).padStart(3, "0")}`);

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

/** The mount options of a read-only bind. */
const RO = "bind,ro,nosuid,nodev";

/** The folders, files, symlinks and mounts of a jail's root (paths as seen inside, relative to the root). */
export class RootPlan {
  private readonly dirs = new Set<string>();
  private readonly files = new Set<string>();
  private readonly links: Array<{ target: string; at: string }> = [];
  private readonly mounts: Array<{ source: string; at: string; type: string; options: string }> = [];
  /** Host folders bound at the same path (a path under one, on the same filesystem, needs no bind of its own). */
  private readonly boundDirs: Array<{ path: string; dev: number }> = [];

  /** `root`: the host path the root is built at (an empty tmpfs by the time the plan's lines run). */
  constructor(readonly root: string) {}

  /** A folder to make (its parents too). */
  dir(inside: string): this {
    this.dirs.add(posix.normalize(inside));
    return this;
  }

  /** An empty file to make (a mount point for a file). */
  file(inside: string): this {
    this.dir(dirname(inside));
    this.files.add(inside);
    return this;
  }

  /** A read-only bind of a host file or folder at `inside`. */
  bindRo(host: string, inside: string, isDir: boolean): this {
    if (isDir) this.dir(inside);
    else this.file(inside);
    this.mounts.push({ source: host, at: inside, type: "none", options: RO });
    return this;
  }

  /** A device node (`/dev/<name>`): a plain bind, since a nodev mount would make it unusable. */
  device(name: string): this {
    this.file(`/dev/${name}`);
    this.mounts.push({ source: `/dev/${name}`, at: `/dev/${name}`, type: "none", options: "bind" });
    return this;
  }

  /** A tmpfs at `inside` (`options`: size, mode, nosuid, ...). */
  tmpfs(name: string, inside: string, options: string): this {
    this.dir(inside);
    this.mounts.push({ source: name, at: inside, type: "tmpfs", options });
    return this;
  }

  /** A read-only bind (or a recreated symlink) for each existing host path, at the same path inside the root. */
  hostPaths(paths: string[]): this {
    const seen = new Set<string>();
    for (const p of paths) {
      if (seen.has(p) || !existsSync(p) || underSymlink(p)) continue;
      seen.add(p);
      const st = lstatSync(p);
      if (st.isSymbolicLink()) {
        this.dir(dirname(p));
        this.links.push({ target: readlinkSync(p), at: p });
        continue;
      }
      // under a folder bound already, on the same filesystem: that bind shows it
      const dev = statSync(p).dev;
      if (this.boundDirs.some((b) => b.dev === dev && p.startsWith(`${b.path}/`))) continue;
      if (st.isDirectory()) this.boundDirs.push({ path: p, dev });
      this.bindRo(p, p, st.isDirectory());
    }
    return this;
  }

  /** Shell lines (expecting `$R`, the root) that make the folders, the files' mount points and the symlinks. */
  prepare(): string[] {
    const at = (p: string) => `"$R"${q(p)}`;
    const lines: string[] = [];
    const dirs = [...this.dirs].filter((d) => d !== "/");
    if (dirs.length > 0) lines.push(`mkdir -p ${dirs.map(at).join(" ")}`);
    if (this.files.size > 0) lines.push([...this.files].map((f) => `: > ${at(f)}`).join("; "));
    // one ln per folder for links named as their target's last part (`/lib -> usr/lib`), one each for the others
    const byDir = new Map<string, string[]>();
    for (const l of this.links) {
      if (basename(l.target) === basename(l.at) && !l.target.endsWith("/")) {
        const d = dirname(l.at);
        byDir.set(d, [...(byDir.get(d) ?? []), l.target]);
      } else lines.push(`ln -s ${q(l.target)} ${at(l.at)}`);
    }
    for (const [d, targets] of byDir) lines.push(`ln -s -t ${at(d)} ${targets.map(q).join(" ")}`);
    return lines;
  }

  /** The mounts, in order, as an fstab for `mount -a -T`. */
  fstab(): string {
    return this.mounts
      .map((m) => `${fsField(m.source)} ${fsField(posix.join(this.root, m.at))} ${m.type} ${m.options} 0 0\n`)
      .join("");
  }
}
