import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolResult } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { fixturesDir } from "../dataset.js";
import { createExcelEnv } from "../index.js";
import { preloadRunCode, runCode } from "../run-code.js";
import { pythonAvailable, runPython } from "../run-python.js";
import { cgroupSupport } from "./cgroup.js";
import { HolderProcess } from "./holder-process.fixture.js";
import { closeInterpreters, interpreterStats } from "./interpreters.js";
import { jailAvailable } from "./jail.js";

const py = pythonAvailable();
const jail = jailAvailable();
if (!py.ok) console.warn(`[env-excel] skipping the live-interpreter tests: ${py.reason}`);
const cg = py.ok ? cgroupSupport() : null;
console.info(
  `[env-excel] jail memory bound here: ${cg ? `cgroup ${cg} (whole jail)` : "per-process cap x process cap (no writable cgroup)"}`,
);
const input = join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_input.xlsx");
const goldDir = join(fixturesDir(), "spreadsheetbench/spreadsheet/101");

function sandbox(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "live-test-"));
  const file = join(dir, "workbook.xlsx");
  copyFileSync(input, file);
  return { dir, file };
}
const text = (r: ToolResult) => (typeof r.content === "string" ? r.content : JSON.stringify(r.content));

afterAll(() => closeInterpreters());

describe.skipIf(!py.ok)("a live interpreter per rollout", () => {
  it("run_python: variables, imports and an open workbook carry over between calls", async () => {
    const { dir, file } = sandbox();
    await runPython(file, dir, "import statistics\nx = 41\nwb = openpyxl.load_workbook(workbook_path)");
    const r = await runPython(file, dir, "print(x + 1, statistics.mean([1, 3]), wb.active['A1'].value)");
    expect(r.output).toBe("42 2 Item\n");
    // another rollout has its own interpreter
    const other = sandbox();
    await expect(runPython(other.file, other.dir, "print(x)")).rejects.toThrow(/NameError/);
  }, 60_000);

  it("run_code: globals and the loaded workbook carry over between calls", async () => {
    const { dir, file } = sandbox();
    await runCode(file, dir, "globalThis.n = 41; workbook.worksheets[0].getCell('C1').value = 'kept';", {
      deferSave: true,
    });
    const r = await runCode(file, dir, "console.log(n + 1, workbook.worksheets[0].getCell('C1').value)", {
      deferSave: true,
    });
    expect(r.output).toBe("42 kept\n");
  }, 60_000);

  it("run_code preloaded at the rollout's start: the first call finds the workbook loaded; a later change on the host is sent", async () => {
    const { dir, file } = sandbox();
    const ms = await preloadRunCode(file, dir, { deferSave: true });
    expect(ms).toBeGreaterThan(0);
    const before = readFileSync(file);
    const r = await runCode(file, dir, "console.log(workbook.worksheets[0].getCell('A1').value)", { deferSave: true });
    expect(r.output).toBe("Item\n");
    expect(interpreterStats().lastCall?.sent).toBe(false);
    // the preload changed nothing: the host file is untouched
    expect(readFileSync(file).equals(before)).toBe(true);
    // a structured tool's change (another workbook here) reaches the interpreter on the next call
    copyFileSync(join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_answer.xlsx"), file);
    await runCode(file, dir, "console.log(1)", { deferSave: true });
    expect(interpreterStats().lastCall?.sent).toBe(true);
  }, 60_000);

  it("an env with preloadRunCode claims the interpreter at init; the model's run_code sees the workbook", async () => {
    const env = createExcelEnv({ preloadRunCode: true });
    const [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
    await env.init("pre-1", task!);
    const r = await env.runTool("pre-1", {
      name: "run_code",
      arguments: { code: "console.log(workbook.worksheets[0].getCell('A1').value)" },
    });
    expect(text(r)).toBe("Item\n");
    expect(interpreterStats().lastCall?.sent).toBe(false);
    await env.release("pre-1");
    await env.close();
  }, 60_000);

  it("a call past its time limit kills only that interpreter: the next call says the state is gone", async () => {
    const { dir, file } = sandbox();
    const victim = sandbox();
    await runPython(victim.file, victim.dir, "v = 'still here'");
    await runPython(file, dir, "x = 1");
    await expect(runPython(file, dir, "while True: pass", { timeoutMs: 500 })).rejects.toThrow(
      /timed out after 500 ms: the interpreter was stopped; the next call starts a fresh one, so variables/,
    );
    await expect(runPython(file, dir, "print(x)")).rejects.toThrow(/NameError/);
    expect((await runPython(victim.file, victim.dir, "print(v)")).output).toBe("still here\n");
  }, 60_000);

  it("an interpreter lives at most as long as its rollout's deadline: killed busy at it, refused after it", async () => {
    const { dir, file } = sandbox();
    const victim = sandbox();
    await runPython(victim.file, victim.dir, "v = 'still here'");
    // the call's own limit is far away: only the deadline can end it (whenever the interpreter started)
    const endsAt = performance.now() + 1500;
    await expect(runPython(file, dir, "x = 1\nwhile True: pass", { timeoutMs: 300_000, endsAt })).rejects.toThrow(
      /the episode's deadline passed \(an interpreter lives at most as long as its rollout\)/,
    );
    const pids = interpreterStats().pids;
    await expect(runPython(file, dir, "print(x)", { endsAt })).rejects.toThrow(/deadline passed/);
    expect(interpreterStats().pids).toEqual(pids); // refused without starting one
    expect((await runPython(victim.file, victim.dir, "print(v)")).output).toBe("still here\n");
  }, 120_000);

  it("through the env: a code call after the episode's deadline is a readable tool error", async () => {
    const env = createExcelEnv({ tools: "python", episodeDeadlineMs: 1 });
    try {
      const [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
      await env.init("late", task!);
      await new Promise((r) => setTimeout(r, 5));
      const r = await env.runTool("late", { name: "run_python", arguments: { code: "print(1)" } });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/run_python failed: the episode's deadline passed/);
    } finally {
      await env.close();
    }
  }, 60_000);

  it("pool jails start at low priority; a rollout's interpreter runs at normal priority and cannot raise its own", async () => {
    if (process.getuid?.() !== 0) {
      console.warn(
        "[env-excel] skipping the priority check: pool jails start at normal priority unless the env is root",
      );
      return;
    }
    closeInterpreters();
    const a = sandbox();
    await runPython(a.file, a.dir, "print(1)", { warmPool: 1 });
    // bounded wait (not a timing assertion): the pool's refill is ready
    for (let i = 0; i < 4800; i++) {
      const st = interpreterStats();
      if ((st.warmBy.python ?? 0) >= 1 && !st.startingBy.python) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    const live = new Set(interpreterStats().pids);
    const niceOf = (pid: number) => {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
    };
    const parentOf = (pid: number) => {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    };
    const pythons = [...procTree(process.pid)].filter(([, c]) => c.startsWith("python")).map(([p]) => p);
    const rollout = pythons.filter((p) => live.has(parentOf(p)));
    const warm = pythons.filter((p) => !live.has(parentOf(p)));
    expect(rollout.length).toBe(1);
    expect(warm.length).toBeGreaterThanOrEqual(1);
    expect(rollout.map(niceOf)).toEqual([0]);
    expect(warm.map(niceOf)).toEqual(warm.map(() => 10));
    // the next rollout takes the warm jail: normal priority, and its code cannot raise it further
    const b = sandbox();
    const r = await runPython(
      b.file,
      b.dir,
      "import os\nprint(os.getpriority(os.PRIO_PROCESS, 0))\ntry:\n    os.setpriority(os.PRIO_PROCESS, 0, -5)\n    print('raised')\nexcept PermissionError:\n    print('refused')",
    );
    expect(r.output.trim().split("\n")).toEqual(["0", "refused"]);
    closeInterpreters();
  }, 120_000);

  it("a clean environment: only the variables the jail sets, no PWD, OLDPWD or host variable", async () => {
    const { dir, file } = sandbox();
    const r = await runPython(file, dir, "import os, json\nprint(json.dumps(sorted(os.environ)), os.getcwd())");
    expect(r.output).toBe('["HOME", "LANG", "PYTHONIOENCODING", "TMPDIR"] /work\n');
    const js = await runCode(
      file,
      dir,
      "const p = workbook.constructor.constructor('return process')(); console.log(Object.keys(p.env).sort().join(','))",
    );
    expect(js.output).toBe("HOME,LANG,TMPDIR\n");
  }, 60_000);

  it("fork bomb: the jail's processes are capped and gone after the call; another rollout is unaffected", async () => {
    const { dir, file } = sandbox();
    const victim = sandbox();
    await runPython(victim.file, victim.dir, "total = 0");
    const bomb = runPython(
      file,
      dir,
      `import os, time
pids = []
for i in range(400):
    try:
        pid = os.fork()
    except OSError as e:
        print("refused", e.errno)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    pids.append(pid)
print(len(pids))
kids = pids`,
      { maxProcesses: 16, timeoutMs: 30_000 },
    );
    // the victim keeps computing while the bomb runs
    for (let i = 1; i <= 5; i++) await runPython(victim.file, victim.dir, `total += ${i}`);
    const lines = (await bomb).output.trim().split("\n");
    expect(lines[0]).toBe("refused 11"); // EAGAIN: RLIMIT_NPROC holds
    expect(Number(lines[1])).toBeGreaterThan(0);
    expect(Number(lines[1])).toBeLessThan(16);
    // the interpreter survives, its children do not outlive the call
    const after = await runPython(
      file,
      dir,
      "import os\nalive = 0\nfor p in kids:\n    try:\n        os.kill(p, 0); alive += 1\n    except OSError:\n        pass\nprint(alive)",
      { maxProcesses: 16 },
    );
    expect(after.output).toBe("0\n");
    expect((await runPython(victim.file, victim.dir, "print(total)")).output).toBe("15\n");
  }, 90_000);

  it("memory bomb with 5 forked children: the jail's memory is bounded as a whole", async () => {
    const { dir, file } = sandbox();
    // each child says it holds its 100 MB (its pid, 8 bytes); a child stops holding when it is reaped. `held` is the
    // most children holding at one moment (the OOM killer may take a child that already held, so a running count
    // of "held" messages is not what the cap bounds); the loop ends once every child holds or is gone
    const code = `import os, select, time, json, struct
r, w = os.pipe()
kids = []
for i in range(5):
    pid = os.fork()
    if pid == 0:
        b = bytearray(100 << 20)
        for j in range(0, len(b), 4096):
            b[j] = 1
        os.write(w, struct.pack("q", os.getpid()))
        time.sleep(60)
        os._exit(0)
    kids.append(pid)
held, killed, other = 0, 0, 0
holding, pending, buf = set(), set(kids), b""
while len(holding) + (5 - len(pending)) < 5:
    ready, _, _ = select.select([r], [], [], 0.05)
    if ready:
        buf += os.read(r, 64)
        while len(buf) >= 8:
            pid = struct.unpack("q", buf[:8])[0]
            if pid in pending:  # not already reaped (a child can be killed after it said so)
                holding.add(pid)
            buf = buf[8:]
    for p in list(pending):
        q, st = os.waitpid(p, os.WNOHANG)
        if q:
            pending.discard(p)
            holding.discard(p)
            if os.WIFSIGNALED(st) and os.WTERMSIG(st) == 9: killed += 1
            else: other += 1
    held = max(held, len(holding))
print(json.dumps({"held": held, "killed": killed, "other": other}))`;
    if (!cg) {
      console.warn("[env-excel] no writable cgroup here: the memory bound is the per-process cap x the process cap");
      // the per-process cap still holds: one child cannot take more than the cap
      const r = await runPython(
        file,
        dir,
        "import os\npid = os.fork()\nif pid == 0:\n    try:\n        b = bytearray(600 << 20); os._exit(0)\n    except MemoryError:\n        os._exit(3)\nprint(os.WEXITSTATUS(os.waitpid(pid, 0)[1]))",
        { maxMemoryMb: 256 },
      );
      expect(r.output).toBe("3\n");
      return;
    }
    const r = await runPython(file, dir, code, { maxMemoryMb: 256, timeoutMs: 60_000 }).catch((e: Error) => e);
    if (r instanceof Error) {
      // the OOM killer may pick the interpreter itself: then the call fails with the memory message
      expect(r.message).toMatch(/memory limit \(256 MB for the interpreter and its processes together\)/);
      return;
    }
    const seen = JSON.parse(r.output) as { held: number; killed: number; other: number };
    // 5 x 100 MB cannot be held at once under a 256 MB cap for the whole jail: at most 2 at any moment
    expect(seen.held).toBeLessThanOrEqual(2);
    expect(seen.killed).toBeGreaterThanOrEqual(3);
  }, 90_000);

  it("the structured tools and the scorer see the workbook the live interpreter left; a victim rollout scores 1", async () => {
    const env = createExcelEnv({ tools: "all" });
    try {
      const [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
      await env.init("attacker", task!);
      await env.init("victim", task!);
      // run_code keeps its workbook in the live process (deferred save): read_range still sees the edit
      let r = await env.runTool("victim", {
        name: "run_code",
        arguments: { code: "workbook.worksheets[0].getCell('B8').value = { formula: 'SUM(B2:B7)' };" },
      });
      expect(r.isError, text(r)).toBe(false);
      r = await env.runTool("victim", { name: "read_range", arguments: { sheet: "Sheet1", range: "B8" } });
      expect(text(r)).toContain("SUM(B2:B7)");
      // the attacker bombs its own interpreter meanwhile
      const bombs = await Promise.all([
        env.runTool("attacker", { name: "run_python", arguments: { code: "while True: pass" } }),
        env.runTool("victim", { name: "run_python", arguments: { code: "import os\nprint(os.getpid())" } }),
      ]);
      expect(bombs[1]!.isError, text(bombs[1]!)).toBe(false);
      expect(await env.computeReward("victim", [], task!)).toEqual({ pass: 1, soft: 1 });
      expect(await env.computeReward("attacker", [], task!)).toEqual({ pass: 0, soft: 0 });
      await env.release("victim");
      await env.release("attacker");
    } finally {
      await env.close();
    }
  }, 120_000);
});

describe.skipIf(!py.ok)("replay on the other test cases", () => {
  it("recorded calls replay in one interpreter per case, so state from an earlier call is there", async () => {
    const env = createExcelEnv({ tools: "python" });
    try {
      const [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
      expect(task!.groundTruth.answers.length).toBeGreaterThan(1);
      await env.init("replay", task!);
      for (const code of [
        "formula = '=SUM(B2:B7)'",
        "wb = openpyxl.load_workbook(workbook_path)\nwb.active['B8'] = formula\nwb.save(workbook_path)",
      ]) {
        const r = await env.runTool("replay", { name: "run_python", arguments: { code } });
        expect(r.isError, text(r)).toBe(false);
      }
      expect(await env.computeReward("replay", [], task!)).toEqual({ pass: 1, soft: 1 });
      await env.release("replay");
    } finally {
      await env.close();
    }
  }, 120_000);
});

function procTree(root: number): Map<number, string> {
  const parent = new Map<number, number>();
  const comm = new Map<number, string>();
  for (const n of readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const stat = readFileSync(`/proc/${n}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      parent.set(Number(n), Number(stat.slice(close + 2).split(" ")[1]));
      comm.set(Number(n), stat.slice(stat.indexOf("(") + 1, close));
    } catch {}
  }
  const out = new Map<number, string>();
  const walk = (p: number) => {
    for (const [c, pp] of parent) {
      if (pp !== p || out.has(c)) continue;
      out.set(c, comm.get(c) ?? "");
      walk(c);
    }
  };
  walk(root);
  return out;
}

describe.skipIf(!py.ok || !jail.ok)("the env process and its jails", () => {
  it("a directory fd open in the env process is not usable from run_python (os.fchdir)", async () => {
    const fd = openSync(goldDir, "r");
    const holder = new HolderProcess("holder", { extraFd: fd });
    try {
      // the precondition: the env process does hold fd 3 on the gold folder
      expect(readlinkSync(`/proc/${holder.child.pid}/fd/3`)).toBe(goldDir);
      const { dir, file } = sandbox();
      const r = await holder.ask({
        dir,
        file,
        code: `import os
found = []
for fd in range(3, 256):
    try:
        os.fchdir(fd)
        found.append((fd, os.listdir(".")))
    except OSError:
        pass
print(found)`,
      });
      expect(r).toEqual({ ok: true, output: "[]\n" });
    } finally {
      holder.child.kill("SIGKILL");
      closeSync(fd);
    }
  }, 90_000);

  it("no orphans: SIGKILL the env process and every jail it held dies", async () => {
    const holder = new HolderProcess("holder");
    try {
      const dirs = [sandbox(), sandbox(), sandbox()];
      for (const [i, d] of dirs.entries()) {
        const r = await holder.ask({ ...d, code: `x = ${i}\nprint('up')` });
        expect(r.ok, r.output).toBe(true);
      }
      // background children that would outlive a careless jail
      const bg = await holder.ask({
        ...dirs[0]!,
        code: "import threading, time\nt = threading.Thread(target=time.sleep, args=(600,), daemon=True)\nt.start()\nprint('ok')",
      });
      expect(bg.ok, bg.output).toBe(true);
      // one interpreter is busy (not reading its pipe) when the env dies: only the parent-death signal ends it
      const sleeper = "import ctypes, time\nctypes.CDLL(None).prctl(15, b'bmx-sleeper', 0, 0, 0)\ntime.sleep(600)";
      holder.child.stdin!.write(`${JSON.stringify({ ...dirs[1]!, code: sleeper })}\n`);
      const sleeping = () => [...procTree(holder.child.pid!).values()].includes("bmx-sleeper");
      for (let i = 0; i < 400 && !sleeping(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(sleeping()).toBe(true);
      const tree = procTree(holder.child.pid!);
      const interpreters = [...tree.values()].filter((c) => c.startsWith("python") || c === "bmx-sleeper");
      expect(interpreters.length).toBeGreaterThanOrEqual(3);
      holder.child.kill("SIGKILL");
      await new Promise((r) => holder.child.once("exit", r));
      // the kernel delivers the parent-death signals; wait until none of the jail's processes is left
      const alive = () =>
        [...tree.keys()].filter(
          (p) => existsSync(`/proc/${p}`) && !readFileSync(`/proc/${p}/stat`, "utf8").includes(") Z "),
        );
      for (let i = 0; i < 200 && alive().length; i++) await new Promise((r) => setTimeout(r, 50));
      expect(alive()).toEqual([]);
    } finally {
      holder.child.kill("SIGKILL");
    }
  }, 90_000);

  it("interpreters end when their rollout is released", async () => {
    const env = createExcelEnv({ tools: "python" });
    try {
      const [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
      await env.init("rel", task!);
      const r = await env.runTool("rel", { name: "run_python", arguments: { code: "print(1)" } });
      expect(r.isError, text(r)).toBe(false);
      const before = interpreterStats().live;
      await env.release("rel");
      expect(interpreterStats().live).toBe(before - 1);
    } finally {
      await env.close();
    }
  }, 60_000);
});
