/**
 * `run_python`: model-written Python (openpyxl, as SpreadsheetBench's inference prompts ask for) run against the
 * rollout's workbook, in the same jail as run_code (sandbox/jail.ts) with the same guarantees:
 * - the process sees a read-only root holding only the Python binary, its standard library, shared libraries, the
 *   openpyxl and et_xmlfile package folders, the runner and the code, plus a `/work` tmpfs of `maxDiskMb`
 *   holding a copy of the workbook (`/work/workbook.xlsx`) — no other file of the host exists in it;
 * - no network (an empty network namespace), no capabilities, no signals to host processes;
 * - time (`timeoutMs`, then the whole PID namespace is killed), memory (`maxMemoryMb`, RLIMIT_AS: a MemoryError)
 *   and disk (`maxDiskMb`: ENOSPC) limits.
 * The code loads and saves the workbook itself (`openpyxl.load_workbook(workbook_path)` … `wb.save(workbook_path)`).
 * The saved file replaces the rollout's workbook only when the code ran to the end without an exception.
 *
 * Python is started with `-I -S` (no site-packages, no .pth files, no environment variables); only the two package
 * folders are added to `sys.path`. The jail needs Linux user and mount namespaces; without them run_python is not
 * offered (there is no unconfined fallback).
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { ToolError, workspaceRoot } from "@benchmax/core";
import { jailAvailable, runJailed } from "./sandbox/jail.js";

export interface RunPythonOptions {
  timeoutMs?: number;
  /** Address-space cap (RLIMIT_AS), MB. Default 1024. */
  maxMemoryMb?: number;
  /** Size of the writable `/work` tmpfs (and the largest file), MB. Default 64. */
  maxDiskMb?: number;
  maxOutputChars?: number;
  /** The Python interpreter; default: the first of /usr/bin/python3 and python3 that can import openpyxl. */
  python?: string;
}

const RUNNER = String.raw`
import sys, os, traceback
sys.path[:0] = sys.argv[2].split(os.pathsep)
os.chdir("/work")
max_out = int(sys.argv[1])
code = open("/box/code.py", encoding="utf-8").read()
import openpyxl
g = {"__name__": "__main__", "__builtins__": __builtins__, "openpyxl": openpyxl,
     "workbook_path": "/work/workbook.xlsx", "input_path": "/work/workbook.xlsx", "output_path": "/work/workbook.xlsx"}
try:
    exec(compile(code, "code.py", "exec"), g)
except SystemExit as e:
    if e.code not in (None, 0):
        sys.stdout.flush()
        sys.stderr.write("SystemExit: %s\n" % (e.code,))
        sys.exit(1)
except BaseException as e:
    sys.stdout.flush()
    tb = traceback.extract_tb(e.__traceback__)
    frames = [f for f in tb if f.filename == "code.py"][-4:]
    lines = ["Traceback (your code):\n"] + traceback.format_list(frames) + traceback.format_exception_only(type(e), e)
    sys.stderr.write("".join(lines))
    sys.exit(1)
`;

interface PythonInfo {
  exe: string;
  /** Folders bound read-only (the standard library, the package folders). */
  binds: string[];
  /** Folders added to sys.path in the jail. */
  path: string[];
}

let info: { ok: true; python: PythonInfo } | { ok: false; reason: string } | undefined;

const PROBE = `import sys, os, json, openpyxl, et_xmlfile
print(json.dumps({"exe": os.path.realpath(sys.executable), "stdlib": [p for p in sys.path if p and os.path.isdir(p) and "-packages" not in p],
  "pkgs": [os.path.dirname(openpyxl.__file__), os.path.dirname(et_xmlfile.__file__)], "version": openpyxl.__version__}))`;

/** Whether run_python can run here, and why not. */
export function pythonAvailable(python?: string): { ok: boolean; reason: string } {
  const r = probe(python);
  return r.ok ? { ok: true, reason: `${r.python.exe} with openpyxl, in the jail` } : r;
}

function probe(python?: string): { ok: true; python: PythonInfo } | { ok: false; reason: string } {
  if (info && !python) return info;
  const jail = jailAvailable();
  if (!jail.ok) return { ok: false, reason: `run_python needs the sandbox jail: ${jail.reason}` };
  const failures: string[] = [];
  let found: { ok: true; python: PythonInfo } | undefined;
  for (const cand of python ? [python] : ["/usr/bin/python3", "python3"]) {
    const r = spawnSync(cand, ["-I", "-c", PROBE], { encoding: "utf8", timeout: 15_000 });
    if (r.status !== 0) {
      failures.push(
        `${cand} cannot import openpyxl (${(r.stderr || r.error?.message || "").trim().split("\n").pop()})`,
      );
      continue;
    }
    const p = JSON.parse(r.stdout) as { exe: string; stdlib: string[]; pkgs: string[] };
    // the stdlib folders (never a folder as broad as /usr/lib) and the two package folders
    const stdlib = p.stdlib.filter((d) => /python3?\.?\d*/.test(d.split("/").pop() ?? "") || d.endsWith("lib-dynload"));
    found = {
      ok: true,
      python: { exe: p.exe, binds: [p.exe, ...stdlib, ...p.pkgs], path: [...new Set(p.pkgs.map((d) => dirname(d)))] },
    };
    break;
  }
  const out = found ?? { ok: false as const, reason: failures.join("; ") };
  if (!python) info = out;
  return out;
}

let runnerPath: string | undefined;
function runnerScript(): string {
  if (!runnerPath || !existsSync(runnerPath)) {
    const dir = join(workspaceRoot(), "excel-run-python");
    mkdirSync(dir, { recursive: true });
    runnerPath = join(dir, "runner.py");
    writeFileSync(runnerPath, RUNNER);
  }
  return runnerPath;
}

export interface RunPythonResult {
  output: string;
}

/**
 * Run Python `code` against the workbook file `wbPath` (inside `workspaceDir`); the workbook the code saves
 * replaces it on success. Errors in the code, time-outs and exhausted limits are ToolErrors the model reads.
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
  const p = probe(options.python);
  if (!p.ok) throw new ToolError(`run_python is not available here: ${p.reason}`);
  const codePath = join(workspaceDir, ".code.py");
  const out = join(workspaceDir, ".workbook.out.xlsx");
  writeFileSync(codePath, code);
  try {
    const r = await runJailed({
      readOnly: p.python.binds,
      box: { "runner.py": runnerScript(), "code.py": codePath },
      workbook: wbPath,
      workbookOut: out,
      argv: [p.python.exe, "-I", "-S", "-B", "/box/runner.py", String(maxOut), p.python.path.join(":")],
      env: { PYTHONIOENCODING: "utf-8", HOME: "/work", TMPDIR: "/work", LANG: "C.UTF-8" },
      timeoutMs,
      memoryMb: memMb,
      memoryLimit: "as",
      diskMb,
      scratchDir: workspaceDir,
    });
    if (r.timedOut) throw new ToolError(`run_python timed out after ${timeoutMs} ms (the process was killed)`);
    const truncated = r.stdout.length > maxOut;
    const output = r.stdout.slice(0, maxOut) + (truncated ? `\n[output truncated at ${maxOut} characters]` : "");
    if (r.status !== 0) {
      const err = r.stderr.trim();
      let msg = err.split("\n").slice(-12).join("\n").slice(0, 3000) || `exit status ${r.status}`;
      if (/MemoryError|Cannot allocate memory/.test(err))
        msg = `run_python hit the memory limit (${memMb} MB):\n${msg}`;
      else if (/No space left on device|File too large|Errno 28|Errno 27/.test(err))
        msg = `run_python hit the disk limit (${diskMb} MB):\n${msg}`;
      else if (r.status === 137 || r.status === 9) msg = `run_python was killed (memory limit ${memMb} MB?):\n${msg}`;
      throw new ToolError(`${msg}${output ? `\noutput before the error:\n${output}` : ""}`);
    }
    if (existsSync(out)) renameSync(out, wbPath);
    return { output };
  } finally {
    rmSync(codePath, { force: true });
    rmSync(out, { force: true });
  }
}
