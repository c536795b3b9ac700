/**
 * One live interpreter in its own jail (jail.ts): started once, then driven over its stdin/stdout with framed
 * messages (frames.ts), one request at a time. It announces itself with `{t: "ready"}` once its libraries are
 * imported; a pool (interpreters.ts) keeps some of those waiting. A request past its time limit, a broken frame or
 * an early exit kills the whole jail; the caller gets a `JailGone` saying why.
 *
 * Between requests nothing of the jail runs (freeze.ts): once a request is answered, and before its answer is handed
 * on, the interpreter is stopped and every other process of the jail is killed; the next request continues it. So
 * the state a model keeps between calls (variables, imports, an open workbook) survives, while a background thread,
 * child process or timer loop it left runs only while its own rollout's next call is in flight. During a request the
 * jail's CPU is bounded by its cgroup's quota (cgroup.ts), or where there is none by a `Throttle` (freeze.ts).
 */
import { readdirSync, readFileSync } from "node:fs";
import { setPriority } from "node:os";
import type { JailCgroup } from "./cgroup.js";
import { encodeFrame, type Frame, type FrameError, FrameReader } from "./frames.js";
import { childrenOf, quiesce, resume, Throttle } from "./freeze.js";
import { defaultJailCpus, type JailSpec, type SpawnedJail, spawnJail } from "./jail.js";

/** Why a live jail is gone: "timeout" (the caller's limit), "memory" (its cgroup hit the cap), or "died"/"protocol". */
export class JailGone extends Error {
  override name = "JailGone";
  constructor(
    readonly why: "timeout" | "memory" | "died" | "protocol" | "killed",
    message: string,
  ) {
    super(message);
  }
}

const STDERR_TAIL = 4000;

export class LiveJail {
  readonly ready: Promise<void>;
  readonly startedAt = performance.now();
  private readonly child;
  private readonly spawned: SpawnedJail;
  private readonly reader: FrameReader;
  private pending?: { resolve: (f: Frame) => void; reject: (e: Error) => void; timer?: NodeJS.Timeout };
  private onReady?: { resolve: () => void; reject: (e: Error) => void };
  private gone?: JailGone;
  private stderrTail = "";
  /** The interpreter's host pid (the jail's PID namespace's first process), once it is ready. */
  private initPid?: number;
  /** The interpreter is stopped (between requests). */
  private stopped = false;
  /** An answered request's processes being stopped and killed before the answer is handed on. */
  private settling = false;
  private throttle?: Throttle;
  private readonly cpus: number;
  /** Set while a request runs. */
  busy = false;

  constructor(spec: JailSpec, maxHeadBytes: number, maxBodyBytes: number, nice = 0) {
    this.spawned = spawnJail(spec, nice);
    const child = this.spawned.child;
    this.child = child;
    this.cpus = spec.cpus ?? defaultJailCpus();
    this.reader = new FrameReader(maxHeadBytes, maxBodyBytes);
    this.ready = new Promise<void>((resolve, reject) => {
      this.onReady = { resolve, reject };
    });
    this.ready.catch(() => {});
    child.stdout.on("data", (d: Buffer) => this.data(d));
    child.stderr.on("data", (d: Buffer) => {
      this.stderrTail = (this.stderrTail + d.toString("utf8")).slice(-STDERR_TAIL);
    });
    child.stdin.on("error", () => {});
    // an idle jail never keeps the env process alive (a pending request has its own timer)
    child.unref();
    for (const s of [child.stdin, child.stdout, child.stderr]) (s as unknown as { unref?: () => void }).unref?.();
    child.on("error", (e) => this.fail(new JailGone("died", `the interpreter could not start: ${e.message}`)));
    child.on("exit", (code, signal) => {
      const tail = this.stderrTail.trim().split("\n").slice(-6).join("\n");
      if (this.cgroup?.hitLimit())
        this.fail(
          new JailGone(
            "memory",
            `the interpreter ran out of memory (the jail's cap: ${spec.memoryMb} MB for all its processes together)`,
          ),
        );
      else
        this.fail(
          new JailGone("died", `the interpreter exited (${signal ?? `status ${code}`})${tail ? `: ${tail}` : ""}`),
        );
    });
  }

  /** The jail's memory and CPU groups (known once they are made, before its first process starts). */
  private get cgroup(): JailCgroup | undefined {
    return this.spawned.cgroup;
  }

  get alive(): boolean {
    return !this.gone;
  }

  /** Why the jail is gone (undefined while it lives). */
  get goneReason(): string | undefined {
    return this.gone?.message;
  }

  /** The host pid of the jail's outermost process. */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /**
   * The interpreter's host pid: the only child of the outermost process (`unshare --fork`), which after start-up is
   * the interpreter itself (the namespace's first process execs it). Undefined before it is ready or once it is gone.
   */
  interpreterPid(): number | undefined {
    if (this.initPid === undefined && !this.onReady && !this.gone && this.child.pid !== undefined) {
      const kids = childrenOf(this.child.pid);
      if (kids.length === 1) this.initPid = kids[0];
    }
    return this.gone ? undefined : this.initPid;
  }

  /** Whether the jail is stopped now (between requests). */
  get frozen(): boolean {
    return this.stopped && !this.gone;
  }

  /** How a call's CPU is bounded: the jail's cgroup quota, the host's throttle, or none (`cpus` 0). */
  get cpuBound(): "cgroup" | "throttle" | "none" {
    if (this.cpus <= 0) return "none";
    return this.cgroup?.cpu ? "cgroup" : "throttle";
  }

  /** The last request's throttle (where there is no CPU cgroup): how often and how long it held the jail back. */
  get throttled(): { stops: number; stoppedMs: number } | undefined {
    return this.throttle && { stops: this.throttle.stops, stoppedMs: this.throttle.stoppedMs };
  }

  /** The CPU cgroup's throttling counters (where there is one). */
  cgroupThrottled(): { periods: number; throttled: number } | undefined {
    return this.cgroup?.cpuThrottled();
  }

  /**
   * Back to normal priority for a jail started at a lower one (a warm pool's), when a rollout takes it, ready or
   * still starting: every thread of every process of the jail (Linux priorities are per thread, and a child inherits
   * its parent's). Lowering a nice value needs root (interpreters.ts starts pool jails at a lower priority only then).
   */
  prioritise(): void {
    const pid = this.child.pid;
    if (pid === undefined || this.gone) return;
    const walk = (p: number) => {
      let tasks: string[] = [];
      try {
        tasks = readdirSync(`/proc/${p}/task`);
      } catch {
        return;
      }
      for (const t of tasks) {
        try {
          setPriority(Number(t), 0);
        } catch {}
        try {
          for (const c of readFileSync(`/proc/${p}/task/${t}/children`, "utf8").split(" "))
            if (c.trim()) walk(Number(c));
        } catch {}
      }
    };
    walk(pid);
  }

  /** Whether the jail's memory group hit its cap. */
  hitMemoryLimit(): boolean {
    return this.cgroup?.hitLimit() ?? false;
  }

  private data(d: Buffer): void {
    let frames: Frame[];
    try {
      frames = this.reader.push(d);
    } catch (e) {
      this.kill(new JailGone("protocol", `the interpreter broke its message stream (${(e as FrameError).message})`));
      return;
    }
    for (const f of frames) {
      if (this.onReady) {
        if (f.head.t !== "ready") {
          this.kill(new JailGone("protocol", "the interpreter did not start cleanly"));
          return;
        }
        this.onReady.resolve();
        this.onReady = undefined;
        continue;
      }
      const p = this.pending;
      if (!p) {
        this.kill(new JailGone("protocol", "the interpreter sent a message nobody asked for"));
        return;
      }
      this.pending = undefined;
      if (p.timer) clearTimeout(p.timer);
      this.settle(f, p.resolve);
    }
  }

  /**
   * A request was answered: stop the interpreter and kill the rest of the jail, then hand the answer on. Where that
   * cannot be done (the interpreter's pid is unknown, a process will not die) the jail is ended after the answer:
   * nothing of it may run on between calls.
   */
  private settle(f: Frame, resolve: (f: Frame) => void): void {
    this.throttle?.end();
    const init = this.interpreterPid();
    if (init === undefined) {
      this.busy = false;
      resolve(f);
      this.kill(new JailGone("killed", "the interpreter could not be held between calls"));
      return;
    }
    this.settling = true;
    void quiesce(init).then((ok) => {
      this.settling = false;
      this.stopped = ok;
      this.busy = false;
      resolve(f);
      if (!ok) this.kill(new JailGone("killed", "the interpreter's processes could not be stopped after the call"));
    });
  }

  private fail(e: JailGone): void {
    if (this.gone) return;
    this.gone = e;
    this.throttle?.end();
    if (this.onReady) {
      this.onReady.reject(e);
      this.onReady = undefined;
    }
    const p = this.pending;
    this.pending = undefined;
    this.busy = false;
    if (p) {
      if (p.timer) clearTimeout(p.timer);
      p.reject(e);
    }
  }

  /** Send one request and wait for its answer; past `timeoutMs` the jail is killed. */
  request(head: Record<string, unknown>, body: Buffer | undefined, timeoutMs: number): Promise<Frame> {
    if (this.gone) return Promise.reject(this.gone);
    if (this.pending || this.settling) return Promise.reject(new Error("live jail: one request at a time"));
    this.busy = true;
    const init = this.interpreterPid();
    if (this.stopped && init !== undefined) resume(init);
    this.stopped = false;
    this.throttle =
      this.cpuBound === "throttle" && init !== undefined ? new Throttle(init, this.cpus).start() : undefined;
    return new Promise<Frame>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.kill(new JailGone("timeout", `timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending = { resolve, reject, timer };
      // the head and the body go out as two chunks of one writev: the workbook's bytes are not copied into a frame
      const stdin = this.child.stdin;
      stdin.cork();
      stdin.write(encodeFrame(head, undefined, body?.length ?? 0));
      if (body?.length) stdin.write(body);
      stdin.uncork();
    });
  }

  /** Kill the whole jail (SIGKILL to its outermost process; the kernel takes the PID namespace down with it). */
  kill(reason: JailGone = new JailGone("killed", "the interpreter was stopped")): void {
    if (this.cgroup?.hitLimit() && reason.why !== "timeout")
      reason = new JailGone("memory", `the interpreter ran out of memory (${reason.message})`);
    this.fail(reason);
    try {
      this.child.kill("SIGKILL");
    } catch {}
  }
}
