import { once } from "node:events";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
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
});
