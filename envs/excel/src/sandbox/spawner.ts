/**
 * Jails are forked from a small helper process, not from the env process. fork() copies the parent's page tables,
 * and Node waits in `spawn()` until the child has exec'd: from an env process of 1.6 GB one jail start held the
 * event loop for 50–120 ms of CPU (300 ms of wall time on a loaded machine), once per rollout.
 *
 * The helper is a bare Node process (`node -e`, no flags or environment of the env's), started once under
 * `setpriv --pdeathsig KILL` so it dies with the env process, even when that is SIGKILLed; its jails, started with
 * their own parent-death signal, die with it. It spawns each jail and hands the jail's stdio sockets back over its
 * IPC channel; exit and kill go over the same channel. `BENCHMAX_JAIL_SPAWNER=0` spawns jails directly.
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
  try {
    c = spawn(m.argv[0], m.argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], env: m.env });
  } catch (e) {
    send({ t: "error", id: m.id, message: String((e && e.message) || e) });
    return;
  }
  c.on("error", (e) => {
    kids.delete(m.id);
    send({ t: "error", id: m.id, message: e.message });
  });
  if (c.pid === undefined) return;
  const pipes = [take(c.stdin), take(c.stdout), take(c.stderr)];
  kids.set(m.id, c);
  c.on("exit", (code, signal) => {
    kids.delete(m.id);
    send({ t: "exit", id: m.id, code, signal });
  });
  send({ t: "pid", id: m.id, pid: c.pid });
  pipes.forEach((h, fd) => send({ t: "io", id: m.id, fd }, h));
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
  private pendingIo = 3;
  private exited = false;
  private refd = true;

  constructor(
    readonly id: number,
    private readonly owner: Helper,
  ) {
    super();
    // the owner may unref each stream, as it would a ChildProcess's pipes
    for (const s of [this.stdin, this.stdout, this.stderr]) Object.assign(s, { unref: () => this.unref() });
  }

  io(fd: number, socket: Socket): void {
    socket.on("error", () => {});
    if (!this.refd) socket.unref();
    this.sockets.push(socket);
    if (fd === 0) this.stdin.pipe(socket);
    else socket.pipe(fd === 1 ? this.stdout : this.stderr);
    if (--this.pendingIo === 0) this.settled();
  }

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
    if (this.pendingIo > 0) this.settled();
    this.emit("exit", code, signal);
  }

  fail(message: string): void {
    this.emit("error", new Error(message));
    this.exit(null, null);
  }

  kill(signal: NodeJS.Signals = "SIGTERM"): boolean {
    if (this.exited) return false;
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

/**
 * Spawn `argv` with only `env` and piped stdio, from the helper process when it can run (else directly: the same
 * ChildProcess as before).
 */
export function spawnJailProcess(argv: string[], env: NodeJS.ProcessEnv): JailProcess {
  if (process.env.BENCHMAX_JAIL_SPAWNER !== "0") {
    helper ??= startHelper();
    const h = helper;
    if (h?.proc.connected) {
      const j = new RemoteJail(nextId++, h);
      h.jails.set(j.id, j);
      if (h.waiting++ === 0) h.proc.channel?.ref();
      h.proc.send({ t: "spawn", id: j.id, argv, env });
      return j;
    }
  }
  return spawn(argv[0]!, argv.slice(1), { stdio: ["pipe", "pipe", "pipe"], env });
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
