/**
 * The jail run_code and run_python run in (Linux; util-linux `unshare`, `chroot`, `setpriv`, `prlimit`; bash).
 *
 * `spawnJail` starts one long-lived jailed process (an interpreter waiting on its stdin for code, see
 * live-jail.ts). The chain, from the host:
 * - (with a cgroup) `sh` writes its own pid into the jail's memory and CPU cgroups, then execs the rest: every
 *   process of the jail is born in the groups, so the memory cap and the CPU quota (`cpus`) hold for the jail as a
 *   whole (cgroup.ts; without a CPU group live-jail.ts throttles the jail itself, freeze.ts);
 * - `setpriv --pdeathsig KILL`: the jail dies with the env process, even when that is SIGKILLed; when the env runs as
 *   root, the same setpriv also becomes uid/gid 65534 (nobody), so the jail's user namespace maps to an unprivileged
 *   host uid — the kernel then enforces RLIMIT_NPROC (it never does for host root);
 * - `unshare -rmnpi --fork --kill-child`: new user, mount, network, PID and IPC namespaces; the shell inside dies
 *   with it. The IPC namespace holds the jail's SysV shared memory, semaphores and message queues: no other jail and
 *   no host process sees them, and the kernel frees them all when the jail's last process ends. The shell caps them
 *   in that namespace (`kernel.shmall`/`shmmax` at the jail's memory cap, 16 message queues, 4096 semaphores) where
 *   the kernel lets a namespace's owner set them. Where IPC namespaces are missing the jail starts without one
 *   (`ipcIsolated()` says so);
 * - bash closes every inherited fd from 3 up, builds the root: `/` is a small tmpfs, remounted read-only once built,
 *   holding only read-only (`ro,nosuid,nodev`) binds of the paths named in the spec (the interpreter binary, its
 *   libraries, single files in `/box`) and `/dev/{null,zero,urandom}`; `/work` is a tmpfs of `diskMb` (writes past it
 *   fail with ENOSPC). The folders are made by one `mkdir -p` and every mount is done by one `mount -a` from an fstab
 *   in the box folder (bind-lines.ts): five processes, whatever the number of binds;
 * - the shell's `ulimit` (address space or data segment per process, processes, file size, open files, no core
 *   dumps; soft and hard), then `env -i` (only the spec's variables: no PWD, OLDPWD or any host variable), `chroot`,
 *   and `setpriv` dropping every capability (no new privileges). The interpreter is the PID namespace's first
 *   process: when it dies, the kernel kills everything left in the jail.
 * The network namespace has only a down loopback. No workspace, package folder or gold file exists in the jail; the
 * workbook comes in and goes out as bytes over the pipe (no host path is writable from inside).
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  realpathSync,
  renameSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { LIB_DIRS, q, RootPlan } from "./bind-lines.js";
import { cgroupsReady, JailCgroup } from "./cgroup.js";
import { spawnCaptured } from "./spawn-captured.js";
import { type JailProcess, spawnerReady, spawnJailProcess } from "./spawner.js";

export interface JailSpec {
  /** Host paths (files or folders) bound read-only at the same path inside the jail. */
  readOnly: string[];
  /** Host files bound read-only into the jail's `/box` under the given names. */
  box: Record<string, string>;
  /** The program and its arguments, as seen inside the jail. */
  argv: string[];
  /** The program's whole environment. */
  env: Record<string, string>;
  /** Memory cap in MB: for the whole jail (cgroup) where available, and per process (`memoryLimit`) always. */
  memoryMb: number;
  memoryLimit: "as" | "data";
  /** Size of the `/work` tmpfs, and the largest file the program may write, in MB. */
  diskMb: number;
  /** Processes (threads included) the jail may hold at once (RLIMIT_NPROC). */
  maxProcs: number;
  /** CPUs the jail may use at once, all its processes together (default `defaultJailCpus()`; 0: no bound). */
  cpus?: number;
}

/** CPUs a jail may use at once by default (a cgroup CPU quota, else the host's throttle). */
export const JAIL_CPUS = 1;

/** The CPU bound of a jail whose spec names none: `BENCHMAX_JAIL_CPUS` (a number, 0: none), else `JAIL_CPUS`. */
export function defaultJailCpus(): number {
  const v = Number(process.env.BENCHMAX_JAIL_CPUS);
  return process.env.BENCHMAX_JAIL_CPUS && Number.isFinite(v) && v >= 0 ? v : JAIL_CPUS;
}

/** The uid/gid the jail maps to on the host when the env runs as root. */
export const JAIL_HOST_ID = 65534;

/** The mount point every jail builds its root on (in its own mount namespace): world-traversable, owned by us. */
function mountPoint(): string {
  return ownedFolder("benchmax-jail-root");
}

/** A folder of ours that the jail's unprivileged uid can traverse (0755, owned by this process's uid, no symlink). */
function ownedFolder(name: string): string {
  const uid = process.getuid?.() ?? 0;
  const dir = join(tmpdir(), `${name}-${uid}`);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o755 });
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o022) !== 0)
    throw new Error(`jail: ${dir} is not a folder owned by uid ${uid} and writable only by it`);
  chmodSync(dir, 0o755);
  return dir;
}

/** Where files the jail binds into `/box` are kept (readable by the jail's uid, writable only by ours). */
export function boxFolder(): string {
  return ownedFolder("benchmax-jail-box");
}

/**
 * A file the jail binds into `/box` (a runner script): written once per content into a folder the jail's uid can
 * read (a workspace folder is private to the env's uid).
 */
export function boxFile(name: string, content: string): string {
  const hash = createHash("sha256").update(content).digest("hex").slice(0, 16);
  const path = join(boxFolder(), `${hash}-${name}`);
  if (!existsSync(path)) {
    const tmp = `${path}.${process.pid}.tmp`;
    writeFileSync(tmp, content, { mode: 0o644 });
    renameSync(tmp, path);
  }
  return path;
}

const copies = new Map<string, string>();
/** A copy of a host file in the box folder (a package folder may sit under a home the jail's uid cannot traverse). */
export function boxCopy(hostPath: string): string {
  const st = statSync(hostPath);
  const key = `${realpathSync(hostPath)}\0${st.size}\0${st.mtimeMs}`;
  let path = copies.get(key);
  if (!path || !existsSync(path)) {
    const hash = createHash("sha256").update(key).digest("hex").slice(0, 16);
    path = join(boxFolder(), `${hash}-${basename(hostPath)}`);
    if (!existsSync(path)) {
      const tmp = `${path}.${process.pid}.tmp`;
      copyFileSync(hostPath, tmp);
      chmodSync(tmp, 0o644);
      renameSync(tmp, path);
    }
    copies.set(key, path);
  }
  return path;
}

/** The host path of `chroot` (named in full: no PATH search, no `command -v` subshell per start). */
function chrootPath(): string {
  return ["/usr/sbin/chroot", "/usr/bin/chroot", "/sbin/chroot", "/bin/chroot"].find((p) => existsSync(p)) ?? "chroot";
}

/** The jail's root, planned (bind-lines.ts): its mounts go to one `mount -a` from an fstab in the box folder. */
export function rootPlan(spec: JailSpec, root: string): RootPlan {
  const plan = new RootPlan(root)
    .dir("/work")
    .dir("/box")
    .hostPaths([...LIB_DIRS, "/usr/bin/setpriv", ...spec.readOnly]);
  for (const [name, host] of Object.entries(spec.box)) plan.bindRo(host, `/box/${name}`, false);
  for (const d of ["null", "zero", "urandom"]) plan.device(d);
  return plan.tmpfs("benchmax-work", "/work", `size=${Math.ceil(spec.diskMb)}m,mode=700,nosuid,nodev`);
}

/**
 * The script the jail's shell runs (bash, inside the namespaces). Processes it starts: `mount` (the root's tmpfs),
 * one `mkdir -p`, one `ln`, `mount -a` (every bind and the `/work` tmpfs), `mount` (the root made read-only); then
 * it sets the limits with its own `ulimit` and execs `env -i`, `chroot`, `setpriv` and the program.
 */
export function script(spec: JailSpec, root: string): string {
  const kb = 1024;
  const plan = rootPlan(spec, root);
  const fstab = boxFile("fstab", plan.fstab());
  const limit = spec.memoryLimit === "as" ? "-v" : "-d";
  return [
    // every inherited descriptor from 3 up is closed before anything else runs
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, not a template
    'for f in /proc/self/fd/*; do n=${f##*/}; if [ "$n" -gt 2 ] 2>/dev/null; then eval "exec $n>&-" 2>/dev/null; fi; done',
    "set -e",
    `R=${q(root)}`,
    'mount -t tmpfs -o size=4m,mode=755 benchmax-jail "$R"',
    ...plan.prepare(),
    `mount -a -T ${q(fstab)}`,
    'mount -o remount,bind,ro "$R"',
    ...ipcCaps(spec),
    'cd "$R/work"',
    // the shell's own ulimit sets soft and hard limits alike (as prlimit did), in KiB for memory and file size
    [
      "ulimit",
      `${limit} ${Math.floor(spec.memoryMb * kb)}`,
      `-u ${Math.floor(spec.maxProcs)}`,
      `-f ${Math.floor(spec.diskMb * kb)}`,
      "-n 256",
      "-c 0",
    ].join(" "),
    [
      "exec /usr/bin/env -i",
      ...Object.entries(spec.env).map(([k, v]) => q(`${k}=${v}`)),
      q(chrootPath()),
      '"$R"',
      "/usr/bin/setpriv",
      "--no-new-privs",
      "--bounding-set=-all",
      "--inh-caps=-all",
      "--",
      ...spec.argv.map(q),
    ].join(" "),
  ].join("\n");
}

/** The namespaces every jail gets (the IPC namespace where the kernel has them, see `jailAvailable`). */
function unshareArgs(): string[] {
  return [jailNamespaceFlags(), "--fork", "--kill-child"];
}

/** `unshare`'s namespace flags for a jail here: user, mount, network, PID, and IPC where available. */
export function jailNamespaceFlags(): string {
  jailAvailable();
  return ipcNs ? "-rmnpi" : "-rmnp";
}

/** Whether jails get an IPC namespace of their own here. */
export function ipcIsolated(): boolean {
  return jailAvailable().ok && ipcNs;
}

/**
 * The lines that cap SysV IPC inside the jail's own IPC namespace (its shell still sees the host's /proc, whose
 * `kernel.*` IPC files are those of the writer's IPC namespace): shared memory at the jail's memory cap in all, 16
 * message queues (16 KB each by default), 4096 semaphores. Only where the probe could write them.
 */
function ipcCaps(spec: JailSpec): string[] {
  if (!ipcNs || !ipcSysctl) return [];
  const bytes = Math.floor(spec.memoryMb * 1024 * 1024);
  const pages = Math.ceil(bytes / pageSize);
  const k = "/proc/sys/kernel";
  return [
    `{ echo ${pages} > ${k}/shmall && echo ${bytes} > ${k}/shmmax && echo 16 > ${k}/msgmni && echo '64 4096 32 64' > ${k}/sem; } 2>/dev/null || :`,
  ];
}
/** No startup files: bash reads ~/.bashrc when its stdin is a socket (as Node's stdio pipes are). */
const BASH = ["/bin/bash", "--norc", "--noprofile", "-c"];

/** setpriv before unshare: die with the env process; as root, also become the unprivileged host uid. */
function privDrop(): string[] {
  const root = process.getuid?.() === 0;
  return [
    "setpriv",
    "--pdeathsig",
    "KILL",
    ...(root ? [`--reuid=${JAIL_HOST_ID}`, `--regid=${JAIL_HOST_ID}`, "--clear-groups"] : []),
    "--",
  ];
}

let available: { ok: boolean; reason: string } | undefined;
let probing: Promise<{ ok: boolean; reason: string }> | undefined;
let ipcNs = false;
let ipcSysctl = false;
let pageSize = 4096;

/** What a probe run of the jail's namespaces gave: its exit status and output. */
interface ProbeRun {
  status: number | null;
  stdout: string;
  stderr: string;
  error?: string;
}

/** Why the jail cannot be built here, before any probe runs (undefined: probe it). */
function missing(): string | undefined {
  if (process.platform !== "linux") return "the jail needs Linux namespaces";
  if (!existsSync("/usr/bin/setpriv")) return "setpriv (util-linux) is missing";
  if (!existsSync("/bin/bash")) return "bash is missing";
  return undefined;
}

/** The probe's command line: `flags`' namespaces, a tmpfs mount on the jail's mount point, the tools it needs. */
function probeArgv(flags: string): string[] {
  return [
    ...privDrop(),
    "unshare",
    flags,
    "--fork",
    "--kill-child",
    ...BASH,
    [
      `mount -t tmpfs -o size=1m probe ${q(mountPoint())} && command -v prlimit chroot env >/dev/null && {`,
      // only inside a new IPC namespace: whether its owner may set its limits (the jail's script does)
      flags.includes("i") ? "if { echo 16 > /proc/sys/kernel/msgmni; } 2>/dev/null; then echo ipc-sysctl; fi;" : "",
      "getconf PAGESIZE 2>/dev/null || :; }",
    ].join(" "),
  ];
}

const PROBE_ENV = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };
const PROBE_TIMEOUT_MS = 5000;

/** The verdict from the probe with an IPC namespace and (when that failed) the one without. */
function verdict(withIpc: ProbeRun, withoutIpc: ProbeRun | undefined): { ok: boolean; reason: string } {
  ipcNs = withIpc.status === 0;
  const r = ipcNs ? withIpc : (withoutIpc ?? withIpc);
  if (r.status === 0) {
    ipcSysctl = ipcNs && r.stdout.includes("ipc-sysctl");
    pageSize = Number(/^(\d+)$/m.exec(r.stdout)?.[1]) || 4096;
  }
  const lastLine = (x: ProbeRun) => (x.stderr || x.error || `exit ${x.status}`).trim().split("\n").pop();
  return r.status === 0
    ? {
        ok: true,
        reason: ipcNs
          ? `user, mount, network, PID and IPC namespaces${ipcSysctl ? "" : " (the IPC limits could not be set: the memory cap bounds shared memory only where a cgroup does)"}`
          : `user, mount, network and PID namespaces; NO IPC namespace (unshare -i failed: ${lastLine(withIpc)})`,
      }
    : { ok: false, reason: `unshare -rmnp with a tmpfs mount failed here (${lastLine(r)})` };
}

/**
 * Whether the jail can be built on this machine (and why not). The first call probes it with two short runs of
 * `unshare` waited for on this thread (tens of ms, more on a loaded machine): code on a hot path awaits
 * `jailReady()` instead, which probes without holding the event loop; either one's answer serves both.
 */
export function jailAvailable(): { ok: boolean; reason: string } {
  if (!available) {
    const why = missing();
    if (why) available = { ok: false, reason: why };
    else {
      const run = (flags: string): ProbeRun => {
        const argv = probeArgv(flags);
        const r = spawnSync(argv[0]!, argv.slice(1), { encoding: "utf8", timeout: PROBE_TIMEOUT_MS, env: PROBE_ENV });
        return { status: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "", error: r.error?.message };
      };
      const withIpc = run("-rmnpi");
      available = verdict(withIpc, withIpc.status === 0 ? undefined : run("-rmnp"));
    }
  }
  return available;
}

/**
 * `jailAvailable()` without holding the event loop: the probes run as child processes forked by the jail helper
 * (spawner.ts) and are awaited, and the cgroup folders are found on the thread pool (cgroup.ts `cgroupsReady`). One probe per process (later
 * calls share it); an env that offers a code tool starts it when it is created, so a rollout's first call finds the
 * answer ready.
 */
export function jailReady(): Promise<{ ok: boolean; reason: string }> {
  probing ??= (async () => {
    if (!available) {
      const why = missing();
      if (why) return (available ??= { ok: false, reason: why });
      const run = async (flags: string): Promise<ProbeRun> => {
        try {
          const r = await spawnCaptured(probeArgv(flags), PROBE_ENV, PROBE_TIMEOUT_MS, 64 * 1024);
          return { ...r, status: r.timedOut ? null : r.status, error: r.timedOut ? "timed out" : undefined };
        } catch (e) {
          return { status: null, stdout: "", stderr: "", error: (e as Error).message };
        }
      };
      const withIpc = await run("-rmnpi");
      const v = verdict(withIpc, withIpc.status === 0 ? undefined : await run("-rmnp"));
      available ??= v;
    }
    // the cgroup folders are found (and probed) once per process, on the thread pool
    if (available.ok) await cgroupsReady();
    return available;
  })();
  return probing;
}

/**
 * The command line that starts `spec.argv` in a fresh jail, without the memory group's first step (spawnJail adds
 * it): run it with the environment `{PATH}` only. The benchmark of jail starts (bench/jail-start.mjs) times it.
 */
export function jailStartCommand(spec: JailSpec): string[] {
  return [...privDrop(), "unshare", ...unshareArgs(), ...BASH, script(spec, mountPoint())];
}

/**
 * `argv` run by a first process that joins every group of `cgroup` (one `cgroup.procs` per hierarchy) and then execs
 * it, so every process it starts is born in the groups; `argv` itself without a group.
 */
export function inGroups(cgroup: JailCgroup | undefined, argv: string[]): string[] {
  if (!cgroup) return argv;
  const enter = 'n=$0; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 1; shift; n=$((n - 1)); done; exec "$@"';
  return ["/bin/sh", "-c", enter, String(cgroup.procsFiles.length), ...cgroup.procsFiles, ...argv];
}

/** A started jail: its host-side process (stdin/stdout/stderr pipes) and its memory and CPU groups, if any. */
export interface SpawnedJail {
  child: JailProcess;
  /** Set once the groups are made (before the jail's first process is spawned); undefined where there are none. */
  cgroup?: JailCgroup;
}

/**
 * Start `spec.argv` in a fresh jail; the caller talks to it over its stdio and kills `child` to end it.
 * `nice` > 0 starts every process of the jail at that lower priority (a warm pool's start, which nobody waits for).
 * With the spawner helper, the jail's groups are made on the thread pool and the helper spawns the jail once they
 * are (`cgroup` is set by then): nothing of a start waits on the event loop but the planning of its root.
 */
export function spawnJail(spec: JailSpec, nice = 0): SpawnedJail {
  const cpus = spec.cpus ?? defaultJailCpus();
  const niced = nice > 0 && existsSync("/usr/bin/nice") ? ["/usr/bin/nice", "-n", String(Math.floor(nice)), "--"] : [];
  const command = [...niced, ...jailStartCommand(spec)];
  const env = { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" };
  // from a small helper process (spawner.ts): a fork of the env process itself costs in proportion to its memory
  if (spawnerReady()) {
    const out = {} as SpawnedJail;
    const argv = JailCgroup.createAsync(spec.memoryMb, cpus).then((cgroup) => {
      if (cgroup) {
        out.cgroup = cgroup;
        out.child.once("exit", () => cgroup.remove());
      }
      return inGroups(cgroup, command);
    });
    out.child = spawnJailProcess(argv, env);
    return out;
  }
  const cgroup = JailCgroup.create(spec.memoryMb, cpus);
  const child = spawnJailProcess(inGroups(cgroup, command), env);
  if (cgroup) child.once("exit", () => cgroup.remove());
  return { child, cgroup };
}
