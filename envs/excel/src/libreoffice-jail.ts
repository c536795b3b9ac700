/**
 * The jail one LibreOffice conversion batch runs in (Linux; util-linux `unshare`, `chroot`, `setpriv`, `prlimit`),
 * built like the code tools' jail (sandbox/jail.ts):
 * - `setpriv --pdeathsig KILL unshare -rmnpi --fork --kill-child`: new user, mount, network, PID and IPC namespaces
 *   (no IPC namespace where the kernel has none: sandbox/jail.ts `jailNamespaceFlags`). The network namespace has
 *   only a down loopback, so no host, port or URL can be reached; the IPC namespace holds whatever SysV IPC the batch
 *   makes, freed with it and seen by no other batch or jail. When the host kills the process group (time limit) or
 *   the env process dies, the namespace's first process dies and the kernel kills everything in the PID namespace
 *   (`soffice.bin` included, not just the `oosplash` launcher).
 * - A CPU cgroup of its own where one is writable (sandbox/cgroup.ts): the batch uses at most `defaultJailCpus()`
 *   CPUs (1 unless BENCHMAX_JAIL_CPUS says otherwise), all its processes together, and competes with the code tools'
 *   jails as one entity. The group is removed once the batch's process has exited (`runGroup`).
 * - `/` is a small tmpfs, remounted read-only once built: read-only binds of the LibreOffice install folder, the
 *   shared-library folders, the fonts and their configuration, `env`, `setpriv`, and `/dev/{null,zero,urandom}`.
 *   No `/proc`, no `/etc/passwd`, no home, no workspace, no dataset folder.
 * - `/s` is a tmpfs of `diskMb`: `/s/i` (mode 0111: not listable) holds only this batch's inputs, each under an
 *   unguessable random name; `/s/o` (0300) receives the outputs; `/s/p/<random>` (in a 0111 folder) is a fresh copy
 *   of a profile made once per process (a standby's, libreoffice-serve.ts, holds one file at a time, `x<k>.xlsx`,
 *   moved in once the last is out); `/tmp` and `/var/tmp` point to `/s/t` (0300). Inside, soffice runs after
 *   `chroot` with every capability dropped, so root obeys mode bits (checked: `ls /s/i` is refused in the jail).
 * - `prlimit`: address space (`memoryMb`), file size, open files, no core dumps; as root, `setpriv` first makes the
 *   jail's user namespace map to the unprivileged host uid `LO_HOST_ID`, so a process cap holds too (`--nproc`).
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdirSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { SERVE_FAILED, SERVE_MODULE, SERVE_MODULE_PATH, SERVE_READY, serveMacroUrl } from "./libreoffice-serve.js";
import { LIB_DIRS, q, RootPlan } from "./sandbox/bind-lines.js";
import { cgroupsReady, JailCgroup } from "./sandbox/cgroup.js";
import { defaultJailCpus, inGroups, jailAvailable, jailNamespaceFlags } from "./sandbox/jail.js";
import { spawnJailProcess } from "./sandbox/spawner.js";

/**
 * The unprivileged host uid/gid the jail's user namespace maps to when the env runs as root, so the kernel enforces
 * the process cap (it never does for host root). Not 65534: the code tools' jails count their processes there.
 */
export const LO_HOST_ID = 65533;
/** Most processes and threads of all LibreOffice jails together (soffice.bin runs about 20 threads). */
const LO_NPROC = 1024;

const asRoot = () => process.getuid?.() === 0;

/** Hand a host folder (and what is in it) to the jail's host uid: its setup reads inputs and writes outputs there. */
function giveToJail(dir: string): void {
  chownSync(dir, LO_HOST_ID, LO_HOST_ID);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) giveToJail(p);
    else if (e.isFile()) chownSync(p, LO_HOST_ID, LO_HOST_ID);
  }
}

/** Hand a file written after the jail started (a standby's input) to the jail's host uid. */
export function giveFileToJail(path: string): void {
  if (asRoot()) chownSync(path, LO_HOST_ID, LO_HOST_ID);
}

/** Exit status of the jail script when the jail itself could not be built (an infra fault, never the file's). */
export const JAIL_SETUP_FAILED = 97;

/** Fonts (a conversion lays out text) and the tables LibreOffice reads at start; all read-only. */
const SHARE_DIRS = [
  "/usr/share/fonts",
  "/usr/share/fontconfig",
  "/etc/fonts",
  "/var/cache/fontconfig",
  "/usr/share/libreoffice",
  "/etc/libreoffice",
  "/usr/share/zoneinfo",
  "/usr/share/icu",
];

/** Registry settings written into the profile: links never updated, macros never run, no recent-documents list. */
const REGISTRY = `<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Content/Update"><prop oor:name="Link" oor:op="fuse"><value>2</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="MacroSecurityLevel" oor:op="fuse"><value>3</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Security/Scripting"><prop oor:name="DisableMacrosExecution" oor:op="fuse"><value>true</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/History"><prop oor:name="PickListSize" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Common/Misc"><prop oor:name="UseLocking" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
`;

/** Where LibreOffice is installed: the folder holding `program/soffice.bin`, found from the soffice command. */
export function officeInstallDir(soffice: string): string | null {
  let bin = soffice;
  if (!bin.includes("/")) {
    const r = spawnSync("sh", ["-c", `command -v ${q(bin)}`], { encoding: "utf8" });
    bin = r.stdout.trim();
    if (!bin) return null;
  }
  try {
    const program = dirname(realpathSync(bin));
    return existsSync(join(program, "soffice.bin")) ? dirname(program) : null;
  } catch {
    return null;
  }
}

let probed: Map<string, { ok: boolean; reason: string }> | undefined;

/** Whether soffice can run in the jail here, and why not. */
export function sofficeJailAvailable(soffice: string): { ok: boolean; reason: string } {
  probed ??= new Map();
  let r = probed.get(soffice);
  if (!r) {
    const ns = jailAvailable();
    const dir = officeInstallDir(soffice);
    if (!ns.ok) r = ns;
    else if (!dir) r = { ok: false, reason: `no program/soffice.bin next to ${soffice} (a wrapper script?)` };
    else if (!existsSync("/usr/bin/env")) r = { ok: false, reason: "/usr/bin/env is missing" };
    else r = { ok: true, reason: `${ns.reason}; LibreOffice from ${dir}` };
    probed.set(soffice, r);
  }
  return r;
}

export interface SofficeJailSpec {
  /** The LibreOffice install folder (holds `program/soffice.bin`). */
  installDir: string;
  /** Host folder of this batch: inputs are read from `<hostDir>/in/<name>`, outputs land in `<hostDir>/out/<name>`. */
  hostDir: string;
  /** Input file names (already in `<hostDir>/in`), random and unguessable. */
  names: string[];
  /** Host folder of the profile template, copied in fresh (read-only use). */
  template: string;
  /** Make the template instead of converting: the template folder is bound writable, and no file is converted. */
  makeTemplate?: boolean;
  /**
   * A standby (libreoffice-serve.ts): no file at start (`names` empty); soffice runs the serve macro from its profile
   * copy, and the jail moves each `x<k>.xlsx` the host puts in `<hostDir>/in` into `/s/i`, and each output from
   * `/s/o` to `<hostDir>/out` (the input with it).
   */
  serve?: boolean;
  memoryMb: number;
  diskMb: number;
}

/**
 * The jail's root, planned (sandbox/bind-lines.ts): folders and mount points made by the script, every mount done by
 * one `mount -a` from `<hostDir>/fstab` (written by `jailCommand`).
 */
export function rootPlan(spec: SofficeJailSpec): RootPlan {
  return new RootPlan(join(spec.hostDir, ".jail"))
    .hostPaths([...LIB_DIRS, spec.installDir, ...SHARE_DIRS, "/usr/bin/env", "/usr/bin/setpriv"])
    .device("null")
    .device("zero")
    .device("urandom")
    .tmpfs("benchmax-lo-scratch", "/s", `size=${Math.ceil(spec.diskMb)}m,mode=755,nosuid,nodev`)
    .dir("/var");
}

/** The shell script run as the namespace's first process. */
export function jailScript(spec: SofficeJailSpec): string {
  const plan = rootPlan(spec);
  const program = join(spec.installDir, "program");
  const profile = spec.makeTemplate ? "/s/p/t" : `/s/p/${randomBytes(16).toString("hex")}`;
  const office = [
    "/usr/bin/env",
    "-i",
    "PATH=/usr/bin:/bin",
    `HOME=${profile}`,
    "TMPDIR=/s/t",
    "SAL_USE_VCLPLUGIN=svp",
    "SAL_ENABLE_FILE_LOCKING=0",
    "SAL_NO_NWF=1",
    `LD_LIBRARY_PATH=${program}`,
    join(program, "soffice.bin"),
    `-env:UserInstallation=file://${profile}`,
    "--headless",
    "--invisible",
    "--norestore",
    "--nolockcheck",
    "--nologo",
    "--nodefault",
    ...(spec.makeTemplate
      ? ["--terminate_after_init"]
      : spec.serve
        ? [serveMacroUrl("/s/i", "/s/o")]
        : [
            "--calc",
            "--convert-to",
            "xlsx:Calc MS Excel 2007 XML",
            "--outdir",
            "/s/o",
            ...spec.names.map((n) => `/s/i/${n}`),
          ]),
  ];
  const run = [
    "prlimit",
    `--as=${Math.floor(spec.memoryMb * 1024 * 1024)}`,
    `--fsize=${Math.floor(spec.diskMb * 1024 * 1024)}`,
    ...(asRoot() ? [`--nproc=${LO_NPROC}`] : []),
    "--nofile=1024",
    "--core=0",
    "--",
    "chroot",
    '"$R"',
    "/usr/bin/setpriv",
    "--no-new-privs",
    "--bounding-set=-all",
    "--inh-caps=-all",
    "--",
    ...office.map(q),
  ].join(" ");
  const lines = [
    `trap 'exit ${JAIL_SETUP_FAILED}' EXIT`,
    "set -e",
    `R=${q(plan.root)}`,
    `H=${q(spec.hostDir)}`,
    'mount -t tmpfs -o size=4m,mode=755 benchmax-lo "$R"',
    ...plan.prepare(),
    'mount -a -T "$H/fstab"',
    // LibreOffice's own pipe lives in /tmp (then /var/tmp): both point into the scratch tmpfs
    'mkdir -m 300 "$R/s/t"; ln -s s/t "$R/tmp"; ln -s ../s/t "$R/var/tmp"',
    'mkdir -m 111 "$R/s/i"; mkdir -m 300 "$R/s/o"; mkdir -m 111 "$R/s/p"',
    spec.makeTemplate
      ? `mkdir "$R${profile}"; mount --bind ${q(spec.template)} "$R${profile}"`
      : `cp -a ${q(spec.template)} "$R${profile}"`,
    ...spec.names.map((n) => `cp "$H/in/"${q(n)} "$R/s/i/"${q(n)}; chmod 400 "$R/s/i/"${q(n)}`),
    ...(spec.serve
      ? [`mkdir -p "$R${profile}/${dirname(SERVE_MODULE_PATH)}"; cp "$H/serve.xba" "$R${profile}/${SERVE_MODULE_PATH}"`]
      : []),
    'mount -o remount,bind,ro "$R"',
    "trap - EXIT",
    "set +e",
    // each output leaves the jail as soon as LibreOffice has renamed it into place (it writes a temp file first), so
    // the host sees the batch's progress file by file: a file that holds the batch is found without re-running it
    ...(spec.names.length ? [`(while :; do ${copyOut(spec.names)}; sleep 0.05; done) &`] : []),
    // a standby idles unref'd: it ends itself once the env process is gone (without this check, a spare was seen
    // outliving its env process: the parent-death signal did not reach it)
    ...(spec.serve
      ? [`(while :; do ${serveCopies()}; [ -d /proc/${process.pid} ] || kill -9 -1 2>/dev/null; sleep 0.05; done) &`]
      : []),
    spec.makeTemplate ? `${run}; rc=$?; if [ "$rc" = 81 ]; then ${run}; rc=$?; fi` : `${run}; rc=$?`,
    // whatever LibreOffice left running (and the copier) dies before the last outputs are copied
    "kill -9 -1 2>/dev/null",
    ...(spec.names.length ? [copyOut(spec.names)] : []),
    ...(spec.serve ? [serveCopies()] : []),
    'exit "$rc"',
  ];
  return lines.join("\n");
}

/**
 * Copy the outputs that exist (regular files, never links) to `$H/out`, each once, through a dot-named temp file
 * renamed into place: a name the host sees in `$H/out` is a whole file.
 */
function copyOut(names: string[]): string {
  return `for n in ${names.map(q).join(" ")}; do f="$R/s/o/$n"; if [ ! -e "$H/out/$n" ] && [ -f "$f" ] && [ ! -L "$f" ]; then cp "$f" "$H/out/.$n" && mv "$H/out/.$n" "$H/out/$n"; fi; done`;
}

/**
 * A standby's copies: each `x<k>.xlsx` the host put in `$H/in` moves into `/s/i` (read-only, renamed into place once
 * whole), and each output (and the ready and failed marks) in `/s/o` moves to `$H/out` the same way, its input
 * removed with it. LibreOffice writes under dot names, which `x*` does not match.
 */
function serveCopies(): string {
  return [
    `for f in "$H/in/"x*.xlsx; do [ -f "$f" ] || continue; n="\${f##*/}"; cp "$f" "$R/s/i/.$n" && chmod 400 "$R/s/i/.$n" && mv "$R/s/i/.$n" "$R/s/i/$n" && rm -f "$f"; done`,
    `for f in "$R/s/o/"x*.xlsx "$R/s/o/${SERVE_READY}" "$R/s/o/${SERVE_FAILED}"; do [ -f "$f" ] && [ ! -L "$f" ] || continue; n="\${f##*/}"; cp "$f" "$H/out/.$n" && mv "$H/out/.$n" "$H/out/$n" && rm -f "$f" "$R/s/i/$n"; done`,
  ].join("; ");
}

/** The CPU group of each command line `jailCommand` made, removed by `runGroup` once that command has exited. */
const groups = new WeakMap<string[], JailCgroup>();

/**
 * The command line that runs the jail (the caller spawns it in its own process group, with `runGroup`: that removes
 * its CPU group afterwards). Its CPU group is made on the thread pool (`JailCgroup.createAsync`), as a code jail's is:
 * a cgroupfs `mkdir` waits on the kernel's cgroup lock, and one LibreOffice batch starts per process.
 */
export async function jailCommand(spec: SofficeJailSpec): Promise<string[]> {
  mkdirSync(join(spec.hostDir, ".jail"), { recursive: true });
  if (asRoot()) giveToJail(spec.hostDir);
  // readable by the jail (its host uid owns the folder), written by this process only
  writeFileSync(join(spec.hostDir, "fstab"), rootPlan(spec).fstab(), { mode: 0o644 });
  if (spec.serve) writeFileSync(join(spec.hostDir, "serve.xba"), SERVE_MODULE, { mode: 0o644 });
  await cgroupsReady();
  const cgroup = await JailCgroup.createAsync(undefined, defaultJailCpus());
  const argv = inGroups(cgroup, [
    "setpriv",
    "--pdeathsig",
    "KILL",
    ...(asRoot() ? [`--reuid=${LO_HOST_ID}`, `--regid=${LO_HOST_ID}`, "--clear-groups"] : []),
    "--",
    "unshare",
    jailNamespaceFlags(),
    "--fork",
    "--kill-child",
    "sh",
    "-c",
    jailScript(spec),
  ]);
  if (cgroup) groups.set(argv, cgroup);
  return argv;
}

/** Write the profile's settings (links never updated, macros off, no recent documents) into a profile folder. */
export function writeProfileSettings(profile: string): void {
  mkdirSync(join(profile, "user"), { recursive: true });
  writeFileSync(join(profile, "user", "registrymodifications.xcu"), REGISTRY);
}

/** Make the profile template: one jailed start of LibreOffice with the template folder writable. */
export async function makeProfileTemplate(
  installDir: string,
  template: string,
  scratch: string,
  memoryMb: number,
  timeoutMs: number,
): Promise<void> {
  writeProfileSettings(template);
  if (asRoot()) giveToJail(template);
  mkdirSync(join(scratch, "in"), { recursive: true });
  mkdirSync(join(scratch, "out"), { recursive: true });
  try {
    const argv = await jailCommand({
      installDir,
      hostDir: scratch,
      names: [],
      template,
      makeTemplate: true,
      memoryMb,
      diskMb: 256,
    });
    const { code, stderr, timedOut } = await runGroup(argv, timeoutMs);
    if (timedOut) throw new Error(`making the LibreOffice profile timed out after ${timeoutMs} ms`);
    if (code !== 0)
      throw new Error(`making the LibreOffice profile failed (exit ${code}): ${stderr.trim().slice(-300)}`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export interface GroupRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  timedOut: boolean;
  pid: number | undefined;
}

/**
 * Spawn `argv` as the leader of a new process group with a clean environment and SIGKILL the whole group after
 * `timeoutMs`. Resolves once every holder of its stderr is gone (so nothing it started is still running). Forked by
 * the jail helper (sandbox/spawner.ts), not by this process: a fork of a large env process stalls its event loop.
 */
export function runGroup(
  argv: string[],
  timeoutMs: number,
  onSpawn?: (pid: number) => void,
  signal?: AbortSignal,
  /** Keep this process alive until the group exits (default); false for one that may idle (a LibreOffice spare). */
  hold = true,
): Promise<GroupRun> {
  return new Promise((resolve, reject) => {
    const child = spawnJailProcess(
      argv,
      { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
      { stdio: ["ignore", "ignore", "pipe"], detached: true, holdUntilExit: hold },
    );
    if (!hold) {
      (child as { unref?: () => void }).unref?.();
      (child.stderr as { unref?: () => void }).unref?.();
    }
    child.once("spawn", () => {
      if (child.pid !== undefined) onSpawn?.(child.pid);
    });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => {
      if (stderr.length < 100_000) stderr += d.toString();
    });
    let timedOut = false;
    const kill = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
        else child.kill("SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    if (!hold) timer.unref();
    // the caller stops the run (its work is done elsewhere, or one of its files ran past its own limit)
    const abort = () => kill();
    signal?.addEventListener("abort", abort, { once: true });
    if (signal?.aborted) queueMicrotask(abort);
    child.on("error", (e: Error) => {
      signal?.removeEventListener("abort", abort);
      clearTimeout(timer);
      groups.get(argv)?.remove();
      reject(e);
    });
    child.on("close", (code: number | null, sig: NodeJS.Signals | null) => {
      signal?.removeEventListener("abort", abort);
      clearTimeout(timer);
      if (timedOut || signal?.aborted) kill(); // anything left in the group (an unjailed run) goes too
      groups.get(argv)?.remove();
      resolve({ code, signal: sig, stderr, timedOut, pid: child.pid });
    });
  });
}
