/**
 * `run_python`: model-written Python (openpyxl, as SpreadsheetBench's inference prompts ask for) run against the
 * rollout's workbook in a live interpreter of its own, like SpreadsheetBench's kernel: variables, imports and an
 * open workbook carry over from call to call (sandbox/interpreters.ts, sandbox/py-runner.ts). The interpreter runs
 * in the jail (sandbox/jail.ts):
 * - it sees a read-only root holding only the Python binary, its standard library, shared libraries, the openpyxl
 *   and et_xmlfile package folders and the runner, plus a `/work` tmpfs of `maxDiskMb` holding the workbook
 *   (`/work/workbook.xlsx`) — no other file of the host exists in it;
 * - no network (an empty network namespace), no capabilities, no signals to host processes, an unprivileged host
 *   uid, at most `maxProcesses` processes, a clean environment, no inherited descriptor;
 * - time (`timeoutMs` per call; past it the interpreter is killed and the next call starts a fresh one), memory
 *   (`maxMemoryMb` for the whole jail where a cgroup is available, and per process by RLIMIT_AS: a MemoryError)
 *   and disk (`maxDiskMb`: ENOSPC) limits.
 * The code loads and saves the workbook itself (`openpyxl.load_workbook(workbook_path)` … `wb.save(workbook_path)`).
 * The saved file replaces the rollout's workbook when the call finishes without an exception.
 *
 * Python is started with `-I -S` (no site-packages, no .pth files, no environment variables); only the two package
 * folders are added to `sys.path`. The jail needs Linux user and mount namespaces; without them run_python is not
 * offered (there is no unconfined fallback).
 */
import { spawnSync } from "node:child_process";
import { dirname } from "node:path";
import { ToolError } from "@benchmax/core";
import { type ExecReply, execInInterpreter, type InterpreterSpec, type LifeOptions } from "./sandbox/interpreters.js";
import { boxFile, jailAvailable, jailReady } from "./sandbox/jail.js";
import { JailGone } from "./sandbox/live-jail.js";
import { PY_RUNNER } from "./sandbox/py-runner.js";
import { spawnCaptured } from "./sandbox/spawn-captured.js";
import { prestartSpawner } from "./sandbox/spawner.js";

export interface RunPythonOptions extends LifeOptions {
  timeoutMs?: number;
  /** Memory cap, MB: for the whole jail (cgroup) where available, and per process (RLIMIT_AS). Default 1024. */
  maxMemoryMb?: number;
  /** Size of the writable `/work` tmpfs (and the largest file), MB. Default 64. */
  maxDiskMb?: number;
  /** Processes (threads included) the jail may hold at once. Default 32. */
  maxProcesses?: number;
  maxOutputChars?: number;
  /** The Python interpreter; default: the first of /usr/bin/python3 and python3 that can import openpyxl. */
  python?: string;
  /** A fresh interpreter for this call only (no state carries over): the pre-pool behaviour, for baselines. */
  fresh?: boolean;
}

interface PythonInfo {
  exe: string;
  /** Folders bound read-only (the standard library, the package folders). */
  binds: string[];
  /** Folders added to sys.path in the jail. */
  path: string[];
}

type Probed = { ok: true; python: PythonInfo } | { ok: false; reason: string };

/** Probe results per interpreter asked for ("" = the default candidates). */
const probed = new Map<string, Probed>();
const probingAsync = new Map<string, Promise<Probed>>();

const PROBE = `import sys, os, json, openpyxl, et_xmlfile
print(json.dumps({"exe": os.path.realpath(sys.executable), "stdlib": [p for p in sys.path if p and os.path.isdir(p) and "-packages" not in p],
  "pkgs": [os.path.dirname(openpyxl.__file__), os.path.dirname(et_xmlfile.__file__)], "version": openpyxl.__version__}))`;

const PROBE_TIMEOUT_MS = 15_000;

/**
 * Whether run_python can run here, and why not. The first call for an interpreter runs it (a few hundred ms of
 * Python importing openpyxl) waited for on this thread: the env does it once, when it is created; a hot path awaits
 * `pythonReady` instead.
 */
export function pythonAvailable(python?: string): { ok: boolean; reason: string } {
  return described(probe(python));
}

/** `pythonAvailable` without holding the event loop (the probes run as child processes, awaited). */
export async function pythonReady(python?: string): Promise<{ ok: boolean; reason: string }> {
  const r = await probeAsync(python);
  // the jail's own probe and cgroup lookup (done already when the probe above ran here)
  if (r.ok) await jailReady();
  return described(r);
}

function described(r: Probed): { ok: boolean; reason: string } {
  return r.ok ? { ok: true, reason: `${r.python.exe} with openpyxl, in the jail` } : r;
}

const candidates = (python?: string) => (python ? [python] : ["/usr/bin/python3", "python3"]);

/** One candidate's probe run, read: its interpreter's folders, or why it cannot serve. */
function readProbe(
  cand: string,
  r: { status: number | null; stdout: string; stderr: string; error?: string },
): PythonInfo | string {
  if (r.status !== 0) return `${cand} cannot import openpyxl (${(r.stderr || r.error || "").trim().split("\n").pop()})`;
  let p: { exe: string; stdlib: string[]; pkgs: string[] };
  try {
    p = JSON.parse(r.stdout);
  } catch {
    return `${cand} printed no readable probe answer (${r.stdout.trim().slice(0, 200) || "nothing"})`;
  }
  // the stdlib folders (never a folder as broad as /usr/lib) and the two package folders
  const stdlib = p.stdlib.filter((d) => /python3?\.?\d*/.test(d.split("/").pop() ?? "") || d.endsWith("lib-dynload"));
  return { exe: p.exe, binds: [p.exe, ...stdlib, ...p.pkgs], path: [...new Set(p.pkgs.map((d) => dirname(d)))] };
}

function settle(key: string, found: PythonInfo | undefined, failures: string[]): Probed {
  const out: Probed = found ? { ok: true, python: found } : { ok: false, reason: failures.join("; ") };
  if (out.ok) prestartSpawner(); // jails fork from it: start it while this process is small
  if (!probed.has(key)) probed.set(key, out);
  return probed.get(key)!;
}

function probe(python?: string): Probed {
  const key = python ?? "";
  const known = probed.get(key);
  if (known) return known;
  const jail = jailAvailable();
  if (!jail.ok) return { ok: false, reason: `run_python needs the sandbox jail: ${jail.reason}` };
  const failures: string[] = [];
  for (const cand of candidates(python)) {
    const r = spawnSync(cand, ["-I", "-c", PROBE], { encoding: "utf8", timeout: PROBE_TIMEOUT_MS });
    const got = readProbe(cand, { status: r.status, stdout: r.stdout, stderr: r.stderr, error: r.error?.message });
    if (typeof got !== "string") return settle(key, got, failures);
    failures.push(got);
  }
  return settle(key, undefined, failures);
}

function probeAsync(python?: string): Promise<Probed> {
  const key = python ?? "";
  const known = probed.get(key);
  if (known) return Promise.resolve(known);
  let p = probingAsync.get(key);
  if (!p) {
    p = (async (): Promise<Probed> => {
      const jail = await jailReady();
      if (!jail.ok) return { ok: false, reason: `run_python needs the sandbox jail: ${jail.reason}` };
      const failures: string[] = [];
      for (const cand of candidates(python)) {
        let got: PythonInfo | string;
        try {
          // forked by the jail helper (spawner.ts), with this process's PATH (a bare `python3` is looked up in it)
          const r = await spawnCaptured([cand, "-I", "-c", PROBE], process.env, PROBE_TIMEOUT_MS, 1 << 20);
          got = readProbe(cand, { ...r, error: r.timedOut ? `timed out after ${PROBE_TIMEOUT_MS} ms` : undefined });
        } catch (e) {
          got = `${cand} cannot import openpyxl (${(e as Error).message})`;
        }
        if (typeof got !== "string") return settle(key, got, failures);
        failures.push(got);
      }
      return settle(key, undefined, failures);
    })();
    probingAsync.set(key, p);
    void p.finally(() => probingAsync.delete(key)).catch(() => {});
  }
  return p;
}

/** The interpreter spec for these options (identical options share one warm pool). */
export function pythonSpec(options: RunPythonOptions = {}): InterpreterSpec {
  const p = probe(options.python);
  if (!p.ok) throw new ToolError(`run_python is not available here: ${p.reason}`);
  const memoryMb = options.maxMemoryMb ?? 1024;
  const diskMb = options.maxDiskMb ?? 64;
  const maxProcs = options.maxProcesses ?? 32;
  return {
    language: "python",
    poolKey: `python\0${p.python.exe}\0${memoryMb}\0${diskMb}\0${maxProcs}`,
    jail: {
      readOnly: p.python.binds,
      box: { "runner.py": boxFile("runner.py", PY_RUNNER) },
      argv: [p.python.exe, "-I", "-S", "-B", "/box/runner.py", p.python.path.join(":")],
      env: { PYTHONIOENCODING: "utf-8", HOME: "/work", TMPDIR: "/work", LANG: "C.UTF-8" },
      memoryMb,
      memoryLimit: "as",
      diskMb,
      maxProcs,
    },
  };
}

export interface RunPythonResult {
  output: string;
}

/** The words a model reads when its interpreter is gone. */
export function goneMessage(tool: string, e: JailGone, timeoutMs: number, memoryMb: number): string {
  const lost =
    "the interpreter was stopped; the next call starts a fresh one, so variables and imports from earlier calls are gone (the workbook keeps its last saved state)";
  if (e.why === "timeout") return `${tool} timed out after ${timeoutMs} ms: ${lost}`;
  if (e.why === "memory")
    return `${tool} hit the memory limit (${memoryMb} MB for the interpreter and its processes together): ${lost}`;
  return `${tool} failed: ${e.message}; ${lost}`;
}

/**
 * Run Python `code` against the workbook file `wbPath` in the live interpreter of the rollout whose workspace is
 * `workspaceDir`; the workbook the code saves replaces the file on success. Errors in the code, time-outs and
 * exhausted limits are ToolErrors the model reads.
 */
export async function runPython(
  wbPath: string,
  workspaceDir: string,
  code: string,
  options: RunPythonOptions = {},
): Promise<RunPythonResult> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const memMb = options.maxMemoryMb ?? 1024;
  const diskMb = options.maxDiskMb ?? 64;
  const maxOut = options.maxOutputChars ?? 8000;
  // the probe (once per process and interpreter) runs off the event loop; the spec then reads its answer
  await pythonReady(options.python);
  const spec = pythonSpec(options);
  let r: ExecReply;
  try {
    r = await execInInterpreter(
      Object.assign({}, options, { spec, workspaceDir, wbPath, code, timeoutMs, maxOut, save: true }),
    );
  } catch (e) {
    if (e instanceof JailGone) throw new ToolError(goneMessage("run_python", e, timeoutMs, memMb));
    throw e;
  }
  const note = r.note ? `[note: ${r.note}; variables from earlier calls are gone]\n` : "";
  const output = note + r.output + (r.truncated ? `\n[output truncated at ${maxOut} characters]` : "");
  if (!r.ok) {
    const err = r.error.trim();
    let msg = err.split("\n").slice(-12).join("\n").slice(0, 3000) || "the code failed";
    if (/MemoryError|Cannot allocate memory/.test(err)) msg = `run_python hit the memory limit (${memMb} MB):\n${msg}`;
    else if (/No space left on device|File too large|Errno 28|Errno 27/.test(err))
      msg = `run_python hit the disk limit (${diskMb} MB):\n${msg}`;
    throw new ToolError(`${msg}${output ? `\noutput before the error:\n${output}` : ""}`);
  }
  return { output };
}
