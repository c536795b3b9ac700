/**
 * Live interpreters for the code tools: one per rollout (per workspace folder and language), taken from a warm pool
 * of jails that have already started and imported their libraries (live-jail.ts).
 *
 * The rollout's workbook file on the host stays the truth the structured tools and the scorer read:
 * - before a call, when the host file differs from what the interpreter last had (a structured tool changed it, or
 *   the last call failed), its bytes go in over the pipe;
 * - after a successful call whose workbook changed, its bytes come back and replace the host file at once (Python;
 *   run_code too when asked to save eagerly). A failed call never changes the host file; the interpreter gets the
 *   host's file again on its next call;
 * - a workbook past 64 KB is read, written and renamed on the thread pool (fs/promises), never on the event loop
 *   (smaller ones in place: microseconds), and its bytes go to the interpreter's pipe without a copy into a frame;
 * - run_code called with `deferSave` keeps the changed workbook in the interpreter until `flushInterpreters` asks
 *   for it (before a structured tool or the scorer reads the file): exceljs serialisation is the slow part of a call.
 *
 * An interpreter ends when its rollout is released (`releaseInterpreters`), when it has been idle for `idleMs` or
 * alive for `lifetimeMs`, when its folder is gone, when more than `maxLive` are alive (the least recently used idle
 * one goes), or when a call runs past its time limit. The next call then starts a fresh one and says that the
 * earlier state is gone.
 */
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { readFile, rename, unlink, writeFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import type { JailSpec } from "./jail.js";
import { JailGone, LiveJail } from "./live-jail.js";

export interface InterpreterSpec {
  /** "python" or "node": one live interpreter per language per rollout. */
  language: string;
  /** Identical specs share a warm pool. */
  poolKey: string;
  jail: JailSpec;
}

export interface LifeOptions {
  /** Started interpreters kept waiting per spec (default 2). */
  warmPool?: number;
  /** An idle interpreter ends after this long (default 10 minutes). */
  idleMs?: number;
  /** An interpreter ends after this long, whatever it is doing (default 30 minutes; the rollout's deadline bounds it sooner when the env passes one). */
  lifetimeMs?: number;
  /** Live interpreters at most in this process (default 512). */
  maxLive?: number;
  /**
   * When the rollout's deadline passes (a `performance.now()` time): its interpreter is killed then, busy or not,
   * and a call after it is refused. An interpreter lives at most as long as its rollout.
   */
  endsAt?: number;
}

export interface ExecRequest extends LifeOptions {
  spec: InterpreterSpec;
  workspaceDir: string;
  wbPath: string;
  code: string;
  timeoutMs: number;
  maxOut: number;
  /** Send the workbook back after a successful call (run_python always; run_code unless deferring). */
  save: boolean;
  /** A fresh jail for this call only, killed after it (no state carries over; the old behaviour, for baselines). */
  fresh?: boolean;
}

export interface ExecReply {
  ok: boolean;
  output: string;
  truncated: boolean;
  error: string;
  /** Why an earlier interpreter of this rollout is gone (its state with it), for the model to read. */
  note?: string;
}

interface Stamp {
  ino: number;
  size: number;
  mtimeMs: number;
}

interface Session {
  key: string;
  dir: string;
  jail: LiveJail;
  startedAt: number;
  lastUsed: number;
  lifetimeMs: number;
  idleMs: number;
  /** The host file as the interpreter last had it (undefined: send it). */
  synced?: Stamp;
  /** The interpreter holds workbook changes the host file lacks (run_code, deferred save). */
  unsaved: boolean;
  /** Kills the interpreter at its rollout's deadline. */
  deadline?: NodeJS.Timeout;
  /** The warm pool it came from, refilled after this session's first call. */
  refill?: WarmPool;
}

/** Why an interpreter was stopped at its rollout's deadline (what the model reads). */
export const DEADLINE_NOTE = "the episode's deadline passed (an interpreter lives at most as long as its rollout)";

const sessions = new Map<string, Session>();
/** Why a session's interpreter went away, told on its next call. */
const notes = new Map<string, string>();
const pools = new Map<string, WarmPool>();
/** Where the last call's time went (ms), for benchmarks: on the host and inside the interpreter. */
export interface CallTiming {
  language: string;
  /** Getting the rollout's interpreter (0 when it had one; a warm jail's hand-out, or waiting for one to start). */
  takeMs: number;
  /** Reading the host's workbook file to send it in (0 when the interpreter had it). */
  readMs: number;
  /** From sending the request to its answer (the interpreter's own phases below included). */
  roundTripMs: number;
  /** Writing the returned workbook to the host file. */
  applyMs: number;
  /**
   * Inside the interpreter: taking the workbook in (run_code: exceljs loads it), the code, the workbook back out;
   * `cpu`: the interpreter process's CPU time for the request, all its threads (run_code; 0 where not reported).
   */
  inside: { wb: number; code: number; save: number; cpu: number };
  /** Whether the workbook was sent in. */
  sent: boolean;
}
let lastTiming: CallTiming | undefined;

/** Caps on what an interpreter may send back in one message. */
const MAX_HEAD = 1 << 20;

/** The file's identity and version (a stat: metadata only, microseconds). */
function stampOf(path: string): Stamp | undefined {
  try {
    const st = statSync(path);
    return { ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
  } catch {
    return undefined;
  }
}

/**
 * Workbooks up to this size are read and written in place (tens of microseconds of the event loop); larger ones on
 * the thread pool. Every thread-pool step (open, stat, read, close) waits for a pool thread: on a loaded machine four
 * of them added milliseconds, up to 86 ms once, to a rollout's first call for a 6.5 KB workbook.
 */
const INLINE_BYTES = 64 * 1024;

/** The workbook's bytes: read on the thread pool past INLINE_BYTES (the event loop never reads a large one's pages). */
function readBook(path: string, size: number | undefined): Buffer | Promise<Buffer> {
  return size !== undefined && size <= INLINE_BYTES ? readFileSync(path) : readFile(path);
}
const sameStamp = (a?: Stamp, b?: Stamp) =>
  !!a && !!b && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;

/**
 * A warm pool's jails start at this lower priority (nobody waits for them, and the rollouts' calls come first); a
 * rollout's jail is raised back to normal when the rollout takes it (ready or still starting), which needs root: as
 * any other user pool jails start at normal priority.
 */
const POOL_NICE = process.getuid?.() === 0 ? 10 : 0;

function newJail(spec: InterpreterSpec, nice = 0): LiveJail {
  return new LiveJail(spec.jail, MAX_HEAD, Math.ceil(spec.jail.diskMb * 1024 * 1024) + 1024, nice);
}

const START_TIMEOUT_MS = 60_000;

function whenReady(j: LiveJail): Promise<LiveJail> {
  return new Promise<LiveJail>((resolve, reject) => {
    const t = setTimeout(() => {
      j.kill(new JailGone("died", `the interpreter did not start within ${START_TIMEOUT_MS} ms`));
    }, START_TIMEOUT_MS);
    j.ready.then(
      () => {
        clearTimeout(t);
        resolve(j);
      },
      (e) => {
        clearTimeout(t);
        reject(e);
      },
    );
  });
}

/** Jails starting at once, across pools (a start imports the interpreter's libraries: CPU-bound). */
const MAX_STARTING = Math.max(2, availableParallelism());
let startingNow = 0;
/** Starts waiting for a slot; one a rollout waits for (`urgent`) goes before the pools' refills. */
const startQueue: { go: () => void; urgent: () => boolean }[] = [];

/**
 * Start a jail when a start slot is free; resolves once it is ready (the start timeout counts from its spawn).
 * `nice()` is read at spawn time: a pool's start that a rollout claimed while it waited runs at normal priority.
 */
function startJail(
  spec: InterpreterSpec,
  nice: () => number = () => 0,
  onSpawn?: (j: LiveJail) => void,
): Promise<LiveJail> {
  return new Promise<void>((resolve) => {
    if (startingNow < MAX_STARTING) {
      startingNow++;
      resolve();
    } else startQueue.push({ go: resolve, urgent: () => nice() === 0 });
  }).then(() => {
    const done = () => {
      const i = startQueue.findIndex((q) => q.urgent());
      const next = startQueue.splice(Math.max(i, 0), 1)[0];
      if (next) next.go();
      else startingNow--;
    };
    const j = newJail(spec, nice());
    onSpawn?.(j);
    const ready = whenReady(j);
    ready.then(done, done);
    return ready;
  });
}

interface Starting {
  jail: Promise<LiveJail>;
  claimed: boolean;
  /** The jail once spawned (it may wait for a start slot first). */
  live?: LiveJail;
}

/** Started jails waiting for a rollout (ready ones first, then ones still starting). */
class WarmPool {
  private readonly ready: LiveJail[] = [];
  private readonly starting: Starting[] = [];
  private closed = false;

  constructor(
    private readonly spec: InterpreterSpec,
    public size: number,
  ) {}

  private start(): Starting {
    const entry: Starting = { jail: Promise.resolve() as unknown as Promise<LiveJail>, claimed: false };
    entry.jail = startJail(
      this.spec,
      () => (entry.claimed ? 0 : POOL_NICE),
      (j) => {
        entry.live = j;
      },
    );
    this.starting.push(entry);
    entry.jail.then(
      (j) => {
        this.starting.splice(this.starting.indexOf(entry), 1);
        if (entry.claimed) return;
        if (this.closed) j.kill();
        else this.ready.push(j);
      },
      () => {
        this.starting.splice(this.starting.indexOf(entry), 1);
      },
    );
    return entry;
  }

  /** A refill is due on the next loop turn (it counts as a jail starting). */
  private refilling = false;

  /**
   * Start jails until `size` are ready or starting: one per event-loop turn. A start (its mount plan, memory group
   * and the request to the spawner) is a few ms of this thread's CPU; a pool starting three at once (one claimed and
   * its two replacements) held one turn of the loop for all three.
   */
  fill(): void {
    if (this.closed || this.refilling) return;
    if (this.ready.length + this.starting.filter((s) => !s.claimed).length >= this.size) return;
    this.start();
    if (this.ready.length + this.starting.filter((s) => !s.claimed).length < this.size) this.refillSoon();
  }

  /**
   * A started jail for a rollout. When one was ready, the pool is refilled only after the caller's first call
   * (`fill`): starting a jail (spawn, interpreter start-up, library imports) would otherwise compete for the CPU with
   * the very call the rollout is waiting for. When none was ready, it refills at once.
   */
  async take(): Promise<LiveJail> {
    let j: LiveJail | undefined;
    while ((j = this.ready.shift()) && !j.alive) {}
    if (j) {
      j.prioritise();
      return j;
    }
    const pending = this.starting.find((s) => !s.claimed) ?? this.start();
    pending.claimed = true;
    pending.live?.prioritise();
    this.fill();
    const started = await pending.jail;
    started.prioritise();
    return started;
  }

  close(): void {
    this.closed = true;
    for (const j of this.ready) j.kill();
    this.ready.length = 0;
  }

  get waiting(): number {
    return this.ready.length;
  }

  /** Refill on the next loop turn (after the caller has its answer); counted as starting from now on. */
  refillSoon(): void {
    if (this.closed || this.refilling) return;
    this.refilling = true;
    setImmediate(() => {
      this.refilling = false;
      this.fill();
    });
  }

  /** Jails of this pool still starting that no rollout has claimed yet (a refill due next turn counts as one). */
  get startingNow(): number {
    return this.starting.filter((s) => !s.claimed).length + (this.refilling ? 1 : 0);
  }

  get language(): string {
    return this.spec.language;
  }
}

function poolFor(spec: InterpreterSpec, size: number): WarmPool {
  let p = pools.get(spec.poolKey);
  if (!p) {
    p = new WarmPool(spec, size);
    pools.set(spec.poolKey, p);
  }
  p.size = size;
  return p;
}

/** Start the warm pool for `spec` now (an env does this when it is created), so the first rollouts find jails ready. */
export function prewarm(spec: InterpreterSpec, size = 2): void {
  poolFor(spec, size).fill();
}

/**
 * The deadline timer's delay: rounded up to a whole second. Node keeps one timer list per distinct delay, and the list
 * of an unref'd timer that is cleared early stays until its time comes (Node deletes only ref'd lists on clear): with
 * a delay unique to the millisecond, every released rollout left an empty list behind for up to its deadline (20
 * minutes), a heap that grew with the rollout rate. Whole seconds share lists; the kill comes at most 1 s late.
 */
export function deadlineDelay(ms: number): number {
  return ms <= 0 ? 0 : Math.ceil(ms / 1000) * 1000;
}

const keyOf = (language: string, dir: string) => `${language}\0${dir}`;

function endSession(s: Session, note?: string): void {
  if (sessions.get(s.key) === s) sessions.delete(s.key);
  if (s.deadline) clearTimeout(s.deadline);
  s.jail.kill();
  if (note) notes.set(s.key, note);
  else notes.delete(s.key);
}

let sweeper: NodeJS.Timeout | undefined;
function sweep(): void {
  const now = performance.now();
  for (const s of sessions.values()) {
    if (s.jail.busy) continue;
    if (!existsSync(s.dir)) endSession(s);
    else if (now - s.startedAt > s.lifetimeMs)
      endSession(s, `the previous interpreter reached its lifetime (${Math.round(s.lifetimeMs / 1000)} s)`);
    else if (now - s.lastUsed > s.idleMs)
      endSession(s, `the previous interpreter was idle for over ${Math.round(s.idleMs / 1000)} s`);
  }
  if (!sessions.size && sweeper) {
    clearInterval(sweeper);
    sweeper = undefined;
  }
}

function evictFor(maxLive: number): void {
  if (sessions.size < maxLive) return;
  let lru: Session | undefined;
  for (const s of sessions.values()) if (!s.jail.busy && (!lru || s.lastUsed < lru.lastUsed)) lru = s;
  if (lru) endSession(lru, "the previous interpreter was stopped to make room for others (too many live interpreters)");
}

async function sessionFor(req: ExecRequest, key: string): Promise<Session> {
  let s = sessions.get(key);
  if (s && !s.jail.alive) {
    // it ended between calls (its processes could not be held, it died): the model reads why on this call
    endSession(s, `the previous interpreter ended (${s.jail.goneReason ?? "unknown"})`);
    s = undefined;
  }
  if (s) return s;
  if (req.endsAt !== undefined && performance.now() >= req.endsAt) throw new JailGone("killed", DEADLINE_NOTE);
  evictFor(req.maxLive ?? 512);
  const pool = poolFor(req.spec, req.warmPool ?? 2);
  const jail = await pool.take();
  const now = performance.now();
  s = {
    key,
    dir: req.workspaceDir,
    jail,
    startedAt: now,
    lastUsed: now,
    lifetimeMs: req.lifetimeMs ?? 30 * 60_000,
    idleMs: req.idleMs ?? 10 * 60_000,
    unsaved: false,
    refill: pool,
  };
  if (req.endsAt !== undefined) {
    const session = s;
    session.deadline = setTimeout(
      () => {
        // busy or not: a running call gets JailGone("killed") and the model reads why
        if (sessions.get(key) === session) sessions.delete(key);
        session.jail.kill(new JailGone("killed", DEADLINE_NOTE));
        notes.set(key, DEADLINE_NOTE);
      },
      deadlineDelay(req.endsAt - performance.now()),
    );
    session.deadline.unref();
  }
  sessions.set(key, s);
  sweeper ??= setInterval(sweep, 2000).unref();
  return s;
}

/**
 * After a request of `s`, answered or not: it was used now, and the warm pool it was claimed from refills (a spawn on
 * this thread, then a start at low priority) on the next loop turn, after the caller has its answer.
 */
function requestDone(s: Session): void {
  s.lastUsed = performance.now();
  const pool = s.refill;
  s.refill = undefined;
  pool?.refillSoon();
}

let writes = 0;
/**
 * Replace the host's workbook file with `bytes` (a temporary file renamed over it): past INLINE_BYTES written and
 * renamed on the thread pool, so a large workbook never holds the event loop.
 */
async function writeBack(wbPath: string, bytes: Buffer): Promise<Stamp | undefined> {
  const tmp = join(dirname(wbPath), `.workbook.${process.pid}.${++writes}.in`);
  try {
    if (bytes.length <= INLINE_BYTES) {
      writeFileSync(tmp, bytes);
      renameSync(tmp, wbPath);
    } else {
      await writeFile(tmp, bytes);
      await rename(tmp, wbPath);
    }
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  }
  return stampOf(wbPath);
}

/** Requests of one session run one after another (a session is made inside its queue). */
const queues = new Map<string, Promise<unknown>>();
function serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
  const run = (queues.get(key) ?? Promise.resolve()).then(fn, fn);
  const tail = run.then(
    () => {},
    () => {},
  );
  queues.set(key, tail);
  void tail.then(() => {
    if (queues.get(key) === tail) queues.delete(key);
  });
  return run;
}

/**
 * Run `req.code` in the rollout's live interpreter (started from the warm pool when it has none).
 * Throws `JailGone` when the interpreter died or ran past the time limit (its state is lost).
 */
export function execInInterpreter(req: ExecRequest): Promise<ExecReply> {
  if (req.fresh) return execFresh(req);
  const key = keyOf(req.spec.language, req.workspaceDir);
  return serial(key, async () => {
    const t0 = performance.now();
    const s = await sessionFor(req, key);
    const t1 = performance.now();
    const note = notes.get(key);
    notes.delete(key);
    const now = stampOf(req.wbPath);
    const send = !sameStamp(now, s.synced);
    const body = send ? await readBook(req.wbPath, now?.size) : undefined;
    const t2 = performance.now();
    s.lastUsed = t2;
    let frame: Awaited<ReturnType<LiveJail["request"]>>;
    try {
      frame = await s.jail.request(
        { t: "exec", code: req.code, maxOut: req.maxOut, timeoutMs: req.timeoutMs, wb: send, save: req.save },
        body,
        req.timeoutMs + 1000,
      );
    } catch (e) {
      endSession(s);
      throw e;
    } finally {
      requestDone(s);
    }
    const t3 = performance.now();
    if (send) {
      s.synced = now;
      s.unsaved = false;
    }
    const reply = await apply(frame, req.wbPath, s, note);
    const ms = (frame.head.ms ?? {}) as Record<string, unknown>;
    const num = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? v : 0);
    lastTiming = {
      language: req.spec.language,
      takeMs: t1 - t0,
      readMs: t2 - t1,
      roundTripMs: t3 - t2,
      applyMs: performance.now() - t3,
      inside: { wb: num(ms.wb), code: num(ms.code), save: num(ms.save), cpu: num(ms.cpu) },
      sent: send,
    };
    return reply;
  });
}

async function apply(
  frame: { head: Record<string, unknown>; body: Buffer },
  wbPath: string,
  s: Session | undefined,
  note?: string,
): Promise<ExecReply> {
  const h = frame.head;
  const ok = h.ok === true;
  if (ok && h.wb === "changed" && frame.body.length) {
    const st = await writeBack(wbPath, frame.body);
    if (s) {
      s.synced = st;
      s.unsaved = false;
    }
  } else if (s && ok && h.wb === "unsaved") {
    s.unsaved = true;
  } else if (s && !ok && h.wb !== "same") {
    // the interpreter may hold a half-changed workbook: it gets the host's file again next time
    s.synced = undefined;
    s.unsaved = false;
  }
  return {
    ok,
    output: String(h.out ?? ""),
    truncated: h.trunc === true,
    error: String(h.err ?? ""),
    note,
  };
}

/**
 * Claim the rollout's interpreter now and load its workbook into it (run_code: exceljs parses it), before the model's
 * first call: at the rollout's start, overlapping the model's first generation, so that call finds the workbook in
 * memory. Resolves once it is loaded (or failed: the first call then sends the workbook as usual); never throws.
 * Requests of the rollout queue behind it. Returns how long the claim and the load took (ms), or undefined.
 */
export function preloadInterpreter(
  req: Omit<ExecRequest, "code" | "save" | "fresh" | "maxOut">,
): Promise<number | undefined> {
  const key = keyOf(req.spec.language, req.workspaceDir);
  return serial(key, async () => {
    const t0 = performance.now();
    const s = await sessionFor({ ...req, code: "", save: false, maxOut: 0 }, key);
    if (s.synced || s.unsaved) return undefined;
    const now = stampOf(req.wbPath);
    if (!now) return undefined;
    const body = await readBook(req.wbPath, now.size);
    try {
      const f = await s.jail.request(
        { t: "exec", code: "", maxOut: 0, timeoutMs: req.timeoutMs, wb: true, save: false },
        body,
        req.timeoutMs + 1000,
      );
      // an empty script changed nothing: the interpreter holds the host's file as it is
      if (f.head.ok === true) s.synced = now;
    } catch (e) {
      endSession(s);
      if (!(e instanceof JailGone)) throw e;
      return undefined;
    } finally {
      requestDone(s);
    }
    return performance.now() - t0;
  }).catch(() => undefined);
}

async function execFresh(req: ExecRequest): Promise<ExecReply> {
  const j = await startJail(req.spec);
  try {
    const frame = await j.request(
      { t: "exec", code: req.code, maxOut: req.maxOut, timeoutMs: req.timeoutMs, wb: true, save: true },
      await readBook(req.wbPath, stampOf(req.wbPath)?.size),
      req.timeoutMs + 1000,
    );
    return await apply(frame, req.wbPath, undefined);
  } finally {
    j.kill();
  }
}

/**
 * Bring the host's workbook file up to date with the rollout's live interpreters (run_code's deferred saves).
 * A workbook the model's code left unserialisable is the model's doing: the file keeps its last saved state and
 * the next call says why.
 */
export async function flushInterpreters(workspaceDir: string | undefined, wbPath?: string): Promise<void> {
  if (!workspaceDir) return;
  for (const s of [...sessions.values()]) {
    if (s.dir !== workspaceDir || !s.unsaved) continue;
    await serial(s.key, async () => {
      if (!s.unsaved || !s.jail.alive) return;
      const path = wbPath ?? join(workspaceDir, "workbook.xlsx");
      try {
        const f = await s.jail.request({ t: "save" }, undefined, 60_000);
        if (f.head.ok === true) {
          s.synced = await writeBack(path, f.body);
        } else {
          s.synced = undefined;
          notes.set(
            s.key,
            `the workbook changes of your earlier code could not be saved (${String(f.head.err).slice(0, 300)}); the workbook is as it was after the last save`,
          );
        }
      } catch (e) {
        endSession(
          s,
          `the workbook changes of your earlier code could not be saved (${(e as Error).message}); the workbook is as it was after the last save`,
        );
      }
      s.unsaved = false;
    });
  }
}

/** End the live interpreters of a rollout (its workspace folder). */
export function releaseInterpreters(workspaceDir: string | undefined): void {
  if (!workspaceDir) return;
  for (const s of [...sessions.values()]) if (s.dir === workspaceDir) endSession(s);
  for (const k of [...notes.keys()]) if (k.endsWith(`\0${workspaceDir}`)) notes.delete(k);
}

/** End every live interpreter and every warm pool of this process. */
export function closeInterpreters(): void {
  for (const s of [...sessions.values()]) endSession(s);
  notes.clear();
  for (const p of pools.values()) p.close();
  pools.clear();
}

/** A rollout's live interpreter as the host sees it (tests and logs). */
export interface JailInfo {
  language: string;
  /** The rollout's workspace folder. */
  dir: string;
  /** The jail's outermost host process. */
  pid?: number;
  /** The interpreter's host pid (the jail's PID namespace's first process). */
  interpreterPid?: number;
  /** Stopped between calls (live-jail.ts). */
  frozen: boolean;
  busy: boolean;
  /** How a call's CPU is bounded: the jail's cgroup quota or the host's throttle. */
  cpuBound: "cgroup" | "throttle" | "none";
  /** The host throttle's count of hold-backs and their total length in the last call (no CPU cgroup). */
  throttled?: { stops: number; stoppedMs: number };
  /** The CPU cgroup's CFS periods and throttled periods so far (with a CPU cgroup). */
  cgroupThrottled?: { periods: number; throttled: number };
}

/**
 * Live interpreters (rollouts'), warm ones per language, pool jails still starting per language, the host pids of
 * the live ones' jails (and each one's state in `jails`), and where the last call's time went.
 */
export function interpreterStats(): {
  live: number;
  warm: number;
  warmBy: Record<string, number>;
  startingBy: Record<string, number>;
  pids: number[];
  jails: JailInfo[];
  lastCall?: CallTiming;
} {
  let warm = 0;
  const warmBy: Record<string, number> = {};
  const startingBy: Record<string, number> = {};
  for (const p of pools.values()) {
    warm += p.waiting;
    warmBy[p.language] = (warmBy[p.language] ?? 0) + p.waiting;
    startingBy[p.language] = (startingBy[p.language] ?? 0) + p.startingNow;
  }
  return {
    live: sessions.size,
    warm,
    warmBy,
    startingBy,
    lastCall: lastTiming,
    pids: [...sessions.values()].map((s) => s.jail.pid).filter((p): p is number => p !== undefined),
    jails: [...sessions.values()].map((s) => ({
      language: s.key.split("\0")[0]!,
      dir: s.dir,
      pid: s.jail.pid,
      interpreterPid: s.jail.interpreterPid(),
      frozen: s.jail.frozen,
      busy: s.jail.busy,
      cpuBound: s.jail.cpuBound,
      throttled: s.jail.throttled,
      cgroupThrottled: s.jail.cgroupThrottled(),
    })),
  };
}
