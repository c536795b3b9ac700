/**
 * `run_code`: model-written JavaScript run against the rollout's workbook in a separate, restricted Node process.
 *
 * What is enforced, and how:
 * - With the jail (sandbox/jail.ts: Linux user, mount, network and PID namespaces), one live Node process per
 *   rollout, taken from a warm pool (sandbox/interpreters.ts, sandbox/node-runner.ts): globals the code assigns and
 *   the loaded `workbook` carry over between calls. A call past its time limit kills that process (the next call
 *   starts a fresh one and says so). The process sees a read-only root holding only the node binary, its shared
 *   libraries, `/box/child.mjs` and `/box/exceljs.cjs` (exceljs bundled into one file), plus a `/work` tmpfs of
 *   `maxDiskMb`. No package folder, no other workspace and no gold file exists in it. No network, no signals to
 *   host processes, an unprivileged host uid, a process cap, a clean environment, no inherited descriptor.
 * - Node's permission model on top (`--experimental-permission`): reads only of those two files and `/work`,
 *   writes only under `/work`, no child processes, worker threads, native addons or WASI.
 * - Limits: V8 heap `--max-old-space-size` (default 256 MB); the whole data segment (Buffers and other memory
 *   outside the heap) `maxMemoryMb` via RLIMIT_DATA (default heap + 512 MB); disk writes `maxDiskMb` (default 64 MB:
 *   the tmpfs size and RLIMIT_FSIZE).
 * - `deferSave`: the changed workbook stays in the live process until `flushInterpreters` asks for it (the env
 *   does before a structured tool or the scorer reads the file); otherwise it is saved after each call.
 * - Without the jail (no user namespaces), a fresh process per call: the same Node flags grant exactly the
 *   workspace, the child script and the bundle at their host paths, `prlimit` applies the same limits, and `unshare -rnp` isolates the network where it
 *   can (`networkIsolated()` reports it).
 * - The code runs inside a `vm` context that exposes only `workbook` (an exceljs Workbook), `console` and
 *   `ExcelJS`; `vm` is not a security boundary by itself — the process restrictions above are.
 * - Output (console.log / error text) is truncated to `maxOutputChars`.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ToolError, workspaceRoot } from "@benchmax/core";
import { goneMessage } from "./run-python.js";
import { exceljsBundle } from "./sandbox/bundle.js";
import {
  execInInterpreter,
  type InterpreterSpec,
  type LifeOptions,
  preloadInterpreter,
} from "./sandbox/interpreters.js";
import { boxCopy, boxFile, jailAvailable, jailReady } from "./sandbox/jail.js";
import { JailGone } from "./sandbox/live-jail.js";
import { NODE_RUNNER } from "./sandbox/node-runner.js";
import { type CapturedRun, spawnCaptured } from "./sandbox/spawn-captured.js";

export interface RunCodeOptions extends LifeOptions {
  timeoutMs?: number;
  maxOldSpaceMb?: number;
  /** Cap on the child's whole data segment (heap and memory outside it), MB. Default: heap + 512. */
  maxMemoryMb?: number;
  /** Cap on what the child may write (the workspace tmpfs, and any one file), MB. Default 64. */
  maxDiskMb?: number;
  maxOutputChars?: number;
  /** Use the jail where it is available (default true); false = the Node-permission-model-only path. */
  jail?: boolean;
  /** Processes (threads included) the jail may hold at once. Default 48 (Node runs about a dozen threads). */
  maxProcesses?: number;
  /** Keep the changed workbook in the live process until `flushInterpreters` (default false: save after each call). */
  deferSave?: boolean;
  /** A fresh jailed process for this call only (no state carries over): the pre-pool behaviour, for baselines. */
  fresh?: boolean;
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
  // the jail's probe (once per process) runs off the event loop
  if (options.jail !== false && (await jailReady()).ok) return runLive(wbPath, workspaceDir, code, lim, options);
  const codePath = join(workspaceDir, ".code.js");
  writeFileSync(codePath, code);
  try {
    return interpret(await runWithGrants(wbPath, workspaceDir, codePath, lim), lim);
  } finally {
    rmSync(codePath, { force: true });
  }
}

/** The live interpreter spec for these limits (identical limits share one warm pool). */
export function nodeSpec(options: RunCodeOptions = {}): InterpreterSpec {
  const maxOld = options.maxOldSpaceMb ?? 256;
  const memoryMb = options.maxMemoryMb ?? maxOld + 512;
  const diskMb = options.maxDiskMb ?? 64;
  const maxProcs = options.maxProcesses ?? 48;
  const node = realpathSync(process.execPath);
  return {
    language: "node",
    poolKey: `node\0${node}\0${maxOld}\0${memoryMb}\0${diskMb}\0${maxProcs}`,
    jail: {
      readOnly: [node],
      box: { "child.mjs": boxFile("child.mjs", NODE_RUNNER), "exceljs.cjs": boxCopy(exceljsBundle()) },
      argv: [
        node,
        ...nodeFlags(["/box/child.mjs", "/box/exceljs.cjs", "/work"], "/work", maxOld),
        "/box/child.mjs",
        "/box/exceljs.cjs",
      ],
      env: { HOME: "/work", TMPDIR: "/work", LANG: "C.UTF-8" },
      memoryMb,
      memoryLimit: "data",
      diskMb,
      maxProcs,
    },
  };
}

/**
 * Claim the rollout's run_code interpreter from the warm pool now and load `wbPath` into it (exceljs), so the model's
 * first run_code call finds the workbook in memory: an env calls this at the rollout's start. Resolves with the
 * claim-and-load time in ms once done (undefined where there is no jail or it failed; the first call then loads the
 * workbook itself). Costs a live interpreter per rollout whether or not the model calls run_code.
 */
export function preloadRunCode(
  wbPath: string,
  workspaceDir: string,
  options: RunCodeOptions = {},
): Promise<number | undefined> {
  if (options.jail === false || options.fresh) return Promise.resolve(undefined);
  return jailReady().then((j) => (j.ok ? preloadRun(wbPath, workspaceDir, options) : undefined));
}

function preloadRun(wbPath: string, workspaceDir: string, options: RunCodeOptions): Promise<number | undefined> {
  return preloadInterpreter(
    Object.assign({}, options, {
      spec: nodeSpec(options),
      workspaceDir,
      wbPath,
      timeoutMs: Math.max(options.timeoutMs ?? 10_000, 30_000),
    }),
  );
}

async function runLive(
  wbPath: string,
  workspaceDir: string,
  code: string,
  lim: Limits,
  options: RunCodeOptions,
): Promise<RunCodeResult> {
  const spec = nodeSpec(options);
  let r: Awaited<ReturnType<typeof execInInterpreter>>;
  try {
    r = await execInInterpreter(
      Object.assign({}, options, {
        spec,
        workspaceDir,
        wbPath,
        code,
        timeoutMs: lim.timeoutMs,
        maxOut: lim.maxOut,
        save: !options.deferSave,
      }),
    );
  } catch (e) {
    if (e instanceof JailGone) {
      if (e.why === "died" && /heap out of memory|Allocation failed/i.test(e.message))
        throw new ToolError(
          goneMessage("run_code", new JailGone("memory", e.message), lim.timeoutMs, lim.memMb).replace(
            /\(\d+ MB for[^)]*\)/,
            `(heap ${lim.maxOld} MB)`,
          ),
        );
      throw new ToolError(goneMessage("run_code", e, lim.timeoutMs, lim.memMb));
    }
    throw e;
  }
  const note = r.note ? `[note: ${r.note}; globals from earlier calls are gone]\n` : "";
  const output = note + r.output + (r.truncated ? `\n[output truncated at ${lim.maxOut} characters]` : "");
  if (!r.ok) throw new ToolError(`${explain(r.error, lim)}${output ? `\noutput before the error:\n${output}` : ""}`);
  return { output };
}

/** The model-readable form of an error the code raised. */
function explain(error: string, lim: Limits): string {
  let err = error || "run_code failed";
  if (/Script execution timed out|timed out/i.test(err)) err = `run_code timed out after ${lim.timeoutMs} ms`;
  else if (/ENOSPC|EFBIG/.test(err)) err = `run_code hit the disk limit (${lim.diskMb} MB): ${err}`;
  else if (/Array buffer allocation failed|Cannot allocate memory|ENOMEM/i.test(err))
    err = `run_code hit the memory limit (${lim.memMb} MB, memory outside the heap included): ${err}`;
  return err;
}

type Raw = CapturedRun;

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
    const err = explain(parsed.error ?? "", lim);
    throw new ToolError(`${err}${output ? `\noutput before the error:\n${output}` : ""}`);
  }
  if (raw.status !== 0) {
    throw new ToolError(`run_code failed (exit status ${raw.status}): ${stderr.trim().slice(0, 500)}`);
  }
  return { output };
}
