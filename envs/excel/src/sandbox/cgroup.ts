/**
 * A memory bound for a whole jail (every process in it together), from a cgroup of its own:
 * - cgroup v2 where /sys/fs/cgroup is the unified hierarchy with the memory controller delegated to a folder this
 *   process can write (`memory.max`, and `memory.swap.max` = 0);
 * - else a writable cgroup v1 memory hierarchy (`memory.limit_in_bytes`, and `memory.memsw.limit_in_bytes` where
 *   swap accounting exists);
 * - else none: the jail falls back to a per-process cap × a process cap (see jail.ts).
 * The jail's first process writes its own pid into `cgroup.procs` before it execs anything, so every later process
 * of the jail is born inside the group.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export type CgroupKind = "v2" | "v1";

interface Base {
  kind: CgroupKind;
  dir: string;
}

let base: Base | null | undefined;
let seq = 0;

function ownPath(controller: string): string | undefined {
  try {
    for (const line of readFileSync("/proc/self/cgroup", "utf8").split("\n")) {
      const [, ctrls, path] = line.split(":");
      if (ctrls === undefined || path === undefined) continue;
      if (controller === "" ? ctrls === "" : ctrls.split(",").includes(controller)) return path;
    }
  } catch {}
  return undefined;
}

/** Remove the groups earlier env processes left behind (their jails died with them: the groups are empty). */
function sweepStale(parent: string): void {
  let names: string[] = [];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const n of names) {
    const m = /^benchmax-jails-(\d+)$/.exec(n);
    if (!m || Number(m[1]) === process.pid || existsSync(`/proc/${m[1]}`)) continue;
    const dir = join(parent, n);
    try {
      for (const j of readdirSync(dir)) if (/^(j\d+|probe)$/.test(j)) rmdirSync(join(dir, j));
      rmdirSync(dir);
    } catch {}
  }
}

function tryBase(kind: CgroupKind, parent: string): Base | null {
  sweepStale(parent);
  const dir = join(parent, `benchmax-jails-${process.pid}`);
  try {
    mkdirSync(dir, { recursive: true });
    if (kind === "v2") {
      const ctrls = readFileSync(join(dir, "cgroup.controllers"), "utf8");
      if (!ctrls.split(/\s+/).includes("memory")) throw new Error("no memory controller");
      writeFileSync(join(dir, "cgroup.subtree_control"), "+memory");
    }
    // a probe group proves children can be made and limited
    const probe = join(dir, "probe");
    mkdirSync(probe);
    writeFileSync(join(probe, kind === "v2" ? "memory.max" : "memory.limit_in_bytes"), String(64 * 1024 * 1024));
    rmdirSync(probe);
    return { kind, dir };
  } catch {
    try {
      rmdirSync(dir);
    } catch {}
    return null;
  }
}

function detect(): Base | null {
  if (process.platform !== "linux" || process.env.BENCHMAX_JAIL_CGROUP === "off") return null;
  const fsType = (() => {
    try {
      return readFileSync("/proc/self/mounts", "utf8")
        .split("\n")
        .find((l) => l.split(" ")[1] === "/sys/fs/cgroup")
        ?.split(" ")[2];
    } catch {
      return undefined;
    }
  })();
  if (fsType === "cgroup2") {
    const own = ownPath("");
    if (own !== undefined) {
      const b = tryBase("v2", join("/sys/fs/cgroup", own));
      if (b) return b;
    }
  }
  const memRoot = "/sys/fs/cgroup/memory";
  if (existsSync(join(memRoot, "memory.limit_in_bytes")) || existsSync(join(memRoot, "cgroup.procs"))) {
    const own = ownPath("memory");
    if (own !== undefined) return tryBase("v1", join(memRoot, own));
  }
  return null;
}

/** Which cgroup memory bound jails get here, if any. */
export function cgroupSupport(): CgroupKind | null {
  if (base === undefined) base = detect();
  return base ? base.kind : null;
}

/** A memory group for one jail. */
export class JailCgroup {
  readonly procsFile: string;

  private constructor(
    readonly kind: CgroupKind,
    readonly dir: string,
  ) {
    this.procsFile = join(dir, "cgroup.procs");
  }

  /** A new group capped at `memoryMb` for all its processes together; undefined where cgroups are not usable. */
  static create(memoryMb: number): JailCgroup | undefined {
    if (!cgroupSupport() || !base) return undefined;
    const dir = join(base.dir, `j${++seq}`);
    const bytes = String(Math.floor(memoryMb * 1024 * 1024));
    try {
      mkdirSync(dir);
      if (base.kind === "v2") {
        writeFileSync(join(dir, "memory.max"), bytes);
        if (existsSync(join(dir, "memory.swap.max"))) writeFileSync(join(dir, "memory.swap.max"), "0");
      } else {
        writeFileSync(join(dir, "memory.limit_in_bytes"), bytes);
        if (existsSync(join(dir, "memory.memsw.limit_in_bytes")))
          writeFileSync(join(dir, "memory.memsw.limit_in_bytes"), bytes);
      }
      return new JailCgroup(base.kind, dir);
    } catch {
      try {
        rmdirSync(dir);
      } catch {}
      return undefined;
    }
  }

  /** Whether the group ran out of memory (a process in it was OOM-killed or an allocation failed). */
  hitLimit(): boolean {
    try {
      if (this.kind === "v2") {
        const ev = readFileSync(join(this.dir, "memory.events"), "utf8");
        return /^(oom_kill|oom|max) [1-9]/m.test(ev);
      }
      return Number(readFileSync(join(this.dir, "memory.failcnt"), "utf8")) > 0;
    } catch {
      return false;
    }
  }

  /** Peak memory of the whole group, bytes (where the kernel reports it). */
  peakBytes(): number | undefined {
    try {
      const f = this.kind === "v2" ? "memory.peak" : "memory.max_usage_in_bytes";
      return Number(readFileSync(join(this.dir, f), "utf8"));
    } catch {
      return undefined;
    }
  }

  /** Remove the group once its processes are gone (retried for a while: the kernel frees them asynchronously). */
  remove(tries = 50): void {
    try {
      rmdirSync(this.dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || tries <= 0) return;
      setTimeout(() => this.remove(tries - 1), 100).unref();
    }
  }
}
