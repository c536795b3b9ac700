import { constants, existsSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { copyFile, cp, mkdir, mkdtemp, readdir, readFile, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { ToolError } from "./tool.js";

/** A path that leaves its workspace. A ToolError, so a model that tries it reads why. */
export class PathEscapeError extends ToolError {
  override name = "ToolError";
}

let processRoot: string | undefined;

/** This process's folder for workspaces (removed when the process exits). */
export function workspaceRoot(): string {
  if (!processRoot) {
    // unique, not the PID alone: two containers sharing /tmp (one pod's emptyDir) both run as PID 1
    processRoot = mkdtempSync(join(tmpdir(), `benchmax-${process.pid}-`));
    process.once("exit", () => {
      try {
        rmSync(processRoot!, { recursive: true, force: true });
      } catch {
        /* best effort */
      }
    });
  }
  return processRoot;
}

function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === "" || (!rel.startsWith(`..${sep}`) && rel !== ".." && !isAbsolute(rel));
}

/** A per-rollout temp dir; every path is confined to it (no `..`, no absolute paths elsewhere, no symlink escapes). */
export class Workspace {
  private constructor(
    readonly dir: string,
    private readonly realDir: string,
  ) {}

  static async create(options: { root?: string; prefix?: string } = {}): Promise<Workspace> {
    const root = options.root ?? workspaceRoot();
    await mkdir(root, { recursive: true });
    const safePrefix = (options.prefix ?? "ws").replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40);
    const dir = await mkdtemp(join(root, `${safePrefix}-`));
    return new Workspace(dir, await realpath(dir));
  }

  /** Resolve a path given by a model or a user; throws PathEscapeError when it leaves the workspace. */
  resolve(p: string): string {
    if (typeof p !== "string" || p.length === 0) throw new PathEscapeError("path must be a non-empty string");
    if (p.includes("\0")) throw new PathEscapeError("path contains a NUL byte");
    const abs = isAbsolute(p) ? resolve(p) : resolve(this.dir, p);
    if (!isInside(this.dir, abs) && !isInside(this.realDir, abs)) {
      throw new PathEscapeError(`path "${p}" is outside the workspace`);
    }
    // symlinks: the deepest existing ancestor must really be inside
    let probe = abs;
    while (!existsSync(probe)) {
      const up = dirname(probe);
      if (up === probe) break;
      probe = up;
    }
    const real = realpathSync(probe);
    if (!isInside(this.realDir, real)) throw new PathEscapeError(`path "${p}" resolves outside the workspace`);
    return abs;
  }

  async readFile(p: string): Promise<Buffer> {
    return readFile(this.resolve(p));
  }

  async writeFile(p: string, data: string | Uint8Array): Promise<string> {
    const abs = this.resolve(p);
    await mkdir(dirname(abs), { recursive: true });
    await writeFile(abs, data);
    return abs;
  }

  /** Copy a host file into the workspace (copy-on-write where the filesystem supports it). */
  async copyIn(src: string, p: string): Promise<string> {
    const abs = this.resolve(p);
    await mkdir(dirname(abs), { recursive: true });
    await copyFile(src, abs, constants.COPYFILE_FICLONE);
    return abs;
  }

  async list(p = "."): Promise<string[]> {
    return readdir(this.resolve(p));
  }

  /** A new workspace holding a copy of this one (for `fork`). */
  async fork(options: { root?: string; prefix?: string } = {}): Promise<Workspace> {
    const child = await Workspace.create({ root: options.root ?? dirname(this.dir), prefix: options.prefix });
    await cp(this.dir, child.dir, { recursive: true, mode: constants.COPYFILE_FICLONE });
    return child;
  }

  async remove(): Promise<void> {
    // a sandboxed child killed a moment ago may still be finishing a write inside: retry ENOTEMPTY/EBUSY a few times
    await rm(this.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  }
}
