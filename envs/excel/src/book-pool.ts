/**
 * The structured tools' workbooks on worker threads (book-host.ts runs there): parsing a workbook, applying a call,
 * recalculating and saving never run on the env's event loop. A rollout's file is pinned to one worker, so its
 * parsed workbook stays cached there between calls; each worker runs its jobs one at a time. A job past its time
 * limit or out of memory terminates only its worker: the model gets a tool error, the rollouts pinned there keep
 * their files (the truth) and the next job starts a fresh worker. From sources (tests), or with
 * `BENCHMAX_EXCEL_WORKERS=0`, the host runs inline.
 */
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { BookHost, type BookJob, type BookReply, type ReplayJob } from "./book-host.js";
import { movable, shareable } from "./compare-pool.js";
import { builtExecArgv, workerScript } from "./worker-script.js";

export { builtExecArgv } from "./worker-script.js";

/** Most time one structured call (or one replay batch) may take on a worker. */
export const BOOK_JOB_TIMEOUT_MS = 30_000;
/** Heap of one book worker (a workbook past it fails its own call). */
const BOOK_WORKER_HEAP_MB = 2048;

interface Pending {
  job: BookJob | ReplayJob;
  resolve(r: BookReply): void;
}

interface Slot {
  worker?: Worker;
  queue: Pending[];
  current?: Pending;
  timer?: NodeJS.Timeout;
  pins: number;
}

export class BookPool {
  private readonly slots: Slot[];
  private readonly pins = new Map<string, Slot>();
  private next = 0;

  constructor(
    private readonly script: URL,
    size: number,
    private readonly jobTimeoutMs = BOOK_JOB_TIMEOUT_MS,
  ) {
    this.slots = Array.from({ length: Math.max(1, size) }, () => ({ queue: [], pins: 0 }));
  }

  /** Run a job on the worker its file is pinned to (replays go to the least busy worker). */
  run(job: BookJob | ReplayJob): Promise<BookReply> {
    const slot = job.kind === "book" ? this.pinned(job.file) : this.leastBusy();
    return new Promise((resolve) => {
      slot.queue.push({ job, resolve });
      this.pump(slot);
    });
  }

  /** The rollout is gone: unpin its file and drop its cached workbook. */
  drop(file: string): void {
    const slot = this.pins.get(file);
    if (!slot) return;
    this.pins.delete(file);
    slot.pins--;
    slot.worker?.postMessage({ kind: "drop", file });
  }

  private pinned(file: string): Slot {
    let slot = this.pins.get(file);
    if (!slot) {
      slot = this.slots.reduce((a, b) => (b.pins < a.pins ? b : a));
      slot.pins++;
      this.pins.set(file, slot);
    }
    return slot;
  }

  private leastBusy(): Slot {
    const n = this.slots.length;
    let best = this.slots[this.next++ % n]!;
    for (const s of this.slots)
      if (s.queue.length + (s.current ? 1 : 0) < best.queue.length + (best.current ? 1 : 0)) best = s;
    return best;
  }

  private spawn(slot: Slot): Worker {
    const worker = new Worker(fileURLToPath(this.script), {
      resourceLimits: { maxOldGenerationSizeMb: BOOK_WORKER_HEAP_MB },
      execArgv: builtExecArgv(),
    });
    worker.unref();
    worker.on("message", (m: { reply: BookReply }) => {
      if (slot.worker !== worker) return;
      this.finish(slot, m.reply);
    });
    const lost = (why: string) => {
      if (slot.worker !== worker) return;
      slot.worker = undefined;
      this.finish(slot, { toolError: why });
    };
    worker.on("error", (e) =>
      lost(
        (e as NodeJS.ErrnoException).code === "ERR_WORKER_OUT_OF_MEMORY"
          ? `the workbook ran out of memory (${BOOK_WORKER_HEAP_MB} MB) and this call was stopped`
          : `this call failed on its worker: ${e.message}`,
      ),
    );
    worker.on("exit", () => lost("this call's worker exited"));
    slot.worker = worker;
    return worker;
  }

  private finish(slot: Slot, reply: BookReply): void {
    if (slot.timer) clearTimeout(slot.timer);
    slot.timer = undefined;
    const p = slot.current;
    slot.current = undefined;
    slot.worker?.unref();
    p?.resolve(reply);
    this.pump(slot);
  }

  private pump(slot: Slot): void {
    if (slot.current) return;
    const p = slot.queue.shift();
    if (!p) return;
    slot.current = p;
    const worker = slot.worker ?? this.spawn(slot);
    worker.ref();
    slot.timer = setTimeout(() => {
      if (slot.worker === worker) slot.worker = undefined;
      void worker.terminate();
      this.finish(slot, {
        toolError: `the work on this workbook ran past ${this.jobTimeoutMs} ms and was stopped`,
      });
    }, this.jobTimeoutMs);
    slot.timer.unref();
    // a replay's bytes go over shared (or as a copy the worker owns), never cloned on this thread
    if (p.job.kind === "replay") {
      const bytes = shareable(p.job.bytes);
      worker.postMessage(Object.assign({}, p.job, { bytes }), movable(bytes));
    } else worker.postMessage(p.job);
  }

  /** Workers started, files pinned, jobs waiting or running. */
  stats(): { workers: number; pinned: number; queued: number } {
    return {
      workers: this.slots.filter((s) => s.worker).length,
      pinned: this.pins.size,
      queued: this.slots.reduce((a, s) => a + s.queue.length + (s.current ? 1 : 0), 0),
    };
  }

  async close(): Promise<void> {
    await Promise.all(this.slots.map((s) => s.worker?.terminate()));
    for (const s of this.slots) s.worker = undefined;
  }
}

let pool: BookPool | null | undefined;
let inline: BookHost | undefined;

function sharedPool(): BookPool | null {
  if (pool !== undefined) return pool;
  const w = workerScript(2, 4);
  pool = w ? new BookPool(w.script, w.threads) : null;
  return pool;
}

/** Run a structured call or a replay batch: on a book worker when the pool is available, else inline. */
export function bookAsync(job: BookJob | ReplayJob): Promise<BookReply> {
  const p = sharedPool();
  if (p) return p.run(job);
  inline ??= new BookHost();
  return inline.run(job);
}

/** Forget a rollout's file (pin and cached workbook). */
export function dropBook(file: string): void {
  const p = sharedPool();
  if (p) p.drop(file);
  else inline?.drop(file);
}

/** Whether structured calls run on worker threads here (false: inline, from sources or turned off). */
export function bookWorkers(): boolean {
  return sharedPool() !== null;
}
