import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runGroup } from "../libreoffice-jail.js";
import { spawnCaptured } from "./spawn-captured.js";
import { type JailProcess, spawnerPid, spawnJailProcess } from "./spawner.js";

const linux = process.platform === "linux";
if (!linux) console.warn("spawner tests skipped: the jail helper is used on Linux only");

function run(p: JailProcess): Promise<{ out: string; err: string; code: number | null; signal: string | null }> {
  let out = "";
  let err = "";
  p.stdout.on("data", (d: Buffer) => (out += d));
  p.stderr.on("data", (d: Buffer) => (err += d));
  return new Promise((resolve) => {
    p.on("exit", (code: number | null, signal: string | null) => {
      // bytes may still be on their way when the exit arrives (as with a ChildProcess's "exit")
      setImmediate(() => setImmediate(() => resolve({ out, err, code, signal })));
    });
  });
}

/** Whether a process runs (a zombie waiting for its new parent's wait does not). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

const ppidOf = (pid: number) => Number(readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]!.split(" ")[1]);

describe.runIf(linux)("spawnJailProcess (the helper process that forks jails)", () => {
  it("runs the program with only the given environment, its stdio piped to this process", async () => {
    const p = spawnJailProcess(["/bin/sh", "-c", 'read x; echo "got $x $FOO [$HOME]"; echo oops >&2; exit 3'], {
      PATH: "/usr/bin:/bin",
      FOO: "bar",
    });
    const done = run(p);
    p.stdin.write("hello\n");
    const r = await done;
    expect(r).toMatchObject({ out: "got hello bar []\n", err: "oops\n", code: 3, signal: null });
  });

  it("forks from the helper, not from this process", async () => {
    const p = spawnJailProcess(["/bin/sleep", "30"], { PATH: "/usr/bin:/bin" });
    const done = run(p);
    await once(p, "spawn");
    expect(spawnerPid()).toBeTypeOf("number");
    expect(ppidOf(p.pid!)).toBe(spawnerPid());
    expect(ppidOf(spawnerPid()!)).toBe(process.pid);
    expect(p.kill("SIGKILL")).toBe(true);
    expect(await done).toMatchObject({ code: null, signal: "SIGKILL" });
    expect(p.kill("SIGKILL")).toBe(false);
  });

  it("reports a program that cannot start as an error", async () => {
    const p = spawnJailProcess(["/nonexistent/program"], {});
    const e = await new Promise<Error>((r) => p.on("error", r));
    expect(e.message).toMatch(/ENOENT/);
  });

  it("a command line still being made: spawned once it resolves; killed before, never started; rejected, an error", async () => {
    let give: (argv: string[]) => void = () => {};
    const p = spawnJailProcess(new Promise<string[]>((r) => (give = r)), { PATH: "/usr/bin:/bin" });
    const done = run(p);
    expect(p.pid).toBeUndefined();
    give(["/bin/echo", "later"]);
    expect(await done).toMatchObject({ out: "later\n", code: 0 });

    const marker = `/tmp/benchmax-spawner-test-${process.pid}-${Date.now()}`;
    let giveKilled: (argv: string[]) => void = () => {};
    const k = spawnJailProcess(new Promise<string[]>((r) => (giveKilled = r)), { PATH: "/usr/bin:/bin" });
    const killed = run(k);
    expect(k.kill("SIGKILL")).toBe(true);
    giveKilled(["/usr/bin/touch", marker]);
    expect(await killed).toMatchObject({ code: null, signal: "SIGKILL" });
    expect(k.pid).toBeUndefined();
    expect(existsSync(marker)).toBe(false);

    const bad = spawnJailProcess(Promise.reject(new Error("no cgroup")), {});
    const [e] = (await once(bad, "error")) as [Error];
    expect(e.message).toMatch(/could not start: no cgroup/);
  });

  it("a helper that dies takes its jails' exits with it, and the next spawn starts a new helper", async () => {
    const p = spawnJailProcess(["/bin/sleep", "30"], { PATH: "/usr/bin:/bin" });
    const done = run(p);
    await once(p, "spawn");
    const old = spawnerPid()!;
    process.kill(old, "SIGKILL");
    expect(await done).toMatchObject({ code: null, signal: "SIGKILL" });
    try {
      process.kill(p.pid!, "SIGKILL"); // a plain program has no parent-death signal of its own (jails do)
    } catch {}
    const q = spawnJailProcess(["/bin/echo", "again"], { PATH: "/usr/bin:/bin" });
    expect((await run(q)).out).toBe("again\n");
    expect(spawnerPid()).not.toBe(old);
  });

  it("spawnCaptured (run_code's fresh path) forks from the helper: output captured, exit status, time limit", async () => {
    const r = await spawnCaptured(
      ["/bin/sh", "-c", 'echo "ppid $PPID"; echo err >&2; exit 4'],
      { PATH: "/usr/bin:/bin" },
      30_000,
    );
    expect(r).toMatchObject({ status: 4, timedOut: false, stderr: "err\n" });
    expect(r.stdout).toBe(`ppid ${spawnerPid()}\n`);
    const slow = await spawnCaptured(["/bin/sleep", "30"], { PATH: "/usr/bin:/bin" }, 200);
    expect(slow).toMatchObject({ status: null, timedOut: true });
    await expect(spawnCaptured(["/nonexistent/program"], {}, 1000)).rejects.toThrow(/ENOENT/);
  });

  it("runGroup (LibreOffice's runs) forks from the helper, leads its own group, and its time limit kills the group", async () => {
    let pid: number | undefined;
    const r = await runGroup(["/bin/sh", "-c", 'echo "$PPID" >&2; exit 2'], 30_000, (p) => (pid = p));
    expect(r).toMatchObject({ code: 2, timedOut: false, stderr: `${spawnerPid()}\n` });
    expect(r.pid).toBe(pid);
    // a grandchild in the group that holds stderr: the run ends only when the group is killed at the limit
    const t = await runGroup(["/bin/sh", "-c", "sleep 30 & echo $! >&2; wait"], 300);
    expect(t.timedOut).toBe(true);
    const grandchild = Number(t.stderr.trim());
    // its stderr closed as it died; the kernel finishes its exit a moment later
    for (let i = 0; i < 250 && running(grandchild); i++) await new Promise((r) => setTimeout(r, 20));
    expect(running(grandchild)).toBe(false);
  });
});
