/**
 * Bounds for a whole jail (every process in it together), from cgroups of its own:
 * - memory: cgroup v2 where /sys/fs/cgroup is the unified hierarchy with the memory controller delegated to a folder
 *   this process can write (`memory.max`, and `memory.swap.max` = 0); else a writable cgroup v1 memory hierarchy
 *   (`memory.limit_in_bytes`, and `memory.memsw.limit_in_bytes` where swap accounting exists); else none: the jail
 *   falls back to a per-process cap × a process cap (see jail.ts);
 * - CPU: `cpu.max` in the same v2 folder where the cpu controller is delegated too; else a writable cgroup v1 cpu
 *   hierarchy (`cpu.cfs_quota_us` / `cpu.cfs_period_us`); else none: live-jail.ts then throttles the jail itself
 *   (a stop/continue duty cycle, see freeze.ts). Each jail's group also competes for the CPU as one entity against the
 *   others (the scheduler shares between groups first), however many threads it runs.
 * The jail's first process writes its own pid into each group's `cgroup.procs` before it execs anything, so every
 * later process of the jail is born inside the groups. `BENCHMAX_JAIL_CGROUP=off` turns every group off.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { access, mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

export type CgroupKind = "v2" | "v1";

interface Base {
  kind: CgroupKind;
  dir: string;
}

/** The CFS period every jail's CPU quota is counted in (µs). */
const CPU_PERIOD_US = 100_000;

let memBase: Base | null | undefined;
let cpuBase: Base | null | undefined;
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

function mounts(): string[][] {
  try {
    return readFileSync("/proc/self/mounts", "utf8")
      .split("\n")
      .map((l) => l.split(" "));
  } catch {
    return [];
  }
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
      for (const j of readdirSync(dir)) if (/^(j\d+|probe|probe-a)$/.test(j)) rmdirSync(join(dir, j));
      rmdirSync(dir);
    } catch {}
  }
}

/** What one controller needs: its v2 name, and the file a probe group writes to prove children can be limited. */
const PROBES = {
  memory: { v2: ["memory.max", String(64 * 1024 * 1024)], v1: ["memory.limit_in_bytes", String(64 * 1024 * 1024)] },
  cpu: { v2: ["cpu.max", `${CPU_PERIOD_US} ${CPU_PERIOD_US}`], v1: ["cpu.cfs_quota_us", String(CPU_PERIOD_US)] },
} as const;

function tryBase(kind: CgroupKind, parent: string, controller: keyof typeof PROBES): Base | null {
  sweepStale(parent);
  const dir = join(parent, `benchmax-jails-${process.pid}`);
  const made = !existsSync(dir);
  try {
    mkdirSync(dir, { recursive: true });
    if (kind === "v2") {
      const ctrls = readFileSync(join(dir, "cgroup.controllers"), "utf8");
      if (!ctrls.split(/\s+/).includes(controller)) throw new Error(`no ${controller} controller`);
      writeFileSync(join(dir, "cgroup.subtree_control"), `+${controller}`);
    }
    // a probe group proves children can be made and limited
    const probe = join(dir, "probe");
    mkdirSync(probe);
    try {
      const [file, value] = PROBES[controller][kind];
      writeFileSync(join(probe, file), value);
    } finally {
      rmdirSync(probe);
    }
    return { kind, dir };
  } catch {
    if (made)
      try {
        rmdirSync(dir);
      } catch {}
    return null;
  }
}

function off(): boolean {
  return process.platform !== "linux" || process.env.BENCHMAX_JAIL_CGROUP === "off";
}

/** The unified hierarchy's folder of this process, when /sys/fs/cgroup is cgroup2. */
function v2Parent(): string | undefined {
  const fsType = mounts().find((m) => m[1] === "/sys/fs/cgroup")?.[2];
  if (fsType !== "cgroup2") return undefined;
  const own = ownPath("");
  return own === undefined ? undefined : join("/sys/fs/cgroup", own);
}

/** A v1 hierarchy's folder of this process: the mount whose options name `controller`. */
function v1Parent(controller: string): string | undefined {
  const m = mounts().find((f) => f[2] === "cgroup" && (f[3] ?? "").split(",").includes(controller));
  const own = ownPath(controller);
  return m?.[1] && own !== undefined ? join(m[1], own) : undefined;
}

function detect(controller: keyof typeof PROBES): Base | null {
  if (off()) return null;
  const v2 = v2Parent();
  if (v2) {
    const b = tryBase("v2", v2, controller);
    if (b) return b;
  }
  const v1 = v1Parent(controller);
  return v1 ? tryBase("v1", v1, controller) : null;
}

/** `sweepStale` on the thread pool. */
async function sweepStaleAsync(parent: string): Promise<void> {
  const names = await readdir(parent).catch(() => [] as string[]);
  for (const n of names) {
    const m = /^benchmax-jails-(\d+)$/.exec(n);
    if (!m || Number(m[1]) === process.pid) continue;
    if (
      await access(`/proc/${m[1]}`).then(
        () => true,
        () => false,
      )
    )
      continue;
    const dir = join(parent, n);
    try {
      for (const j of await readdir(dir)) if (/^(j\d+|probe|probe-a)$/.test(j)) await rmdir(join(dir, j));
      await rmdir(dir);
    } catch {}
  }
}

/** `tryBase` on the thread pool (its probe group named apart from the sync one's, should both run at once). */
async function tryBaseAsync(kind: CgroupKind, parent: string, controller: keyof typeof PROBES): Promise<Base | null> {
  await sweepStaleAsync(parent);
  const dir = join(parent, `benchmax-jails-${process.pid}`);
  const made = await access(dir).then(
    () => false,
    () => true,
  );
  try {
    await mkdir(dir, { recursive: true });
    if (kind === "v2") {
      const ctrls = await readFile(join(dir, "cgroup.controllers"), "utf8");
      if (!ctrls.split(/\s+/).includes(controller)) throw new Error(`no ${controller} controller`);
      await writeFile(join(dir, "cgroup.subtree_control"), `+${controller}`);
    }
    const probe = join(dir, "probe-a");
    await mkdir(probe);
    try {
      const [file, value] = PROBES[controller][kind];
      await writeFile(join(probe, file), value);
    } finally {
      await rmdir(probe);
    }
    return { kind, dir };
  } catch {
    if (made) await rmdir(dir).catch(() => {});
    return null;
  }
}

async function detectAsync(controller: keyof typeof PROBES): Promise<Base | null> {
  if (off()) return null;
  const v2 = v2Parent();
  if (v2) {
    const b = await tryBaseAsync("v2", v2, controller);
    if (b) return b;
  }
  const v1 = v1Parent(controller);
  return v1 ? tryBaseAsync("v1", v1, controller) : null;
}

let detecting: Promise<void> | undefined;

/**
 * Find (and probe) the memory and CPU cgroup folders on the thread pool, once per process: a `mkdir`, `rmdir` or
 * `cgroup.subtree_control` write waits for the kernel's cgroup lock, so `cgroupSupport()` and `cpuCgroupSupport()`
 * answer from here without touching the cgroup filesystem on the event loop (jail.ts `jailReady` awaits it).
 */
export function cgroupsReady(): Promise<void> {
  detecting ??= (async () => {
    if (memBase === undefined) {
      const b = await detectAsync("memory");
      if (memBase === undefined) memBase = b;
    }
    if (cpuBase === undefined) {
      const b = await detectAsync("cpu");
      if (cpuBase === undefined) cpuBase = b;
    }
  })();
  return detecting;
}

/** Which cgroup memory bound jails get here, if any. */
export function cgroupSupport(): CgroupKind | null {
  if (memBase === undefined) memBase = detect("memory");
  return memBase ? memBase.kind : null;
}

/** Which cgroup CPU bound (`cpu.max` / CFS quota) jails get here, if any. */
export function cpuCgroupSupport(): CgroupKind | null {
  if (cpuBase === undefined) cpuBase = detect("cpu");
  return cpuBase ? cpuBase.kind : null;
}

/** A memory group and a CPU group for one jail (one folder on v2, one per hierarchy on v1), either may be absent. */
export class JailCgroup {
  /** The `cgroup.procs` file of every group the jail's first process joins. */
  readonly procsFiles: string[];

  private constructor(
    readonly memory: Base | undefined,
    readonly cpu: Base | undefined,
  ) {
    this.procsFiles = [...new Set([memory?.dir, cpu?.dir].filter((d): d is string => !!d))].map((d) =>
      join(d, "cgroup.procs"),
    );
  }

  /**
   * What making a jail's groups takes: the folders to make and the files to write (an optional one is skipped where
   * the kernel has no such file). Undefined where no group is wanted or usable.
   */
  private static plan(
    memoryMb: number | undefined,
    cpus: number,
  ):
    | { memory?: Base; cpu?: Base; dirs: string[]; writes: Array<{ file: string; value: string; optional?: boolean }> }
    | undefined {
    const id = `j${++seq}`;
    cgroupSupport();
    cpuCgroupSupport();
    const dirs: string[] = [];
    // one folder per hierarchy: on v2 memory and cpu share the jail's one folder (a process is in one v2 group)
    const group = (b: Base | null): Base | undefined => {
      if (!b) return undefined;
      const dir = join(b.dir, id);
      if (!dirs.includes(dir)) dirs.push(dir);
      return { kind: b.kind, dir };
    };
    const memory = memoryMb === undefined ? undefined : group(memBase ?? null);
    const cpu = cpus > 0 ? group(cpuBase ?? null) : undefined;
    if (!memory && !cpu) return undefined;
    const writes: Array<{ file: string; value: string; optional?: boolean }> = [];
    if (memory && memoryMb !== undefined) {
      const bytes = String(Math.floor(memoryMb * 1024 * 1024));
      if (memory.kind === "v2") {
        writes.push({ file: join(memory.dir, "memory.max"), value: bytes });
        writes.push({ file: join(memory.dir, "memory.swap.max"), value: "0", optional: true });
      } else {
        writes.push({ file: join(memory.dir, "memory.limit_in_bytes"), value: bytes });
        writes.push({ file: join(memory.dir, "memory.memsw.limit_in_bytes"), value: bytes, optional: true });
      }
    }
    if (cpu) {
      const quota = Math.max(1000, Math.round(cpus * CPU_PERIOD_US));
      if (cpu.kind === "v2") writes.push({ file: join(cpu.dir, "cpu.max"), value: `${quota} ${CPU_PERIOD_US}` });
      else {
        writes.push({ file: join(cpu.dir, "cpu.cfs_period_us"), value: String(CPU_PERIOD_US) });
        writes.push({ file: join(cpu.dir, "cpu.cfs_quota_us"), value: String(quota) });
      }
    }
    return { memory, cpu, dirs, writes };
  }

  /**
   * Groups capped at `memoryMb` for all the jail's processes together and at `cpus` CPUs (a CFS quota); undefined
   * where no cgroup is usable. `memoryMb` undefined: no memory group; `cpus` 0 or less: no CPU group. Made on this
   * thread: a `mkdir` in the cgroup filesystem waits for the kernel's cgroup lock, which another process joining a
   * group holds over an RCU grace period (ms to tens of ms on a loaded machine); `createAsync` waits on the thread
   * pool instead.
   */
  static create(memoryMb: number | undefined, cpus = 0): JailCgroup | undefined {
    const made: string[] = [];
    try {
      const p = JailCgroup.plan(memoryMb, cpus);
      if (!p) return undefined;
      for (const d of p.dirs) {
        mkdirSync(d);
        made.push(d);
      }
      for (const w of p.writes) if (!w.optional || existsSync(w.file)) writeFileSync(w.file, w.value);
      return new JailCgroup(p.memory, p.cpu);
    } catch {
      for (const d of made)
        try {
          rmdirSync(d);
        } catch {}
      return undefined;
    }
  }

  /** `create` with its folders made and its files written on the thread pool (never waiting on the event loop). */
  static async createAsync(memoryMb: number | undefined, cpus = 0): Promise<JailCgroup | undefined> {
    const made: string[] = [];
    try {
      const p = JailCgroup.plan(memoryMb, cpus);
      if (!p) return undefined;
      for (const d of p.dirs) {
        await mkdir(d);
        made.push(d);
      }
      for (const w of p.writes)
        await writeFile(w.file, w.value).catch((e: NodeJS.ErrnoException) => {
          if (!(w.optional && e.code === "ENOENT")) throw e;
        });
      return new JailCgroup(p.memory, p.cpu);
    } catch {
      await Promise.all(made.map((d) => rmdir(d).catch(() => {})));
      return undefined;
    }
  }

  /** Whether the group ran out of memory (a process in it was OOM-killed or an allocation failed). */
  hitLimit(): boolean {
    if (!this.memory) return false;
    try {
      if (this.memory.kind === "v2") {
        const ev = readFileSync(join(this.memory.dir, "memory.events"), "utf8");
        return /^(oom_kill|oom|max) [1-9]/m.test(ev);
      }
      return Number(readFileSync(join(this.memory.dir, "memory.failcnt"), "utf8")) > 0;
    } catch {
      return false;
    }
  }

  /** Peak memory of the whole group, bytes (where the kernel reports it). */
  peakBytes(): number | undefined {
    if (!this.memory) return undefined;
    try {
      const f = this.memory.kind === "v2" ? "memory.peak" : "memory.max_usage_in_bytes";
      return Number(readFileSync(join(this.memory.dir, f), "utf8"));
    } catch {
      return undefined;
    }
  }

  /** How often the CPU quota held the jail back: CFS periods it ran in and was throttled in (where reported). */
  cpuThrottled(): { periods: number; throttled: number } | undefined {
    if (!this.cpu) return undefined;
    try {
      const stat = readFileSync(join(this.cpu.dir, "cpu.stat"), "utf8");
      const num = (k: string) => Number(new RegExp(`^${k} (\\d+)`, "m").exec(stat)?.[1] ?? Number.NaN);
      return { periods: num("nr_periods"), throttled: num("nr_throttled") };
    } catch {
      return undefined;
    }
  }

  /**
   * Remove the groups once their processes are gone (retried for a while: the kernel frees them asynchronously), on
   * the thread pool: an `rmdir` in the cgroup filesystem waits for the kernel's cgroup lock as a `mkdir` does.
   */
  remove(tries = 50): void {
    const left = [this.memory?.dir, this.cpu?.dir].filter((d, i, a): d is string => !!d && a.indexOf(d) === i);
    const again = async (dirs: string[], n: number) => {
      const still: string[] = [];
      for (const d of dirs)
        await rmdir(d).catch((e: NodeJS.ErrnoException) => {
          if (e.code !== "ENOENT") still.push(d);
        });
      if (still.length && n > 0) setTimeout(() => void again(still, n - 1), 100).unref();
    };
    void again(left, tries);
  }
}
