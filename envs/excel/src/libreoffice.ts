/**
 * LibreOffice headless recalculation, as the official pipeline does (evaluation/open_spreadsheet.py):
 * `soffice --headless --calc --convert-to xlsx:"Calc MS Excel 2007 XML" --outdir OUT FILE`, sealed:
 * - every batch runs in its own jail (libreoffice-jail.ts): no network, no host file, a fresh profile, memory and
 *   time caps that kill the whole process tree;
 * - golds and model-written outputs never share a batch; inside a batch each file has an unguessable random name in a
 *   folder that cannot be listed, so a `[book0.xlsx]`-style reference resolves to nothing;
 * - external references in a model-written file are refused before LibreOffice sees it (external-refs.ts);
 * - a file that hangs is cut without re-running its batch: a batch runs from both ends (and, for model-written files,
 *   from its middle), outputs come out file by file, a file every process is held from goes to a standby LibreOffice
 *   started ahead (libreoffice-serve.ts) or a helper process, and a file is cut once it alone has held a process past
 *   the time limit (`runBatch`).
 * Without user namespaces the jail cannot be built: soffice then runs unjailed (external references still refused),
 * with a warning naming the reason, unless `jail: "require"`.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { cp, mkdir, readdir, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { InfraError } from "@benchmax/core";
import { readShared, sealAsync } from "./compare-pool.js";
import {
  giveFileToJail,
  JAIL_SETUP_FAILED,
  jailCommand,
  makeProfileTemplate,
  officeInstallDir,
  runGroup,
  sofficeJailAvailable,
  writeProfileSettings,
} from "./libreoffice-jail.js";
import {
  installServeMacro,
  SERVE_FAILED,
  SERVE_READY,
  serveMacroUrl,
  serveName,
  servePathOk,
} from "./libreoffice-serve.js";

let found: string | null | undefined;

/** The soffice binary (`$BENCHMAX_SOFFICE`, `soffice`, `libreoffice`), or null when none is installed. */
export function findSoffice(): string | null {
  if (found !== undefined) return found;
  found = null;
  for (const c of [process.env.BENCHMAX_SOFFICE, "soffice", "libreoffice"]) {
    if (!c) continue;
    const r = spawnSync(c, ["--version"], { stdio: "ignore", timeout: 30_000 });
    if (r.status === 0) {
      found = c;
      break;
    }
  }
  return found;
}

/** A model-written file with its external references refused; a file the check cannot finish is the model's failure. */
async function sealOutput(xlsx: Buffer): Promise<Buffer> {
  try {
    return await sealAsync(xlsx);
  } catch (e) {
    throw new OutputRecalcError(`the workbook could not be checked for external references: ${(e as Error).message}`);
  }
}

/** Who wrote a file: the dataset (`gold`) or the model (`output`). The two never share a LibreOffice batch. */
export type RecalcKind = "gold" | "output";

/**
 * LibreOffice could not recalculate a model-written file on its own (it ran past the time limit, past the memory
 * cap, crashed, or produced nothing) while the same LibreOffice works: the file's doing, so the case scores 0.
 */
export class OutputRecalcError extends Error {
  override name = "OutputRecalcError";
}

export interface LibreOfficeOptions {
  soffice?: string;
  /**
   * Time limit of one file in a batch (default 120 s; the first file's includes LibreOffice's start): past it the
   * process is killed with its whole tree and the file fails (for a model-written file: the model's failure).
   */
  timeoutMs?: number;
  /**
   * Batches at once (each of two files or more runs as two soffice processes, three for a batch of three
   * model-written files or more (`middle`); each in its own jail).
   */
  concurrency?: number;
  /**
   * Whether a batch of three model-written files or more also runs a third process, from its middle outwards
   * (default true): two files that hang LibreOffice then hold neither the files before them, after them, nor those
   * around the middle, at the cost of one more LibreOffice start per such batch. Batches of gold files never do.
   */
  middle?: boolean;
  /**
   * How long every process of a batch may sit on one file before the batch's other files go back to the queue
   * (default 10 s): they are converted by the next batch while the slow file keeps its process, up to `timeoutMs`.
   * Sooner, once per batch, a helper process takes them: when every process has sat on its file past 4× the mean
   * time of a file (at least 300 ms, at most `stallMs`), the files none is on are converted by a helper started at
   * once, while the held processes are paused until its first output; or at once when a process is lost on a file
   * another converts, for the files it had yet to reach (`runBatch`).
   */
  stallMs?: number;
  /**
   * Whether a batch of model-written files run from its middle too (`middle`), of STANDBY_MIN_FILES or more, takes a
   * spare LibreOffice as its standby (default true): one that takes files once started (libreoffice-serve.ts), started
   * with the first model-written file and after each batch that used one, stopped after SPARE_IDLE_MS unused or on
   * `close`. Files that a lost or suspected process had yet to reach, none on them, are handed to it one at a time, so
   * a file two hung files hold from every process waits no LibreOffice start.
   */
  standby?: boolean;
  /** Most files converted by one soffice process (default 64). */
  batchSize?: number;
  /** How long a free process waits for more files before starting a batch (default 20 ms). */
  batchWindowMs?: number;
  /**
   * "auto" (default): jailed where the machine allows it, else unjailed with a warning; "require": refuse to run
   * unjailed; "off": never jail. Default from `$BENCHMAX_LO_JAIL`.
   */
  jail?: "auto" | "require" | "off";
  /** Address-space cap of soffice.bin in MB (default 2048). */
  memoryMb?: number;
  /** Size of the jail's scratch tmpfs in MB (default 1024). */
  diskMb?: number;
}

interface Pending {
  xlsx: Buffer;
  kind: RecalcKind;
  resolve(b: Buffer): void;
  reject(e: unknown): void;
}

/** One soffice process of a batch (runBatch), converting the batch's files in its own order. */
interface Conversion {
  /** Batch indices in the order this process converts them. */
  readonly order: number[];
  /** Position in `order` of the first file this process has no output for. */
  pos: number;
  /** The batch index of that file (undefined once all are out). */
  readonly current: number | undefined;
  /** When the current file became current (`performance.now()`; the first: when the process started). */
  since: number;
  ended: boolean;
  stopped: boolean;
  /** When the process was paused (`performance.now()`), while it is. */
  pausedAt?: number;
  /** A standby (libreoffice-serve.ts): files are handed to it one at a time (`feed`) once it is `ready`. */
  readonly serve: boolean;
  /** A standby whose macro runs (it has written its ready mark); always true for a `--convert-to` process. */
  ready: boolean;
  /** Hand a standby its next file: batch index `i`, its bytes (appended to `order`; it must be idle and ready). */
  feed(i: number, xlsx: Buffer): Promise<void>;
  /** Why the process failed (the file's doing when it fails alone), or undefined. */
  failure?: string;
  /** The jail could not be built or soffice not started: never the file's doing. */
  setupError?: unknown;
  stop(): void;
  /** Stop its processes (SIGSTOP to its group) until `resume`; the time paused is not counted as time on the file. */
  pause(): void;
  resume(): void;
  /** New outputs since the last poll, by batch index; advances `pos`. */
  poll(): Promise<Array<[number, Buffer]>>;
  finished: Promise<void>;
  cleanup(): Promise<void>;
}

/** `0 … n-1` from the middle outwards: m, m-1, m+1, m-2, m+2 … */
function middleOut(n: number): number[] {
  const m = Math.floor(n / 2);
  const out = [m];
  for (let d = 1; out.length < n; d++) {
    if (m - d >= 0) out.push(m - d);
    if (m + d < n) out.push(m + d);
  }
  return out;
}

/** How often a running batch's outputs are looked at (ms); the jail copies them out as often (libreoffice-jail.ts). */
const POLL_MS = 50;

/**
 * The shortest time every process of a batch must sit on its file before a helper process is started for the files
 * none of them is on (`runBatch`); longer when the batch's files take longer (4× their running mean time).
 */
const SUSPECT_FLOOR_MS = 300;

/**
 * The fewest model-written files in a batch that starts a standby: below it, the two ends and the middle reach every
 * file that two hung files leave (checked by hand for 3 to 5 files).
 */
const STANDBY_MIN_FILES = 6;
/** How long a spare LibreOffice waits unused for the next batch before it is stopped (ms). */
const SPARE_IDLE_MS = 60_000;

const PREFIX = "benchmax-lo-";

/** Scratch folders of processes that are gone (a killed run): removed at start. */
function removeStale(): void {
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const n of names) {
    const m = /^benchmax-lo-(\d+)-/.exec(n);
    if (!m || Number(m[1]) === process.pid) continue;
    try {
      process.kill(Number(m[1]), 0);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ESRCH") rmSync(join(tmpdir(), n), { recursive: true, force: true });
    }
  }
}

const warned = new Set<string>();
const templates = new Map<string, Promise<string>>();
const templateDirs: string[] = [];
function removeTemplates(): void {
  for (const d of templateDirs) rmSync(d, { recursive: true, force: true });
}

/**
 * Batched recalculation: files waiting while a conversion runs are converted together by the next soffice process
 * (`--convert-to` takes many files), so LibreOffice's start-up cost (seconds) is paid once per batch, not per file.
 * A file that hangs or crashes LibreOffice fails alone: the rest of its batch is converted from the other end, or
 * goes back to the queue (`runBatch`).
 */
export class LibreOfficeRecalc {
  private readonly free: number[] = [];
  private readonly pending: Pending[] = [];
  private readonly soffice: string;
  private readonly timeoutMs: number;
  private readonly stallMs: number;
  private readonly middle: boolean;
  private readonly batchSize: number;
  /** Batches whose slot was handed back while their stalled files still run, and how many may be. */
  private suspects = 0;
  /** A running estimate of a process's time to its first output (start-up and one file), ms. */
  private startupMs = 0;
  /** A running estimate of the time one file takes once a process has started, ms (0: none converted yet). */
  private fileMs = 0;
  /** Helper processes started for held batches (for tests and benchmarks). */
  helpers = 0;
  /** Files handed to batches' standby processes (for tests and benchmarks). */
  standbyFiles = 0;
  /**
   * Whether a batch can take a spare: run from its middle, big enough, and a macro URL that can name the folders; no
   * longer once closed (`close`).
   */
  private sparesUseful: boolean;
  /** A LibreOffice started ahead, idle until a batch hands it files (`standby`), and when it is stopped unused. */
  private spare: Conversion | undefined;
  private spareIdle: NodeJS.Timeout | undefined;
  private spareStarted = false;
  /** Per spare started and not yet gone: settles once it has exited and its folder is removed (`close` waits). */
  private readonly sparesGone = new Set<Promise<void>>();
  private readonly maxSuspects: number;
  private readonly windowMs: number;
  private readonly memoryMb: number;
  private readonly diskMb: number;
  private readonly installDir: string | null;
  private timer: NodeJS.Timeout | undefined;
  /** soffice processes started to convert a batch's files (for benchmarks); spares are counted in `spares`. */
  processes = 0;
  /** Spare LibreOffice processes started (`standby`). */
  spares = 0;
  /** Whether conversions run in the jail, and why (or why not). */
  readonly jailed: boolean;
  readonly jailReason: string;
  /** Process-group leaders of the conversions running now (tests check that none outlives its limit). */
  readonly running = new Set<number>();

  constructor(options: LibreOfficeOptions = {}) {
    const bin = options.soffice ?? findSoffice();
    if (!bin) throw new InfraError("LibreOffice (soffice) is not installed; use recalc=embedded", { retryable: false });
    this.soffice = bin;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.stallMs = Math.max(POLL_MS, options.stallMs ?? 10_000);
    this.middle = options.middle ?? true;
    this.batchSize = Math.max(1, options.batchSize ?? 64);
    this.windowMs = Math.max(0, options.batchWindowMs ?? 20);
    this.memoryMb = options.memoryMb ?? 2048;
    this.diskMb = options.diskMb ?? 1024;
    const n = Math.max(1, options.concurrency ?? 2);
    for (let i = 0; i < n; i++) this.free.push(i);
    this.maxSuspects = n;
    const fromEnv = process.env.BENCHMAX_LO_JAIL;
    const mode = options.jail ?? (fromEnv === "require" || fromEnv === "off" || fromEnv === "auto" ? fromEnv : "auto");
    const avail = mode === "off" ? { ok: false, reason: 'jail: "off"' } : sofficeJailAvailable(bin);
    this.jailed = avail.ok;
    this.jailReason = avail.reason;
    this.installDir = avail.ok ? officeInstallDir(bin) : null;
    if (!avail.ok) {
      if (mode === "require")
        throw new InfraError(`LibreOffice cannot run in its jail here: ${avail.reason}`, { retryable: false });
      if (mode === "auto" && !warned.has(avail.reason)) {
        warned.add(avail.reason);
        console.warn(
          `[env-excel] LibreOffice runs UNJAILED (${avail.reason}): external references are still refused, but a formula that builds a path at run time can read host files`,
        );
      }
    }
    this.sparesUseful =
      (options.standby ?? true) &&
      this.middle &&
      this.batchSize >= STANDBY_MIN_FILES &&
      (this.jailed || servePathOk(tmpdir()));
    removeStale();
  }

  /**
   * Open and re-save an xlsx through LibreOffice so its formulas get cached values. `kind` says who wrote it: a
   * model-written output has its external references refused first, and never shares a batch with a gold.
   */
  async recalc(xlsx: Buffer, kind: RecalcKind = "output"): Promise<Buffer> {
    // the first model-written file starts the spare: ready before a batch needs it (after that, a batch that used
    // it starts the next)
    if (kind === "output" && this.sparesUseful && !this.spareStarted) {
      this.spareStarted = true;
      this.startSpare();
    }
    // the model's XML is scanned on a worker thread (compare-pool.ts), never on the event loop
    const input = kind === "output" ? await sealOutput(xlsx) : xlsx;
    return new Promise((resolve, reject) => {
      this.pending.push({ xlsx: input, kind, resolve, reject });
      if (this.pending.filter((p) => p.kind === kind).length >= this.batchSize || this.windowMs === 0) this.pump();
      else
        this.timer ??= setTimeout(() => {
          this.timer = undefined;
          this.pump();
        }, this.windowMs);
    });
  }

  private pump(): void {
    while (this.free.length && this.pending.length) {
      const slot = this.free.pop()!;
      const kind = this.pending[0]!.kind;
      const batch: Pending[] = [];
      for (let i = 0; i < this.pending.length && batch.length < this.batchSize; ) {
        if (this.pending[i]!.kind === kind) batch.push(...this.pending.splice(i, 1));
        else i++;
      }
      let freed = false;
      // the slot comes back when the batch is done, or earlier once only its suspects are left running
      const release = () => {
        if (freed) return;
        freed = true;
        this.free.push(slot);
        this.pump();
      };
      void this.runBatch(batch, release).finally(release);
    }
  }

  /** Files taken out of a batch (they waited behind a stalled file): first in line for the next batch. */
  private requeue(files: Pending[]): void {
    if (!files.length) return;
    this.pending.unshift(...files);
    this.pump();
  }

  /**
   * Convert a batch: one soffice process converts it in order and, for two files or more, a second converts it in
   * reverse, so a file that hangs holds neither side's files (each is taken from whichever side reaches it first);
   * for three model-written files or more (`middle`), a third converts it from the middle outwards, so a second hung
   * file does not hold the files between the two.
   * Outputs arrive file by file (the jail copies each out once LibreOffice has written it), so each process's current
   * file is known: the first in its order without an output.
   * - A file current for `timeoutMs` of running time (the first: from the process's start) is cut: its process is
   *   killed and the file fails (the model's failure for an output), without re-running the batch.
   * - A process on its file past the suspicion time (below) while another process still converts is parked
   *   (SIGSTOP) until none converts, or for as long as it had run on that file, once per file: a hung file's spinning
   *   core goes to the other files (one CPU per process, and fewer cores than processes), and a slow file that is
   *   not hung waits at most that long more. Parked time does not count against the file's limit.
   * - When every running process has sat on its file past the suspicion time (4× the mean time of a file, at least
   *   SUSPECT_FLOOR_MS, at most `stallMs`) while files wait that none is on, a helper process is started for those
   *   files (once per batch), and the held processes are paused (SIGSTOP) until the helper's first output, so their
   *   CPU does not slow its start; their paused time does not count against their files' limits. Two hung files
   *   then hold neither the files before, after nor between them: the files between wait about one start-up more.
   * - Sooner, when two processes that have both converted a file reach the same file (one is stopped: one per file
   *   is enough), the helper starts at once for the files the stopped one had yet to reach that none is on: when
   *   the two ends and the middle meet two hung files, the files between them wait no suspicion time. In a batch
   *   that is not hung the helper stops as soon as another process has converted what it took.
   * - Of two processes on the same file, the one that has converted a file already keeps it, over one still
   *   starting; else the one there first.
   * - A batch of STANDBY_MIN_FILES model-written files or more (run from its middle too) takes the spare LibreOffice
   *   if one is running (started with the first model-written file and after a batch that used one, stopped after
   *   SPARE_IDLE_MS unused): a standby that takes files once started (libreoffice-serve.ts). Once ready and between
   *   files, it is handed the next file that a lost or suspected process had yet to reach, none on it, so such a
   *   file waits neither the helper's start nor the suspicion time of the other processes; with it ready, a lost
   *   process starts no helper, and the files every lost process had yet to reach go to the standby one by one. A
   *   standby handed a file is stopped with its batch (it never sees two batches' files); one handed none goes back
   *   as the spare.
   * - When every running process has been on its file for `stallMs`, the files no process is on go back to the
   *   queue, first in line; the stalled files keep their processes until done or cut ("suspects"), and the batch's
   *   slot is handed back (at most `concurrency` suspect runs at once beyond the slots).
   * - Files a crashed process left are converted alone once; a file that fails alone is the file's doing.
   */
  private async runBatch(batch: Pending[], release?: () => void): Promise<void> {
    const left = new Set(batch.map((_, i) => i));
    const settle = (i: number, how: (p: Pending) => void) => {
      if (!left.delete(i)) return;
      how(batch[i]!);
    };
    const forward = batch.map((_, i) => i);
    const orders = batch.length > 1 ? [forward, [...forward].reverse()] : [forward];
    const middle = this.middle && batch.length > 2 && batch[0]!.kind === "output";
    if (middle) orders.push(middleOut(batch.length));
    const procs = orders.map((order) => this.startConversion(batch, order));
    // the spare LibreOffice as this batch's standby (in `procs` from its first file on)
    const wantStandby = middle && this.sparesUseful && batch.length >= STANDBY_MIN_FILES;
    const standby = wantStandby ? this.takeSpare() : undefined;
    // a spare this batch handed no file goes back for the next; one it used goes with the batch
    const fed = () => standby !== undefined && standby.order.length > 0;
    // once a process has exited: its last outputs are taken and its scratch folder removed
    const drain = (p: Conversion) =>
      p.finished.then(async () => {
        for (const [i, out] of await p.poll()) settle(i, (q) => q.resolve(out));
        await p.cleanup();
      });
    const drained = procs.map(drain);
    let setupError: unknown;
    let detached = false;
    let done = false;
    let helper: Conversion | undefined;
    let held: Conversion[] = [];
    const unhold = () => {
      for (const p of held) p.resume();
      held = [];
    };
    /**
     * Processes paused while others convert, each on a file past the suspicion time, until when (see the parking
     * below); and the file each was last parked on (a process is parked at most once per file).
     */
    const parked = new Map<Conversion, number>();
    const parkedOn = new Map<Conversion, number>();
    const unpark = (p?: Conversion) => {
      for (const q of p ? [p] : [...parked.keys()]) {
        q.resume();
        parked.delete(q);
      }
    };
    // time on the current file, the time paused left out
    const onFile = (p: Conversion, now: number) => (p.pausedAt ?? now) - p.since;
    /** Processes lost on a file another converts: the files they had yet to reach go to the standby one by one. */
    const lostOnes: Conversion[] = [];
    const tick = async () => {
      const now = performance.now();
      for (const p of procs) {
        for (const [i, out] of await p.poll()) settle(i, (q) => q.resolve(out));
      }
      // a standby not handed a file yet: only whether it is ready (until it is)
      if (standby && !standby.ready && !procs.includes(standby)) await standby.poll();
      if (done) return;
      // the helper has started converting (or is gone): the held processes go on
      if (held.length && helper && (helper.pos > 0 || helper.ended)) unhold();
      const running = procs.filter((p) => !p.ended);
      if (left.size === 0) {
        for (const p of running) p.stop();
        return;
      }
      // converting files already: a standby (warm), or a process past its first file (not still starting)
      const converting = (p: Conversion) => p.serve || p.pos > 0;
      // a process whose remaining files are all converted (by another) has nothing left to do (a standby waits for
      // more until the batch is done)
      for (const p of running) if (!p.serve && !p.order.slice(p.pos).some((i) => left.has(i))) p.stop();
      // two processes on the same file: one is enough. The one that gives way: one still starting, else the one
      // there last (a standby keeps a file it was handed: it converts it in a fraction of a second). A process lost
      // so, both converting, on a file still to convert leaves the batch a process short: the files it had yet to
      // reach may wait behind a hung one (below)
      const givesWay = (a: Conversion, b: Conversion): Conversion => {
        if (converting(a) !== converting(b)) return converting(a) ? b : a;
        return a.since <= b.since ? b : a;
      };
      let lost: Conversion | undefined;
      for (const a of running)
        for (const b of running)
          if (a !== b && !a.stopped && !b.stopped && a.current !== undefined && a.current === b.current) {
            const later = givesWay(a, b);
            later.stop();
            if (left.has(a.current) && converting(a) && converting(b) && !later.serve) {
              lost = later;
              lostOnes.push(later);
            }
          }
      // a standby between files is on none
      const live = running.filter((p) => !p.stopped && p.current !== undefined);
      for (const p of live) {
        if (p.stopped || onFile(p, now) < this.timeoutMs) continue;
        const i = p.current;
        p.stop();
        // the file fails once its process is gone (nothing of it outlives the answer)
        if (i !== undefined)
          settle(i, (q) => {
            const why = `soffice timed out after ${this.timeoutMs} ms on this workbook (its workbook hung the recalculation)`;
            // the last file of the batch: a standby it used goes too, before the answer
            const gone = left.size === 0 && fed() ? standby!.finished : undefined;
            if (gone) standby!.stop();
            void Promise.all([drained[procs.indexOf(p)], gone]).then(() =>
              q.reject(this.blame(q, new InfraError(why))),
            );
          });
      }
      const onIt = new Set(live.filter((p) => !p.stopped && p.current !== undefined).map((p) => p.current!));
      const stalled = live.filter((p) => !p.stopped);
      // a process still on its first file is also starting: it is held only past the usual start-up on top
      const starting = (p: Conversion) => (converting(p) ? 0 : 2 * (this.startupMs || this.stallMs));
      const stall = (p: Conversion) => this.stallMs + starting(p);
      const suspect = (p: Conversion) =>
        Math.min(this.stallMs, Math.max(SUSPECT_FLOOR_MS, 4 * this.fileMs)) + starting(p);
      let waiting = [...left].filter((i) => !onIt.has(i));
      // a process past the suspicion time while another still converts is parked (paused): a hung file spins a core
      // the other files need (one CPU per process, fewer cores than processes). It goes on once none converts, or
      // once parked as long as it had run on the file: a slow file that is not hung waits at most that long more.
      const suspected = (p: Conversion) => onFile(p, now) >= suspect(p);
      for (const [p, until] of parked) if (now >= until) unpark(p);
      const free = (p: Conversion) => !parked.has(p) && !held.includes(p);
      if (stalled.some((p) => free(p) && !suspected(p))) {
        for (const p of stalled)
          if (free(p) && suspected(p) && parkedOn.get(p) !== p.current) {
            parked.set(p, now + onFile(p, now));
            parkedOn.set(p, p.current!);
            p.pause();
          }
      } else unpark();
      if (standby && !standby.stopped && !standby.ended && standby.current === undefined) {
        if (standby.ready) {
          // the standby, ready and between files, takes the next file that a lost or suspected process had yet to
          // reach, none on it: a file two hung files hold from every process waits no start-up
          const from = [...lostOnes, ...stalled.filter((p) => p !== standby && suspected(p))];
          let next: number | undefined;
          for (const p of from) {
            next = p.order.slice(p.pos + 1).find((i) => left.has(i) && !onIt.has(i));
            if (next !== undefined) break;
          }
          if (next !== undefined) {
            if (!procs.includes(standby)) {
              procs.push(standby);
              drained.push(drain(standby));
            }
            onIt.add(next);
            waiting = waiting.filter((i) => i !== next);
            const s = standby;
            s.feed(next, batch[next]!.xlsx).catch(() => s.stop());
          }
        }
        // used, and nothing else runs: nothing more to hand it
        if (fed() && procs.every((p) => p === standby || p.ended)) standby.stop();
      }
      // every process held on a file while others wait: those files; else a process just lost on a file another is
      // on (the two may be on hung files: nothing tells one yet from a slow one): the files it had yet to reach, in
      // its order, none on them
      const everyHeld = stalled.length > 0 && stalled.every(suspected) && waiting.length > 0;
      // (a standby that took a file above counts as one on it; a ready one takes the lost process's files one by one)
      const standbyServes = standby?.ready && !standby.stopped && !standby.ended;
      const files = everyHeld
        ? waiting
        : standbyServes
          ? []
          : (lost?.order.slice(lost.pos + 1).filter((i) => left.has(i) && !onIt.has(i)) ?? []);
      if (!helper && files.length) {
        // a helper takes them. Held processes pause until its first output; when the batch only lost a process, the
        // others go on (the helper stops once what it took is converted by another)
        helper = this.startConversion(batch, files);
        this.helpers++;
        procs.push(helper);
        drained.push(drain(helper));
        if (everyHeld) {
          held = stalled;
          for (const p of held) p.pause();
        }
        return;
      }
      if (stalled.length && stalled.every((p) => onFile(p, now) >= stall(p))) {
        const back: Pending[] = [];
        for (const i of [...left]) if (!onIt.has(i)) settle(i, (q) => back.push(q));
        this.requeue(back);
      }
      if (!detached && release && left.size && [...left].every((i) => onIt.has(i))) {
        if (this.suspects < this.maxSuspects) {
          detached = true;
          this.suspects++;
          release();
        }
      }
    };
    let ticking = Promise.resolve();
    const timer = setInterval(() => {
      ticking = ticking.then(tick).catch(() => {});
    }, POLL_MS);
    try {
      // every process, a helper started meanwhile included
      let ends: PromiseSettledResult<void>[] = [];
      for (let n = -1; n !== drained.length; ) {
        n = drained.length;
        ends = await Promise.allSettled(drained);
      }
      clearInterval(timer);
      await ticking;
      await tick();
      done = true;
      for (const e of ends) if (e.status === "rejected") setupError ??= e.reason;
      for (const p of procs) if (p.setupError) setupError ??= p.setupError;
      const rest = [...left];
      if (!rest.length) return;
      if (setupError) {
        for (const i of rest) settle(i, (q) => q.reject(setupError));
        return;
      }
      if (batch.length > 1) {
        // left by a crash (or a process that produced nothing): each alone, once
        for (const i of rest) {
          const q = batch[i]!;
          left.delete(i);
          await this.runBatch([q]);
        }
        return;
      }
      const why = procs.map((p) => p.failure).find(Boolean) ?? "soffice produced no output file";
      for (const i of rest) settle(i, (q) => q.reject(this.blame(q, new InfraError(why))));
    } finally {
      clearInterval(timer);
      unhold();
      unpark();
      if (detached) this.suspects--;
      if (standby && !fed() && !standby.stopped && !standby.ended) this.keepSpare(standby);
      else standby?.stop();
      await Promise.all(procs.map((p) => p.cleanup()));
      // the next such batch finds a spare ready (started here, off this batch's way), or the one it gave back
      if (wantStandby) this.startSpare();
    }
  }

  /**
   * Stop the spare LibreOffice, if one idles, and start none again (the env's `close`): it would otherwise idle up
   * to SPARE_IDLE_MS after its env is gone. Conversions still run, in their own processes. Resolves once every spare
   * has exited and its folder is removed: one a running batch holds as its standby stops with that batch.
   */
  async close(): Promise<void> {
    this.sparesUseful = false;
    this.takeSpare()?.stop();
    await Promise.all(this.sparesGone);
  }

  /** The spare, if one is running, taken for a batch (no longer idle: its idle limit stops). */
  private takeSpare(): Conversion | undefined {
    const s = this.spare;
    this.spare = undefined;
    clearTimeout(this.spareIdle);
    return s && !s.stopped && !s.ended ? s : undefined;
  }

  /**
   * Keep `s` as the spare (a new one, or one a batch did not use), stopped after SPARE_IDLE_MS unused; stopped at
   * once when another is kept or once closed. A stopped spare's folder is removed when it exits (`startSpare`).
   */
  private keepSpare(s: Conversion): void {
    if (!this.sparesUseful || (this.spare && this.spare !== s)) {
      s.stop();
      return;
    }
    this.spare = s;
    clearTimeout(this.spareIdle);
    this.spareIdle = setTimeout(() => {
      if (this.spare !== s) return;
      this.spare = undefined;
      s.stop();
    }, SPARE_IDLE_MS);
    this.spareIdle.unref();
  }

  /** Start a spare if none runs (and not closed): a LibreOffice that takes files once started (libreoffice-serve.ts). */
  private startSpare(): void {
    if (!this.sparesUseful || (this.spare && !this.spare.stopped && !this.spare.ended)) return;
    const s = this.startConversion([], [], true);
    // one that exits on its own (a failed start) is not kept
    const gone: Promise<void> = s.finished
      .then(() => {
        if (this.spare === s) this.spare = undefined;
        return s.cleanup();
      })
      .finally(() => this.sparesGone.delete(gone));
    this.sparesGone.add(gone);
    this.keepSpare(s);
  }

  /** A model-written file that fails alone, with a working LibreOffice, is the model's doing. */
  private blame(p: Pending, e: unknown): unknown {
    if (p.kind !== "output" || (e instanceof InfraError && /jail could not be built|failed to start/.test(e.message)))
      return e;
    return new OutputRecalcError(`LibreOffice could not recalculate the workbook: ${(e as Error).message}`);
  }

  /** The profile template, made once per process (per LibreOffice install and jail mode) and shared by instances. */
  private profileTemplate(): Promise<string> {
    const key = `${this.jailed ? "jail" : "host"}:${this.installDir ?? this.soffice}`;
    let made = templates.get(key);
    if (!made) {
      made = this.makeTemplate();
      templates.set(key, made);
      made.catch(() => templates.delete(key));
    }
    return made;
  }

  private async makeTemplate(): Promise<string> {
    const dir = join(tmpdir(), `${PREFIX}${process.pid}-profile-${randomBytes(6).toString("hex")}`);
    if (templates.size === 0) process.once("exit", removeTemplates);
    templateDirs.push(dir);
    const scratch = join(tmpdir(), `${PREFIX}${process.pid}-${randomBytes(8).toString("hex")}`);
    const limit = Math.max(this.timeoutMs, 60_000);
    try {
      if (this.jailed) await makeProfileTemplate(this.installDir!, dir, scratch, this.memoryMb, limit);
      else {
        writeProfileSettings(dir);
        for (let i = 0; i < 2; i++) {
          const r = await runGroup(this.unjailedCommand(scratch, [], dir), limit);
          if (r.code === 0) break;
          if (r.code !== 81 || i === 1) throw new Error(`exit ${r.code}: ${r.stderr.trim().slice(-300)}`);
        }
      }
    } catch (e) {
      throw new InfraError(`LibreOffice failed to start${this.jailed ? " in its jail" : ""}: ${(e as Error).message}`);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
    return dir;
  }

  /** Start one soffice process converting `batch` in `order`, in its own jail and scratch folder. */
  private startConversion(batch: Pending[], order: number[], serve = false): Conversion {
    // a spare's folder is named apart: it lives on between batches, on purpose
    const dir = join(tmpdir(), `${PREFIX}${process.pid}-${serve ? "spare-" : ""}${randomBytes(8).toString("hex")}`);
    const names = order.map(() => `${randomBytes(16).toString("hex")}.xlsx`);
    const abort = new AbortController();
    const seen = new Set<number>();
    /** The process-group leader of the running jail. */
    let pid: number | undefined;
    const signal = (sig: NodeJS.Signals) => {
      try {
        if (pid !== undefined) process.kill(-pid, sig);
      } catch {
        // gone already
      }
    };
    const c: Conversion = {
      order,
      pos: 0,
      since: performance.now(),
      ended: false,
      stopped: false,
      serve,
      ready: !serve,
      feed: async (i: number, xlsx: Buffer) => {
        const name = serveName(order.length + 1);
        order.push(i);
        names.push(name);
        c.since = performance.now();
        this.standbyFiles++;
        // converting now: counted with the batch's processes
        if (pid !== undefined) this.running.add(pid);
        // whole before it is seen: written under a dot name, then renamed
        const tmp = join(dir, "in", `.${name}`);
        await writeFile(tmp, xlsx, { mode: 0o600 });
        giveFileToJail(tmp);
        await rename(tmp, join(dir, "in", name));
      },
      get current() {
        return c.order[c.pos];
      },
      stop() {
        c.stopped = true;
        abort.abort();
      },
      pause() {
        if (c.pausedAt !== undefined || c.ended) return;
        c.pausedAt = performance.now();
        signal("SIGSTOP");
      },
      resume() {
        if (c.pausedAt === undefined) return;
        // a process killed while paused dies at once (SIGKILL ends a stopped process); one still there goes on
        signal("SIGCONT");
        c.since += performance.now() - c.pausedAt;
        c.pausedAt = undefined;
      },
      poll: async () => {
        let listed: string[];
        try {
          listed = await readdir(join(dir, "out"));
        } catch {
          return [];
        }
        const have = new Set(listed);
        if (serve && !c.ready && have.has(SERVE_READY)) c.ready = true;
        // its macro stopped on a file it could not load or save: the file is left to the batch (no output, as from
        // --convert-to), and the standby goes (it takes no more files)
        if (serve && !c.stopped && have.has(SERVE_FAILED)) c.stop();
        const got: Array<[number, Buffer]> = [];
        for (let k = 0; k < names.length; k++) {
          const i = order[k]!;
          if (seen.has(i) || !have.has(names[k]!)) continue;
          // read on the thread pool into shared memory: the compare worker takes it as is, no copy on the event loop
          const b = await readShared(join(dir, "out", names[k]!)).catch(() => undefined);
          if (!b) continue;
          seen.add(i);
          got.push([i, b]);
        }
        const before = c.pos;
        while (c.pos < order.length && seen.has(order[c.pos]!)) c.pos++;
        if (c.pos !== before) {
          const now = performance.now();
          if (serve) {
            // a standby's time to an output is neither a start-up nor a batch's time per file
            c.since = now;
            return got;
          }
          // how long a process takes to its first output: start-up is not a stall
          if (before === 0)
            this.startupMs = this.startupMs ? 0.8 * this.startupMs + 0.2 * (now - c.since) : now - c.since;
          else {
            // the time a file takes once started: whether a process sits on one far longer than the batch's others
            const per = (now - c.since) / (c.pos - before);
            this.fileMs = this.fileMs ? 0.8 * this.fileMs + 0.2 * per : per;
          }
          c.since = now;
        }
        return got;
      },
      finished: Promise.resolve(),
      cleanup: async () => {
        await c.finished.catch(() => {});
        await rm(dir, { recursive: true, force: true });
      },
    };
    c.finished = (async () => {
      try {
        const template = await this.profileTemplate();
        await mkdir(join(dir, "in"), { recursive: true, mode: 0o700 });
        await mkdir(join(dir, "out"), { mode: 0o700 });
        await Promise.all(order.map((i, k) => writeFile(join(dir, "in", names[k]!), batch[i]!.xlsx, { mode: 0o600 })));
        if (!this.jailed) {
          await cp(template, join(dir, "profile"), { recursive: true });
          if (serve) installServeMacro(join(dir, "profile"));
        }
        const argv = this.jailed
          ? await jailCommand({
              installDir: this.installDir!,
              hostDir: dir,
              names,
              template,
              memoryMb: this.memoryMb,
              diskMb: this.diskMb,
              ...(serve ? { serve } : {}),
            })
          : this.unjailedCommand(dir, names, join(dir, "profile"), serve);
        if (serve) this.spares++;
        else this.processes++;
        c.since = performance.now();
        let run: Awaited<ReturnType<typeof runGroup>>;
        try {
          // a backstop only: each file's own limit is kept by runBatch
          run = await runGroup(
            argv,
            // a spare's: its idle time, then one batch
            serve ? SPARE_IDLE_MS + this.timeoutMs * (this.batchSize + 1) : this.timeoutMs * (order.length + 1),
            (p) => {
              pid = p;
              // a spare counts once it converts (`feed`)
              if (!serve || order.length) this.running.add(p);
            },
            abort.signal,
            // a spare idles without keeping this process alive
            !serve,
          );
        } catch (e) {
          throw new InfraError(`soffice failed to start: ${(e as Error).message}`);
        } finally {
          if (pid !== undefined) this.running.delete(pid);
          pid = undefined; // a pid the kernel may reuse: never signalled again
        }
        if (c.stopped) return;
        if (this.jailed && run.code === JAIL_SETUP_FAILED)
          c.setupError = new InfraError(`the LibreOffice jail could not be built: ${run.stderr.trim().slice(-300)}`);
        else if (run.timedOut) c.failure = `soffice timed out after ${this.timeoutMs * (order.length + 1)} ms`;
        else if (run.signal) c.failure = `soffice was killed by ${run.signal}`;
        else if (run.code !== 0) c.failure = `soffice exited with ${run.code}: ${run.stderr.trim().slice(0, 300)}`;
      } catch (e) {
        c.setupError = e instanceof InfraError ? e : new InfraError(`soffice failed to start: ${(e as Error).message}`);
      } finally {
        c.ended = true;
      }
    })();
    return c;
  }

  /** Without namespaces: soffice on the host, a fresh copy of the profile per batch, in its own process group. */
  private unjailedCommand(dir: string, names: string[], profile: string, serve = false): string[] {
    const pdeath = existsSync("/usr/bin/setpriv") ? ["setpriv", "--pdeathsig", "KILL", "--"] : [];
    return [
      ...pdeath,
      "env",
      "SAL_ENABLE_FILE_LOCKING=0",
      `HOME=${profile}`,
      this.soffice,
      `-env:UserInstallation=${pathToFileURL(profile).href}`,
      "--headless",
      "--norestore",
      ...(serve
        ? [serveMacroUrl(join(dir, "in"), join(dir, "out"))]
        : names.length
          ? [
              "--calc",
              "--convert-to",
              "xlsx:Calc MS Excel 2007 XML",
              "--outdir",
              join(dir, "out"),
              ...names.map((n) => join(dir, "in", n)),
            ]
          : ["--terminate_after_init"]),
    ];
  }
}
