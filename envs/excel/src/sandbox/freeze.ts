/**
 * The host's hold on a live jail's processes between and during calls (Linux `/proc` and signals; no cgroup needed,
 * nothing inside the jail takes part, so nothing the model's code does there can undo it):
 * - `quiesce`, once a call has answered: the interpreter (the jail's PID namespace's first process) is stopped with
 *   SIGSTOP, every thread of it at once; then every other process of the namespace is SIGKILLed, round after round,
 *   until none is left (they are all the interpreter's descendants: an orphan is re-parented to the namespace's first
 *   process). A stopped interpreter forks nothing, so the rounds end. Zombies left for the interpreter to reap run
 *   nothing. `resume` (SIGCONT) lets the interpreter go on at the next request: its variables, imports and open
 *   workbook are as they were, and a background thread the model's code started runs again only while its own
 *   rollout's call is in flight.
 * - Why signals and not the cgroup freezer: a cgroup v1 freezer keeps SIGKILL pending until the group is thawed, so a
 *   frozen jail would outlive the env process (its parent-death signal would never land); a stopped process dies of
 *   SIGKILL at once. Signals work wherever the jail does.
 * - `Throttle`: where no CPU cgroup is writable, the same stop/continue bounds a call's CPU (a token bucket over the
 *   jail's CPU time as /proc reports it, checked every `periodMs`): the jail uses at most `cpus` CPUs over any window,
 *   plus one bucket (`burstMs` of CPU) and a sampling period's overshoot.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";

/** USER_HZ: /proc reports CPU time in ticks of 1/100 s on Linux. */
const TICK_MS = 10;

interface ProcStat {
  state: string;
  ppid: number;
  /** utime + stime + cutime + cstime, in ms: its own CPU and that of the children it reaped. */
  cpuMs: number;
}

/** One process's /proc/PID/stat, or undefined when it is gone. */
export function procStat(pid: number): ProcStat | undefined {
  let s: string;
  try {
    s = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  const f = s.slice(s.lastIndexOf(")") + 2).split(" ");
  const n = (i: number) => Number(f[i]) || 0;
  return { state: f[0] ?? "?", ppid: n(1), cpuMs: (n(11) + n(12) + n(13) + n(14)) * TICK_MS };
}

/** The state of each thread of a process (`R`, `S`, `T` …); empty when it is gone. */
export function threadStates(pid: number): string[] {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const t of tasks) {
    try {
      const s = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
      out.push(s.slice(s.lastIndexOf(")") + 2, s.lastIndexOf(")") + 3));
    } catch {}
  }
  return out;
}

let childrenFiles: boolean | undefined;

/** The children of a process: from /proc/PID/task/TID/children, else (no CONFIG_PROC_CHILDREN) a scan of /proc. */
export function childrenOf(pid: number): number[] {
  childrenFiles ??= existsSync(`/proc/self/task/${process.pid}/children`);
  const out: number[] = [];
  if (childrenFiles) {
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${pid}/task`);
    } catch {
      return out;
    }
    for (const t of tasks) {
      try {
        for (const c of readFileSync(`/proc/${pid}/task/${t}/children`, "utf8").split(" "))
          if (c.trim()) out.push(Number(c));
      } catch {}
    }
    return out;
  }
  for (const n of readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    if (procStat(Number(n))?.ppid === pid) out.push(Number(n));
  }
  return out;
}

/** Every descendant of `pid` (not `pid` itself), zombies included. */
export function descendantsOf(pid: number): number[] {
  const out: number[] = [];
  const seen = new Set<number>([pid]);
  for (let q = [pid]; q.length; ) {
    const next: number[] = [];
    for (const p of q)
      for (const c of childrenOf(p))
        if (!seen.has(c)) {
          seen.add(c);
          out.push(c);
          next.push(c);
        }
    q = next;
  }
  return out;
}

const dead = (state: string | undefined) => state === undefined || state === "Z" || state === "X";

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

const tick = (ms: number) => new Promise<void>((r) => (ms > 0 ? setTimeout(r, ms) : setImmediate(r)));

/**
 * Stop the interpreter `init` and kill every other process of its jail; resolves true once none is left alive, false
 * when that did not happen within `rounds` rounds (a process stuck in the kernel) or the interpreter is gone: the
 * caller then ends the jail. Once SIGSTOP is sent no thread of the interpreter runs user code again until SIGCONT
 * (the stop is pending on every thread; a thread asleep is woken only to stop), and a process SIGKILL is pending on
 * cannot fork; the rounds go on until the killed processes are zombies, so a child forked while a round read the
 * tree is found in the next one. With nothing left of the call (the usual case) it takes one round, no timer.
 */
export async function quiesce(init: number, rounds = 200): Promise<boolean> {
  if (!signal(init, "SIGSTOP")) return false;
  for (let i = 0; i < rounds; i++) {
    const live = descendantsOf(init).filter((p) => !dead(procStat(p)?.state));
    if (!live.length) return procStat(init) !== undefined;
    for (const p of live) signal(p, "SIGKILL");
    await tick(i < 20 ? 0 : 5);
  }
  return false;
}

/** Let a quiesced interpreter go on. */
export function resume(init: number): void {
  signal(init, "SIGCONT");
}

/** CPU time of a jail so far (ms): the interpreter and every process under it, what they reaped included. */
export function jailCpuMs(init: number): number {
  let ms = procStat(init)?.cpuMs ?? 0;
  for (const p of descendantsOf(init)) ms += procStat(p)?.cpuMs ?? 0;
  return ms;
}

/**
 * A CPU bound for one call where no cgroup gives one: every `periodMs` the jail's CPU time is read; past its budget
 * (`cpus` CPUs, plus a bucket of `burstMs`) the jail's processes are stopped until the budget has caught up.
 */
export class Throttle {
  private timer?: NodeJS.Timeout;
  private resumeTimer?: NodeJS.Timeout;
  private last = 0;
  private lastAt = 0;
  private tokens: number;
  private held: number[] = [];
  /** Times the jail was held back, and for how long in all (ms): for tests and logs. */
  stops = 0;
  stoppedMs = 0;

  constructor(
    private readonly init: number,
    private readonly cpus: number,
    private readonly periodMs = 100,
    private readonly burstMs = 100,
  ) {
    this.tokens = burstMs;
  }

  start(): this {
    this.last = jailCpuMs(this.init);
    this.lastAt = performance.now();
    this.timer = setInterval(() => this.check(), this.periodMs);
    this.timer.unref();
    return this;
  }

  private check(): void {
    if (this.held.length) return;
    const now = performance.now();
    const used = jailCpuMs(this.init);
    this.tokens = Math.min(this.burstMs, this.tokens + this.cpus * (now - this.lastAt) - Math.max(0, used - this.last));
    this.last = used;
    this.lastAt = now;
    if (this.tokens >= 0) return;
    const waitMs = -this.tokens / this.cpus;
    this.held = [this.init, ...descendantsOf(this.init)];
    for (const p of this.held) signal(p, "SIGSTOP");
    this.stops++;
    this.stoppedMs += waitMs;
    this.resumeTimer = setTimeout(() => this.release(), waitMs);
    this.resumeTimer.unref();
  }

  private release(): void {
    for (const p of this.held) signal(p, "SIGCONT");
    this.held = [];
    // the wait refilled the bucket to empty; nothing of the jail ran meanwhile
    this.tokens = 0;
    this.last = jailCpuMs(this.init);
    this.lastAt = performance.now();
  }

  /** The call answered (or failed): stop checking; processes held now stay stopped for `quiesce` (or the kill). */
  end(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.resumeTimer) clearTimeout(this.resumeTimer);
    this.timer = this.resumeTimer = undefined;
    this.held = [];
  }
}
