/**
 * `run_code`: model-written JavaScript run against the rollout's workbook in a separate, restricted Node process.
 *
 * What is enforced, and how:
 * - A fresh child process per call (`process.execPath`), killed with SIGKILL at the time limit.
 * - The jail (sandbox/jail.ts), where Linux user, mount, network and PID namespaces are available: the child sees a
 *   read-only root holding only the node binary, its shared libraries, `/box/child.mjs`, `/box/exceljs.cjs` (exceljs
 *   bundled into one file) and the code, plus a `/work` tmpfs of `maxDiskMb` holding a copy of the workbook. No
 *   package folder, no other workspace and no gold file exists in it. No network, no signals to host processes.
 * - Node's permission model on top (`--experimental-permission`): reads only of those three files and `/work`,
 *   writes only under `/work`, no child processes, worker threads, native addons or WASI.
 * - Limits: V8 heap `--max-old-space-size` (default 256 MB); the whole data segment (Buffers and other memory
 *   outside the heap) `maxMemoryMb` via RLIMIT_DATA (default heap + 512 MB); disk writes `maxDiskMb` (default 64 MB:
 *   the tmpfs size and RLIMIT_FSIZE).
 * - Without the jail (no user namespaces), the same Node flags grant exactly the workspace, the child script and the
 *   bundle at their host paths, `prlimit` applies the same limits, and `unshare -rnp` isolates the network where it
 *   can (`networkIsolated()` reports it).
 * - The code runs inside a `vm` context that exposes only `workbook` (an exceljs Workbook), `console` and
 *   `ExcelJS`; `vm` is not a security boundary by itself — the process restrictions above are.
 * - Output (console.log / error text) is truncated to `maxOutputChars`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, realpathSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolError, workspaceRoot } from "@benchmax/core";
import { exceljsBundle } from "./sandbox/bundle.js";
import { jailAvailable, runJailed } from "./sandbox/jail.js";
import { type CapturedRun, spawnCaptured } from "./sandbox/spawn-captured.js";

export interface RunCodeOptions {
  timeoutMs?: number;
  maxOldSpaceMb?: number;
  /** Cap on the child's whole data segment (heap and memory outside it), MB. Default: heap + 512. */
  maxMemoryMb?: number;
  /** Cap on what the child may write (the workspace tmpfs, and any one file), MB. Default 64. */
  maxDiskMb?: number;
  maxOutputChars?: number;
  /** Use the jail where it is available (default true); false = the Node-permission-model-only path. */
  jail?: boolean;
}

const CHILD = String.raw`
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import vm from "node:vm";
const [wbPath, codePath, exceljsPath, maxOut, timeoutMs] = process.argv.slice(2);
const ExcelJS = createRequire(exceljsPath)(exceljsPath);
let out = "";
const limit = Number(maxOut);
const fmt = (a) => (typeof a === "string" ? a : (() => { try { return JSON.stringify(a); } catch { return String(a); } })());
const log = (...args) => { if (out.length <= limit) out += args.map(fmt).join(" ") + "\n"; };
let finished = false;
const done = (obj) => { finished = true; process.stdout.write(JSON.stringify({ ...obj, output: out.slice(0, limit), truncated: out.length > limit })); };
process.on("exit", () => { if (!finished) done({ ok: false, error: "the code awaited a promise that never settles (nothing left to run)" }); });
try {
  const workbook = new ExcelJS.Workbook();
  await workbook.xlsx.readFile(wbPath);
  const ctx = vm.createContext({ workbook, ExcelJS, console: { log, info: log, warn: log, error: log } });
  const code = readFileSync(codePath, "utf8");
  const script = new vm.Script("(async () => {\n" + code + "\n})()", { filename: "code.js" });
  await script.runInContext(ctx, { timeout: Number(timeoutMs) });
  await workbook.xlsx.writeFile(wbPath);
  done({ ok: true });
} catch (e) {
  const msg = e && e.stack ? String(e.stack).split("\n").filter((l) => !l.includes("node:") && !l.includes("exceljs")).slice(0, 6).join("\n") : String(e);
  done({ ok: false, error: msg });
}
`;

let childPath: string | undefined;
function childScript(): string {
  if (!childPath || !existsSync(childPath)) {
    const dir = join(workspaceRoot(), "excel-run-code");
    mkdirSync(dir, { recursive: true });
    childPath = join(dir, "child.mjs");
    writeFileSync(childPath, CHILD);
  }
  return childPath;
}

/** New user, network and PID namespaces; the child dies with the unshare process (killed at the time limit). */
const UNSHARE = ["-rnp", "--fork", "--kill-child"];
let unshareOk: boolean | undefined;
/** Whether run_code's process gets an empty network namespace on this machine. */
export function networkIsolated(): boolean {
  if (jailAvailable().ok) return true;
  if (unshareOk === undefined) {
    const r = spawnSync("unshare", [...UNSHARE, process.execPath, "-e", "0"], { stdio: "ignore", timeout: 5000 });
    unshareOk = r.status === 0;
  }
  return unshareOk;
}

let prlimitOk: boolean | undefined;
function hasPrlimit(): boolean {
  prlimitOk ??= spawnSync("prlimit", ["--version"], { stdio: "ignore" }).status === 0;
  return prlimitOk;
}

/** How run_code is isolated on this machine, in words (for docs, logs and tests). */
export function runCodeIsolation(): string {
  const j = jailAvailable();
  if (j.ok) return `jail (${j.reason}) + Node permission model`;
  return `Node permission model only (${j.reason}); network ${networkIsolated() ? "isolated" : "NOT isolated"}; limits ${hasPrlimit() ? "by prlimit" : "heap only (no prlimit)"}`;
}

export interface RunCodeResult {
  output: string;
}

interface Limits {
  timeoutMs: number;
  maxOld: number;
  memMb: number;
  diskMb: number;
  maxOut: number;
}

function nodeFlags(reads: string[], write: string, maxOld: number): string[] {
  return [
    "--experimental-permission",
    // Node 20 takes one path per flag (a comma-separated list is read as a single path)
    ...reads.map((r) => `--allow-fs-read=${r}`),
    `--allow-fs-write=${write}`,
    `--max-old-space-size=${maxOld}`,
    "--no-warnings",
  ];
}

/**
 * Run `code` against the workbook file `wbPath` (inside `workspaceDir`), which is rewritten on success.
 * Errors in the code, time-outs and exhausted limits are ToolErrors the model reads.
 */
export async function runCode(
  wbPath: string,
  workspaceDir: string,
  code: string,
  options: RunCodeOptions = {},
): Promise<RunCodeResult> {
  const maxOld = options.maxOldSpaceMb ?? 256;
  const lim: Limits = {
    timeoutMs: options.timeoutMs ?? 10_000,
    maxOld,
    memMb: options.maxMemoryMb ?? maxOld + 512,
    diskMb: options.maxDiskMb ?? 64,
    maxOut: options.maxOutputChars ?? 8000,
  };
  const codePath = join(workspaceDir, ".code.js");
  writeFileSync(codePath, code);
  try {
    const raw =
      options.jail !== false && jailAvailable().ok
        ? await runInJail(wbPath, workspaceDir, codePath, lim)
        : await runWithGrants(wbPath, workspaceDir, codePath, lim);
    return interpret(raw, lim);
  } finally {
    rmSync(codePath, { force: true });
  }
}

type Raw = CapturedRun;

async function runInJail(wbPath: string, workspaceDir: string, codePath: string, lim: Limits): Promise<Raw> {
  const node = realpathSync(process.execPath);
  const out = join(workspaceDir, ".workbook.out.xlsx");
  const r = await runJailed({
    readOnly: [node],
    box: { "child.mjs": childScript(), "exceljs.cjs": exceljsBundle(), "code.js": codePath },
    workbook: wbPath,
    workbookOut: out,
    argv: [
      node,
      ...nodeFlags(["/box/child.mjs", "/box/exceljs.cjs", "/box/code.js", "/work"], "/work", lim.maxOld),
      "/box/child.mjs",
      "/work/workbook.xlsx",
      "/box/code.js",
      "/box/exceljs.cjs",
      String(lim.maxOut),
      String(lim.timeoutMs),
    ],
    timeoutMs: lim.timeoutMs + 2000,
    memoryMb: lim.memMb,
    memoryLimit: "data",
    diskMb: lim.diskMb,
    scratchDir: workspaceDir,
  });
  if (r.status === 0 && existsSync(out)) renameSync(out, wbPath);
  else rmSync(out, { force: true });
  return r;
}

function runWithGrants(wbPath: string, workspaceDir: string, codePath: string, lim: Limits): Promise<Raw> {
  const ws = realpathSync(workspaceDir);
  const script = childScript();
  const bundle = exceljsBundle();
  let argv = [
    process.execPath,
    ...nodeFlags([ws, script, bundle], ws, lim.maxOld),
    script,
    wbPath,
    codePath,
    bundle,
    String(lim.maxOut),
    String(lim.timeoutMs),
  ];
  if (hasPrlimit()) {
    const mb = 1024 * 1024;
    argv = ["prlimit", `--data=${lim.memMb * mb}`, `--fsize=${lim.diskMb * mb}`, "--core=0", "--", ...argv];
  }
  if (networkIsolated()) argv = ["unshare", ...UNSHARE, ...argv];
  return spawnCaptured(argv, { PATH: process.env.PATH ?? "" }, lim.timeoutMs + 2000).catch((e: Error) => {
    throw new ToolError(`run_code could not start: ${e.message}`);
  });
}

function interpret(raw: Raw, lim: Limits): RunCodeResult {
  const { timeoutMs, maxOld, memMb, diskMb, maxOut } = lim;
  if (raw.timedOut) throw new ToolError(`run_code timed out after ${timeoutMs} ms (the process was killed)`);
  let parsed: { ok: boolean; output: string; error?: string; truncated?: boolean } | undefined;
  try {
    parsed = raw.stdout ? JSON.parse(raw.stdout) : undefined;
  } catch {
    parsed = undefined;
  }
  const stderr = raw.stderr;
  if (!parsed) {
    if (/heap out of memory|Allocation failed - JavaScript heap/i.test(stderr))
      throw new ToolError(`run_code ran out of memory (heap limit ${maxOld} MB)`);
    if (raw.status === 153 || /File size limit exceeded/i.test(stderr))
      throw new ToolError(`run_code hit the disk limit (${diskMb} MB written)`);
    if (/Allocation failed|out of memory|Cannot allocate memory/i.test(stderr))
      throw new ToolError(`run_code ran out of memory (limit ${memMb} MB, memory outside the heap included)`);
    const why = raw.status === null ? "killed" : `exit status ${raw.status}`;
    throw new ToolError(
      `run_code failed (${why}): ${stderr.trim().split("\n").slice(-3).join(" ").slice(0, 500) || "no output"}`,
    );
  }
  const output = parsed.output + (parsed.truncated ? `\n[output truncated at ${maxOut} characters]` : "");
  if (!parsed.ok) {
    let err = parsed.error ?? "run_code failed";
    if (/timed out/i.test(err)) err = `run_code timed out after ${timeoutMs} ms`;
    else if (/ENOSPC|EFBIG/.test(err)) err = `run_code hit the disk limit (${diskMb} MB): ${err}`;
    else if (/Array buffer allocation failed|Cannot allocate memory|ENOMEM/i.test(err))
      err = `run_code hit the memory limit (${memMb} MB, memory outside the heap included): ${err}`;
    throw new ToolError(`${err}${output ? `\noutput before the error:\n${output}` : ""}`);
  }
  if (raw.status !== 0) {
    throw new ToolError(`run_code failed (exit status ${raw.status}): ${stderr.trim().slice(0, 500)}`);
  }
  return { output };
}
