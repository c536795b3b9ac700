/**
 * The jail run_code and run_python run in (Linux; util-linux `unshare`, `chroot`, `setpriv`, `prlimit`).
 *
 * `unshare -rmnp --fork --kill-child` gives the program new user, mount, network and PID namespaces. A shell inside
 * them builds a root that holds nothing but what the program needs, then runs the program in it:
 * - `/` is a small tmpfs, remounted read-only once built; it holds only read-only binds of the paths named in the
 *   spec (the interpreter binary, its shared-library folders, its standard library, single files in `/box`) and
 *   `/dev/{null,zero,urandom}`. No workspace of another rollout, no package folder, no gold file is ever in it.
 * - `/work` is a tmpfs of `diskMb` (the disk cap: writes past it fail with ENOSPC). The rollout's workbook is
 *   copied in before the run and copied back, only when the program succeeded and only as a regular file.
 * - The program runs after `chroot` with every capability dropped (`setpriv --bounding-set=-all`, no new privileges),
 *   so it can neither mount, chroot again nor leave the root; its working folder is `/work`.
 * - `prlimit`: address space or data segment (`memoryMb`, memory outside a JS heap included), file size
 *   (`diskMb`), open files, no core dumps. The network namespace has only a down loopback. When the time limit
 *   passes, the host kills the namespace's first process, and the kernel kills everything in the PID namespace.
 */
import { spawnSync } from "node:child_process";
import { existsSync, lstatSync, mkdirSync, readlinkSync, realpathSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { type CapturedRun, spawnCaptured } from "./spawn-captured.js";

export interface JailSpec {
  /** Host paths (files or folders) bound read-only at the same path inside the jail. */
  readOnly: string[];
  /** Host files bound read-only into the jail's `/box` under the given names. */
  box: Record<string, string>;
  /** The workbook copied to `/work/workbook.xlsx` (and back, on success). */
  workbook: string;
  /** Where the workbook goes back on success (a host path). */
  workbookOut: string;
  /** The program and its arguments, as seen inside the jail. */
  argv: string[];
  env?: Record<string, string>;
  timeoutMs: number;
  /** Memory cap in MB and which limit carries it: RLIMIT_AS ("as") or RLIMIT_DATA ("data"). */
  memoryMb: number;
  memoryLimit: "as" | "data";
  /** Size of the `/work` tmpfs, and the largest file the program may write, in MB. */
  diskMb: number;
  /** Scratch folder on the host (an empty mount point is made in it). */
  scratchDir: string;
  /** Captured output cap (bytes). */
  maxCapture?: number;
}

/** What the jailed program did (see `CapturedRun`). */
export type JailResult = CapturedRun;

const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Library folders a dynamically linked interpreter needs (whichever exist here). */
const LIB_DIRS = [
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

function bindLines(paths: string[]): string[] {
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const p of paths) {
    if (seen.has(p) || !existsSync(p) || underSymlink(p)) continue;
    seen.add(p);
    const st = lstatSync(p);
    if (st.isSymbolicLink()) {
      lines.push(`mkdir -p "$R"${q(dirname(p))}; ln -sfn ${q(readlinkSync(p))} "$R"${q(p)}`);
    } else if (st.isDirectory()) {
      lines.push(`ro ${q(p)} ${q(p)} d`);
    } else {
      lines.push(`ro ${q(p)} ${q(p)} f`);
    }
  }
  return lines;
}

function script(spec: JailSpec, root: string): string {
  const lines = [
    "set -e",
    `R=${q(root)}`,
    'mount -t tmpfs -o size=4m,mode=755 benchmax-jail "$R"',
    'mkdir -p "$R/work" "$R/box" "$R/dev"',
    // ro HOST INSIDE d|f: a read-only bind
    `ro() { if [ "$3" = d ]; then mkdir -p "$R$2"; else mkdir -p "$(dirname "$R$2")"; : > "$R$2"; fi; mount --bind "$1" "$R$2"; mount -o remount,bind,ro,nosuid,nodev "$R$2"; }`,
    ...bindLines([...LIB_DIRS, "/usr/bin/setpriv", ...spec.readOnly]),
    ...Object.entries(spec.box).map(([name, host]) => `ro ${q(host)} ${q(`/box/${name}`)} f`),
    // device nodes: plain binds (a nodev mount would make them unusable; they are world-writable on the host too)
    ...["null", "zero", "urandom"].map((d) => `: > "$R/dev/${d}"; mount --bind /dev/${d} "$R/dev/${d}"`),
    `mount -t tmpfs -o size=${Math.ceil(spec.diskMb)}m,mode=700,nosuid,nodev benchmax-work "$R/work"`,
    `cp ${q(spec.workbook)} "$R/work/workbook.xlsx"`,
    'mount -o remount,bind,ro "$R"',
    'cd "$R/work"',
    "set +e",
    [
      "prlimit",
      `--${spec.memoryLimit}=${Math.floor(spec.memoryMb * 1024 * 1024)}`,
      `--fsize=${Math.floor(spec.diskMb * 1024 * 1024)}`,
      "--nofile=256",
      "--core=0",
      "--",
      "chroot",
      '"$R"',
      "/usr/bin/setpriv",
      "--no-new-privs",
      "--bounding-set=-all",
      "--inh-caps=-all",
      "--",
      ...spec.argv.map(q),
    ].join(" "),
    "rc=$?",
    // whatever the program left running dies before its output is read
    "kill -9 -1 2>/dev/null",
    `if [ "$rc" = 0 ]; then`,
    `  if [ -L "$R/work/workbook.xlsx" ] || [ ! -f "$R/work/workbook.xlsx" ]; then echo "benchmax-jail: workbook.xlsx is no longer a regular file" >&2; exit 90; fi`,
    `  cp "$R/work/workbook.xlsx" ${q(spec.workbookOut)}`,
    "fi",
    'exit "$rc"',
  ];
  return lines.join("\n");
}

const UNSHARE = ["-rmnp", "--fork", "--kill-child"];
let available: { ok: boolean; reason: string } | undefined;

/** Whether the jail can be built on this machine (and why not). */
export function jailAvailable(): { ok: boolean; reason: string } {
  if (!available) {
    if (process.platform !== "linux") available = { ok: false, reason: "the jail needs Linux namespaces" };
    else if (!existsSync("/usr/bin/setpriv")) available = { ok: false, reason: "setpriv (util-linux) is missing" };
    else {
      const dir = join("/tmp", `benchmax-jail-probe-${process.pid}`);
      mkdirSync(dir, { recursive: true });
      const r = spawnSync(
        "unshare",
        [...UNSHARE, "sh", "-c", `mount -t tmpfs -o size=1m probe ${q(dir)} && command -v prlimit chroot >/dev/null`],
        { encoding: "utf8", timeout: 5000 },
      );
      rmSync(dir, { recursive: true, force: true });
      available =
        r.status === 0
          ? { ok: true, reason: "user, mount, network and PID namespaces" }
          : {
              ok: false,
              reason: `unshare -rmnp with a tmpfs mount failed here (${(r.stderr || r.error?.message || `exit ${r.status}`).trim().split("\n").pop()})`,
            };
    }
  }
  return available;
}

/** Run `spec.argv` in a fresh jail. Never rejects for the program's own failures: see the result. */
export function runJailed(spec: JailSpec): Promise<JailResult> {
  const root = join(spec.scratchDir, ".jail");
  mkdirSync(root, { recursive: true });
  const cap = spec.maxCapture ?? 1_000_000;
  return spawnCaptured(
    ["unshare", ...UNSHARE, "sh", "-c", script(spec, root)],
    { PATH: "/usr/sbin:/usr/bin:/sbin:/bin", ...spec.env },
    spec.timeoutMs,
    cap,
  );
}
