/**
 * Jails are forked from a small helper process, not from the env process. fork() copies the parent's page tables,
 * and Node waits in `spawn()` until the child has exec'd: from an env process of 1.6 GB one jail start held the
 * event loop for 50–120 ms of CPU (300 ms of wall time on a loaded machine), once per rollout.
 *
 * The helper is a bare Node process (`node -e`, no flags or environment of the env's), started once under
 * `setpriv --pdeathsig KILL` so it dies with the env process, even when that is SIGKILLed; its jails, started with
 * their own parent-death signal, die with it. It spawns each jail and hands the jail's stdio sockets back over its
 * IPC channel; exit and kill go over the same channel. One-off runs fork from it too: run_code's fresh path
 * (spawn-captured.ts) and LibreOffice's conversions (libreoffice-jail.ts `runGroup`: detached, their own process
 * group, stderr only). `BENCHMAX_JAIL_SPAWNER=0` spawns directly.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { existsSync } from "node:fs";
import { Socket } from "node:net";
import { PassThrough, type Readable, type Writable } from "node:stream";

/** What a jail's owner uses of its host process: a ChildProcess, or its stand-in for one the helper started. */
export interface JailProcess extends EventEmitter {
  readonly pid?: number | undefined;
  readonly stdin: Writable;
  readonly stdout: Readable;
  readonly stderr: Readable;
  kill(signal?: NodeJS.Signals): boolean;
  unref(): void;
}

/**
 * The helper: spawns what it is asked to, sends back the pid, then the three stdio pipes, then the exit. Each pipe
 * goes over as its raw handle with reading stopped at once (the helper never reads a byte meant for the env), and the
 * helper's copy is closed once sent.
 */
const HELPER = `"use strict";
const { spawn } = require("node:child_process");
const kids = new Map();
const send = (m, h) => {
  try {
    process.send(m, h, h ? () => h.close() : undefined);
  } catch {}
};
const take = (s) => {
  const h = s._handle;
  h.reading = false;
  h.readStop();
  h.onread = () => {};
  s._handle = null;
  return h;
};
process.on("disconnect", () => {
  for (const c of kids.values()) try { c.kill("SIGKILL"); } catch {}
  process.exit(0);
});
process.on("message", (m) => {
  if (m.t === "kill") {
    const c = kids.get(m.id);
    if (c) try { c.kill(m.signal); } catch {}
    return;
  }
  if (m.t !== "spawn") return;
  let c;
  const stdio = m.stdio || ["pipe", "pipe", "pipe"];
  try {
    c = spawn(m.argv[0], m.argv.slice(1), { stdio, env: m.env, detached: !!m.detached });
  } catch (e) {
    send({ t: "error", id: m.id, message: String((e && e.message) || e) });
    return;
  }
  c.on("error", (e) => {
    kids.delete(m.id);
    send({ t: "error", id: m.id, message: e.message });
  });
  if (c.pid === undefined) return;
  const pipes = [c.stdin, c.stdout, c.stderr].map((s) => (s ? take(s) : null));
  kids.set(m.id, c);
  c.on("exit", (code, signal) => {
    kids.delete(m.id);
    send({ t: "exit", id: m.id, code, signal });
  });
  send({ t: "pid", id: m.id, pid: c.pid });
  pipes.forEach((h, fd) => h && send({ t: "io", id: m.id, fd }, h));
});
`;

type HelperMsg =
  | { t: "pid"; id: number; pid: number }
  | { t: "io"; id: number; fd: 0 | 1 | 2 }
  | { t: "exit"; id: number; code: number | null; signal: NodeJS.Signals | null }
  | { t: "error"; id: number; message: string };

interface Helper {
  proc: ChildProcess;
  jails: Map<number, RemoteJail>;
  /** Jails whose pid or sockets have not come back yet (the channel keeps the loop alive meanwhile). */
  waiting: number;
}

let helper: Helper | undefined;
let nextId = 1;

/** A jail the helper started: stdio streams at once (bytes flow once the sockets arrive), pid and exit by message. */
class RemoteJail extends EventEmitter implements JailProcess {
  pid: number | undefined;
  readonly stdin = new PassThrough();
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  private readonly sockets: Socket[] = [];
  private pendingIo: number;
  /** The piped fds whose socket has not come yet. */
  private readonly awaited = new Set<number>();
  /** Output streams not finished yet (`close` waits for them and for the exit). */
  private openOut = 0;
  private exited = false;
  private refd = true;
  /** Its command line is still being made: nothing was sent to the helper yet. */
  pendingSpawn = false;
  /** Killed before it was sent to the helper (with this signal): it is never spawned. */
  cancelled: NodeJS.Signals | undefined;

  constructor(
    readonly id: number,
    private readonly owner: Helper,
    stdio: StdioKind[],
    /** Hold the helper's channel (so this process's loop) until the exit, not only until the sockets came. */
    private readonly holdUntilExit: boolean,
  ) {
    super();
    // the owner may unref each stream, as it would a ChildProcess's pipes
    for (const s of [this.stdin, this.stdout, this.stderr]) Object.assign(s, { unref: () => this.unref() });
    const streams = [this.stdin, this.stdout, this.stderr];
    stdio.forEach((k, fd) => {
      if (k === "pipe") this.awaited.add(fd);
      else if (fd > 0) streams[fd]!.end(); // nothing will come on it
    });
    this.pendingIo = this.awaited.size;
    for (const s of [this.stdout, this.stderr]) {
      this.openOut++;
      s.once("finish", () => {
        this.openOut--;
        this.maybeClose();
      });
    }
  }

  io(fd: number, socket: Socket): void {
    socket.on("error", () => {});
    if (!this.refd) socket.unref();
    this.sockets.push(socket);
    this.awaited.delete(fd);
    if (fd === 0) this.stdin.pipe(socket);
    else socket.pipe(fd === 1 ? this.stdout : this.stderr);
    if (--this.pendingIo === 0 && !this.holdUntilExit) this.settled();
  }

  /** `close` as a ChildProcess emits it: once it exited and its output streams ended. */
  private maybeClose(): void {
    if (this.exited && this.openOut === 0 && this.exitStatus) {
      const { code, signal } = this.exitStatus;
      this.exitStatus = undefined;
      this.emit("close", code, signal);
    }
  }

  private exitStatus?: { code: number | null; signal: NodeJS.Signals | null };

  /** Its pid and sockets are all in (or it is gone): it no longer holds the helper's channel. */
  settled(): void {
    if (this.pendingIo < 0) return;
    this.pendingIo = -1;
    if (--this.owner.waiting === 0 && helper === this.owner) this.owner.proc.channel?.unref();
  }

  exit(code: number | null, signal: NodeJS.Signals | null): void {
    if (this.exited) return;
    this.exited = true;
    this.owner.jails.delete(this.id);
    if (this.pendingIo >= 0) this.settled();
    // a socket that never came (the helper lost the jail, or it could not start): its stream ends empty
    for (const fd of this.awaited) if (fd > 0) (fd === 1 ? this.stdout : this.stderr).end();
    this.awaited.clear();
    this.exitStatus = { code, signal };
    this.emit("exit", code, signal);
    this.maybeClose();
  }

  fail(message: string): void {
    this.emit("error", new Error(message));
    this.exit(null, null);
  }

  kill(signal: NodeJS.Signals = "SIGTERM"): boolean {
    if (this.exited) return false;
    if (this.pendingSpawn) {
      this.cancelled = signal;
      return true;
    }
    if (helper === this.owner && this.owner.proc.connected) this.owner.proc.send({ t: "kill", id: this.id, signal });
    else if (this.pid !== undefined) {
      try {
        process.kill(this.pid, signal);
      } catch {
        return false;
      }
    }
    return true;
  }

  unref(): void {
    this.refd = false;
    for (const s of this.sockets) s.unref();
  }
}

function startHelper(): Helper | undefined {
  const node = [process.execPath, "-e", HELPER];
  const argv = existsSync("/usr/bin/setpriv") ? ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--", ...node] : node;
  let proc: ChildProcess;
  try {
    proc = spawn(argv[0]!, argv.slice(1), {
      stdio: ["ignore", "ignore", "inherit", "ipc"],
      env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" },
    });
  } catch {
    return undefined;
  }
  if (proc.pid === undefined) {
    proc.on("error", () => {});
    return undefined;
  }
  const h: Helper = { proc, jails: new Map(), waiting: 0 };
  proc.unref();
  proc.channel?.unref();
  proc.on("message", (m: HelperMsg, handle?: unknown) => {
    // a pipe comes as a raw handle (libuv Pipe): wrapped as a ChildProcess's pipes are
    const socket = handle ? new Socket({ handle, readable: true, writable: true } as never) : undefined;
    const j = h.jails.get(m.id);
    if (!j) {
      socket?.destroy();
      return;
    }
    if (m.t === "pid") {
      j.pid = m.pid;
      j.emit("spawn"); // as a ChildProcess does
    } else if (m.t === "io" && socket) j.io(m.fd, socket);
    else if (m.t === "exit") j.exit(m.code, m.signal);
    else if (m.t === "error") j.fail(`the jail could not start: ${m.message}`);
  });
  const gone = () => {
    if (helper === h) helper = undefined;
    // the helper's jails died with it (their parent-death signal)
    for (const j of [...h.jails.values()]) j.exit(null, "SIGKILL");
  };
  proc.on("error", gone);
  proc.on("exit", gone);
  return h;
}

/** What a spawned program's fd 0, 1 or 2 is: a pipe to this process, or /dev/null. */
export type StdioKind = "pipe" | "ignore";

export interface SpawnOptions {
  /** fds 0, 1, 2 (default: all piped). */
  stdio?: [StdioKind, StdioKind, StdioKind];
  /** A new session and process group with the program as its leader (`process.kill(-pid)` ends the group). */
  detached?: boolean;
  /**
   * Keep this process alive until the program exits, as a ChildProcess does (a one-off run). By default only until
   * its pipes are here: a live jail idles unref'd and never keeps the env process alive.
   */
  holdUntilExit?: boolean;
}

/**
 * Spawn `argv` with only `env`, from the helper process when it can run (else directly: the same ChildProcess as
 * before). The result emits `spawn`, `exit`, `close` (exited and its output streams ended) and `error`, as a
 * ChildProcess does.
 */
export function spawnJailProcess(argv: string[], env: NodeJS.ProcessEnv, options?: SpawnOptions): JailProcess;
/**
 * The same with a command line that is still being made (a jail's cgroups, made on the thread pool): the result
 * stands in for the process at once, and the helper is asked to spawn it once `argv` resolves (a kill before then
 * means it never starts; a rejection is an `error`, then an `exit`). Only where `spawnerReady()`.
 */
export function spawnJailProcess(argv: Promise<string[]>, env: NodeJS.ProcessEnv, options?: SpawnOptions): JailProcess;
export function spawnJailProcess(
  argv: string[] | Promise<string[]>,
  env: NodeJS.ProcessEnv,
  options: SpawnOptions = {},
): JailProcess {
  const stdio = options.stdio ?? ["pipe", "pipe", "pipe"];
  const detached = options.detached ?? false;
  if (spawnerReady()) {
    const h = helper!;
    const j = new RemoteJail(nextId++, h, stdio, options.holdUntilExit ?? false);
    h.jails.set(j.id, j);
    if (h.waiting++ === 0) h.proc.channel?.ref();
    const send = (a: string[]) => {
      if (j.cancelled) j.exit(null, j.cancelled);
      else if (h.proc.connected) h.proc.send({ t: "spawn", id: j.id, argv: a, env, stdio, detached });
      else j.exit(null, "SIGKILL"); // the helper is gone (its exit handler ended the jails it knew of)
    };
    if (Array.isArray(argv)) send(argv);
    else {
      j.pendingSpawn = true;
      argv.then(
        (a) => {
          j.pendingSpawn = false;
          send(a);
        },
        (e: Error) => {
          j.pendingSpawn = false;
          j.fail(`the jail could not start: ${e.message}`);
        },
      );
    }
    return j;
  }
  if (!Array.isArray(argv)) throw new Error("spawnJailProcess: a pending command line needs the spawner helper");
  const c = spawn(argv[0]!, argv.slice(1), { stdio, env, detached });
  // an ignored fd has no stream on a ChildProcess: an empty, ended one stands in
  (["stdin", "stdout", "stderr"] as const).forEach((k, fd) => {
    if (stdio[fd] === "ignore") Object.defineProperty(c, k, { value: new PassThrough().end() });
  });
  return c as JailProcess;
}

/** Whether jails are spawned by the helper here (starting it if it is not running yet). */
export function spawnerReady(): boolean {
  if (process.env.BENCHMAX_JAIL_SPAWNER === "0") return false;
  helper ??= startHelper();
  return !!helper?.proc.connected;
}

/**
 * Start the helper now, while this process is small (its own start is a fork of this process, once): an env that
 * offers a code tool calls this when it finds the jail usable.
 */
export function prestartSpawner(): void {
  if (process.env.BENCHMAX_JAIL_SPAWNER !== "0") helper ??= startHelper();
}

/** The helper's pid (tests), or undefined when none is running. */
export function spawnerPid(): number | undefined {
  return helper?.proc.pid;
}
