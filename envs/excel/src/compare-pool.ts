/**
 * Compares (with their recalculation) on worker threads, so one rollout's big recalculation does not stall the
 * event loop the other rollouts run on, nor the compares queued behind it: jobs wait per rollout and are taken
 * round-robin, each rollout's scoring has a worker-time budget, and long jobs do not hold the pool (ComparePool). Used when the built worker (dist/compare-worker.js) exists; from sources (tests) the compare
 * runs inline. `BENCHMAX_EXCEL_WORKERS=0` turns the pool off, `=N` sets its size (default 4–8).
 */
import { open } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { type CompareOptions, type CompareResult, compareWorkbooks } from "./compare.js";
import { refuseExternalRefs } from "./external-refs.js";
import { builtExecArgv, workerScript } from "./worker-script.js";
import { inspectXlsx } from "./xlsx-inspect.js";
import { hasFormulas } from "./xlsx-values.js";

type JobMsg =
  | { kind?: "compare"; gold: Uint8Array; output?: Uint8Array; answerPosition: unknown; options: CompareOptions }
  | { kind: "inspect" | "seal" | "formulas"; bytes: Uint8Array };

/**
 * The worker time one rollout's scoring may use, all its cases together (compares and file checks). Shared by the
 * jobs given it: a job runs at most what is left, and once it is spent the rollout's next jobs fail at once.
 */
export interface WorkerBudget {
  /** Worker time allowed (ms). */
  readonly limitMs: number;
  /** Worker time used so far (ms). */
  usedMs: number;
}

/** Default worker time of one rollout's scoring (all its cases). */
export const ROLLOUT_WORKER_BUDGET_MS = 120_000;

/** A fresh worker-time budget for one rollout's scoring. */
export function workerBudget(limitMs = ROLLOUT_WORKER_BUDGET_MS): WorkerBudget {
  return { limitMs, usedMs: 0 };
}

interface Job {
  msg: JobMsg;
  /** Whose job it is: jobs are taken round-robin by owner, and an owner's time is charged here. */
  owner: WorkerBudget;
  resolve(r: any): void;
  reject(e: unknown): void;
}

interface Slot {
  worker: Worker;
  job?: Job;
  timer?: NodeJS.Timeout;
  startedAt?: number;
}

/** A job ran past the pool's time limit, or its rollout's worker-time budget: its worker was terminated. */
export class WorkerTimeoutError extends Error {
  override name = "WorkerTimeoutError";
}

/** Most time one job may run on a worker before the worker is terminated (a hostile file cannot hold a slot). */
export const JOB_TIMEOUT_MS = 120_000;

/** A job running longer than this no longer counts against the pool's size (a waiting job gets a worker of its own). */
export const LONG_JOB_MS = 1000;

export interface ComparePoolOptions {
  /** Most time one job may run (default JOB_TIMEOUT_MS). */
  jobTimeoutMs?: number;
  /** When a running job counts as long (default LONG_JOB_MS). */
  longJobMs?: number;
}

/**
 * Worker threads shared fairly by rollouts:
 * - jobs wait per owner (a rollout's budget) and are taken round-robin by owner, never first-come by case; while
 *   other owners wait, an owner runs one job at a time;
 * - a job runs at most `jobTimeoutMs` and at most what is left of its owner's worker-time budget; past either its
 *   worker is terminated and the job fails with WorkerTimeoutError (scored as the model's failure);
 * - jobs that have run past `longJobMs` stop counting against `size`: up to `size` more workers start for the jobs
 *   waiting behind them, so long jobs cannot hold every worker while short ones queue (those extra workers end when
 *   their job does).
 */
export class ComparePool {
  private readonly slots: Slot[] = [];
  /** Waiting jobs per owner, owners in round-robin order. */
  private readonly queues = new Map<WorkerBudget, Job[]>();
  private readonly jobTimeoutMs: number;
  private readonly longJobMs: number;
  private longTimer: NodeJS.Timeout | undefined;
  private readonly anonymous = workerBudget(Number.POSITIVE_INFINITY);
  /** When each owner was last served (a serial number), for the round-robin. */
  private readonly served = new WeakMap<WorkerBudget, number>();
  private serial = 0;

  constructor(
    private readonly script: URL,
    private readonly size: number,
    options: number | ComparePoolOptions = {},
  ) {
    const o = typeof options === "number" ? { jobTimeoutMs: options } : options;
    this.jobTimeoutMs = o.jobTimeoutMs ?? JOB_TIMEOUT_MS;
    this.longJobMs = o.longJobMs ?? LONG_JOB_MS;
  }

  private spawn(): Slot {
    // a workbook too big for the heap fails its own job (ERR_WORKER_OUT_OF_MEMORY), not the process
    const worker = new Worker(fileURLToPath(this.script), {
      execArgv: builtExecArgv(),
      resourceLimits: { maxOldGenerationSizeMb: 3072 },
    });
    worker.unref();
    const slot: Slot = { worker };
    worker.on("message", (m: { result?: CompareResult; error?: string }) => {
      const job = this.end(slot);
      worker.unref();
      if (job) {
        if (m.error !== undefined) job.reject(new Error(`compare worker: ${m.error}`));
        else job.resolve(m.result!);
      }
      // a worker started beyond the pool's size ends with its job
      if (this.slots.length > this.size) {
        void worker.terminate();
        this.drop(slot);
      } else this.pump();
    });
    worker.on("error", (e) => {
      this.end(slot)?.reject(new Error(`the compare worker failed on this case: ${e.message}`));
      this.drop(slot);
    });
    worker.on("exit", () => {
      this.end(slot)?.reject(new Error("the compare worker exited during this case"));
      this.drop(slot);
    });
    this.slots.push(slot);
    return slot;
  }

  /** The slot's job is over: its time is charged to its owner. */
  private end(slot: Slot): Job | undefined {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = undefined;
    const job = slot.job;
    slot.job = undefined;
    if (job && slot.startedAt !== undefined) job.owner.usedMs += performance.now() - slot.startedAt;
    slot.startedAt = undefined;
    return job;
  }

  private drop(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    this.pump();
  }

  /** Jobs running now that still count against the pool's size (not yet long). */
  private counted(now: number): number {
    return this.slots.filter((s) => s.job && now - s.startedAt! < this.longJobMs).length;
  }

  private running(owner: WorkerBudget): number {
    return this.slots.filter((s) => s.job?.owner === owner).length;
  }

  /**
   * The next job, round-robin by owner: the waiting owner served longest ago (never: first); an owner already running
   * a job waits while another owner has jobs.
   */
  private next(): Job | undefined {
    const owners = [...this.queues.keys()];
    const eligible = owners.length === 1 ? owners : owners.filter((o) => this.running(o) === 0);
    let pick: WorkerBudget | undefined;
    for (const o of eligible) if (!pick || (this.served.get(o) ?? -1) < (this.served.get(pick) ?? -1)) pick = o;
    if (!pick) return undefined;
    this.served.set(pick, this.serial++);
    const q = this.queues.get(pick)!;
    const job = q.shift()!;
    if (!q.length) this.queues.delete(pick);
    return job;
  }

  private pump(): void {
    const now = performance.now();
    while (this.queues.size) {
      if (this.counted(now) >= this.size || this.slots.length >= 2 * this.size) break;
      const job = this.next();
      if (!job) break;
      const left = job.owner.limitMs - job.owner.usedMs;
      if (left <= 0) {
        job.reject(
          new WorkerTimeoutError(
            `this rollout's scoring used its worker time (${job.owner.limitMs} ms for all its cases); this case was not scored`,
          ),
        );
        continue;
      }
      const limit = Math.min(this.jobTimeoutMs, left);
      const slot = this.slots.find((s) => !s.job) ?? this.spawn();
      slot.job = job;
      slot.startedAt = now;
      slot.worker.ref();
      slot.timer = setTimeout(() => {
        const j = this.end(slot);
        // cut at the budget: the budget is spent, whatever the clocks measured (a timer may fire a fraction of a
        // millisecond before `performance.now` says the limit has passed), so the owner's next cases fail at once
        if (j && limit < this.jobTimeoutMs) j.owner.usedMs = Math.max(j.owner.usedMs, j.owner.limitMs);
        j?.reject(
          new WorkerTimeoutError(
            limit < this.jobTimeoutMs
              ? `the work on this file ran past what was left of this rollout's worker time (${job.owner.limitMs} ms for all its cases) and was stopped`
              : `the work on this file ran past ${this.jobTimeoutMs} ms and was stopped`,
          ),
        );
        void slot.worker.terminate();
        this.drop(slot);
      }, limit);
      slot.timer.unref();
      const m = job.msg;
      slot.worker.postMessage({ id: 0, ...m }, "bytes" in m ? movable(m.bytes) : movable(m.gold, m.output));
    }
    this.watchLong();
  }

  /** While jobs wait behind running ones, look again when the oldest running job becomes long. */
  private watchLong(): void {
    if (this.longTimer || !this.queues.size) return;
    const starts = this.slots.filter((s) => s.job).map((s) => s.startedAt!);
    if (!starts.length) return;
    const now = performance.now();
    const due = starts.filter((t) => now - t < this.longJobMs).map((t) => t + this.longJobMs - now);
    if (!due.length) return;
    this.longTimer = setTimeout(
      () => {
        this.longTimer = undefined;
        this.pump();
      },
      Math.max(1, Math.min(...due)),
    );
    this.longTimer.unref();
  }

  private enqueue(
    msg: JobMsg,
    owner: WorkerBudget | undefined,
    resolve: (r: any) => void,
    reject: (e: unknown) => void,
  ) {
    const o = owner ?? this.anonymous;
    let q = this.queues.get(o);
    if (!q) this.queues.set(o, (q = []));
    q.push({ msg, owner: o, resolve, reject });
    this.pump();
  }

  /** Run the inspection of a model-written file (xlsx-inspect.ts) on a worker. */
  inspect(bytes: Buffer, owner?: WorkerBudget): Promise<string | undefined> {
    return new Promise((resolve, reject) =>
      this.enqueue({ kind: "inspect", bytes: shareable(bytes) }, owner, resolve, reject),
    );
  }

  /** Whether a model-written file holds a formula (xlsx-values.ts `hasFormulas`) on a worker. */
  formulas(bytes: Buffer, owner?: WorkerBudget): Promise<boolean> {
    return new Promise((resolve, reject) =>
      this.enqueue({ kind: "formulas", bytes: shareable(bytes) }, owner, resolve, reject),
    );
  }

  /** Refuse a model-written file's external references (external-refs.ts) on a worker: the sealed bytes, or undefined when unchanged. */
  seal(bytes: Buffer, owner?: WorkerBudget): Promise<Uint8Array | undefined> {
    return new Promise((resolve, reject) =>
      this.enqueue({ kind: "seal", bytes: shareable(bytes) }, owner, resolve, reject),
    );
  }

  compare(
    gold: Buffer,
    output: Buffer | undefined,
    answerPosition: unknown,
    options: CompareOptions,
    owner?: WorkerBudget,
  ): Promise<CompareResult> {
    return new Promise((resolve, reject) =>
      this.enqueue(
        { gold: shareable(gold), output: output && shareable(output), answerPosition, options },
        owner,
        resolve,
        reject,
      ),
    );
  }

  /** Workers started, jobs running, jobs waiting. */
  stats(): { workers: number; running: number; long: number; queued: number } {
    const now = performance.now();
    const running = this.slots.filter((s) => s.job).length;
    return {
      workers: this.slots.length,
      running,
      long: running - this.counted(now),
      queued: [...this.queues.values()].reduce((a, q) => a + q.length, 0),
    };
  }

  async close(): Promise<void> {
    if (this.longTimer) clearTimeout(this.longTimer);
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
    this.slots.length = 0;
  }
}

/**
 * Bytes a worker can take without a copy on the event loop: a Buffer on a SharedArrayBuffer (`readShared`) goes as
 * is (shared); any other is copied once into an ArrayBuffer of its own, which is then moved, not cloned. A copy is
 * the fallback: on a VM a 7.6 MB copy into fresh memory cost 40–60 ms of the event loop's CPU.
 */
export function shareable(b: Uint8Array): Uint8Array {
  if (b.buffer instanceof SharedArrayBuffer) return b;
  const c = new Uint8Array(b.byteLength);
  c.set(b);
  return c;
}

/** What to move to a worker along with these payloads (their own ArrayBuffers; shared ones are not moved). */
export function movable(...bs: Array<Uint8Array | undefined>): ArrayBuffer[] {
  return bs.flatMap((b) => (b && b.buffer instanceof ArrayBuffer ? [b.buffer] : []));
}

/**
 * A file's bytes in a Buffer on a SharedArrayBuffer, read on the thread pool: the event loop neither writes the
 * pages (a readFileSync of 7.6 MB cost it 40 ms of CPU on a VM) nor copies them to send them to a worker.
 */
export async function readShared(path: string): Promise<Buffer> {
  const fh = await open(path, "r");
  try {
    const size = (await fh.stat()).size;
    const buf = Buffer.from(new SharedArrayBuffer(size));
    let off = 0;
    while (off < size) {
      const { bytesRead } = await fh.read(buf, off, size - off, off);
      if (!bytesRead) break;
      off += bytesRead;
    }
    return off === size ? buf : buf.subarray(0, off);
  } finally {
    await fh.close();
  }
}

let pool: ComparePool | null | undefined;

function sharedPool(): ComparePool | null {
  if (pool !== undefined) return pool;
  const w = workerScript(4, 8);
  pool = w ? new ComparePool(w.script, w.threads) : null;
  return pool;
}

/**
 * Why a model-written workbook may not be parsed (xlsx-inspect.ts), or undefined: on a worker thread when the pool
 * is available, else inline.
 */
export function inspectAsync(bytes: Buffer, owner?: WorkerBudget): Promise<string | undefined> {
  const p = sharedPool();
  if (!p) return Promise.resolve(inspectXlsx(bytes));
  return p.inspect(bytes, owner);
}

/**
 * Whether a model-written workbook holds a formula (without one, recalculation changes no value): on a worker thread
 * when the pool is available, else inline.
 */
export function hasFormulasAsync(bytes: Buffer, owner?: WorkerBudget): Promise<boolean> {
  const p = sharedPool();
  if (!p) return Promise.resolve(hasFormulas(bytes));
  return p.formulas(bytes, owner);
}

/**
 * A model-written workbook with its external references refused (external-refs.ts), for LibreOffice: on a worker
 * thread when the pool is available (its XML is the model's, of any size), else inline.
 */
export async function sealAsync(bytes: Buffer): Promise<Buffer> {
  const p = sharedPool();
  if (!p) return refuseExternalRefs(bytes).xlsx;
  const sealed = await p.seal(bytes);
  return sealed ? Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength) : bytes;
}

/** `compareWorkbooks` on a worker thread when the pool is available, else inline. */
export function compareAsync(
  gold: Buffer,
  output: Buffer | undefined,
  answerPosition: unknown,
  options: CompareOptions = {},
  owner?: WorkerBudget,
): Promise<CompareResult> {
  const p = sharedPool();
  if (!p) return Promise.resolve(compareWorkbooks(gold, output, answerPosition, options));
  return p.compare(gold, output, answerPosition, options, owner);
}
