/**
 * Compares (with their recalculation) on worker threads, so one rollout's big recalculation does not stall the
 * event loop the other rollouts run on, nor the compares queued behind it: jobs wait in one queue and go to the
 * next free worker. Used when the built worker (dist/compare-worker.js) exists; from sources (tests) the compare
 * runs inline. `BENCHMAX_EXCEL_WORKERS=0` turns the pool off, `=N` sets its size (default 4–8).
 */
import { open } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { type CompareOptions, type CompareResult, compareWorkbooks } from "./compare.js";
import { refuseExternalRefs } from "./external-refs.js";
import { builtExecArgv, workerScript } from "./worker-script.js";
import { inspectXlsx } from "./xlsx-inspect.js";

type JobMsg =
  | { kind?: "compare"; gold: Uint8Array; output?: Uint8Array; answerPosition: unknown; options: CompareOptions }
  | { kind: "inspect" | "seal"; bytes: Uint8Array };

interface Job {
  msg: JobMsg;
  resolve(r: any): void;
  reject(e: unknown): void;
}

interface Slot {
  worker: Worker;
  job?: Job;
  timer?: NodeJS.Timeout;
}

/** A job ran past the pool's time limit: its worker was terminated. */
export class WorkerTimeoutError extends Error {
  override name = "WorkerTimeoutError";
}

/** Most time one job may run on a worker before the worker is terminated (a hostile file cannot hold a slot). */
export const JOB_TIMEOUT_MS = 120_000;

export class ComparePool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];

  constructor(
    private readonly script: URL,
    private readonly size: number,
    private readonly jobTimeoutMs = JOB_TIMEOUT_MS,
  ) {}

  private spawn(): Slot {
    // a workbook too big for the heap fails its own job (ERR_WORKER_OUT_OF_MEMORY), not the process
    const worker = new Worker(fileURLToPath(this.script), {
      execArgv: builtExecArgv(),
      resourceLimits: { maxOldGenerationSizeMb: 3072 },
    });
    worker.unref();
    const slot: Slot = { worker };
    worker.on("message", (m: { result?: CompareResult; error?: string }) => {
      const job = slot.job;
      slot.job = undefined;
      if (slot.timer) clearTimeout(slot.timer);
      worker.unref();
      if (job) {
        if (m.error !== undefined) job.reject(new Error(`compare worker: ${m.error}`));
        else job.resolve(m.result!);
      }
      this.pump();
    });
    worker.on("error", (e) => {
      if (slot.timer) clearTimeout(slot.timer);
      slot.job?.reject(new Error(`the compare worker failed on this case: ${e.message}`));
      slot.job = undefined;
      this.drop(slot);
    });
    worker.on("exit", () => {
      if (slot.timer) clearTimeout(slot.timer);
      slot.job?.reject(new Error("the compare worker exited during this case"));
      slot.job = undefined;
      this.drop(slot);
    });
    this.slots.push(slot);
    return slot;
  }

  private drop(slot: Slot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    this.pump();
  }

  private pump(): void {
    while (this.queue.length) {
      let slot = this.slots.find((s) => !s.job);
      if (!slot && this.slots.length < this.size) slot = this.spawn();
      if (!slot) return;
      const job = this.queue.shift()!;
      slot.job = job;
      slot.worker.ref();
      slot.timer = setTimeout(() => {
        const j = slot.job;
        slot.job = undefined;
        j?.reject(new WorkerTimeoutError(`the work on this file ran past ${this.jobTimeoutMs} ms and was stopped`));
        void slot.worker.terminate();
        this.drop(slot);
      }, this.jobTimeoutMs);
      slot.timer.unref();
      const m = job.msg;
      slot.worker.postMessage({ id: 0, ...m }, "bytes" in m ? movable(m.bytes) : movable(m.gold, m.output));
    }
  }

  /** Run the inspection of a model-written file (xlsx-inspect.ts) on a worker. */
  inspect(bytes: Buffer): Promise<string | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ msg: { kind: "inspect", bytes: shareable(bytes) }, resolve, reject });
      this.pump();
    });
  }

  /** Refuse a model-written file's external references (external-refs.ts) on a worker: the sealed bytes, or undefined when unchanged. */
  seal(bytes: Buffer): Promise<Uint8Array | undefined> {
    return new Promise((resolve, reject) => {
      this.queue.push({ msg: { kind: "seal", bytes: shareable(bytes) }, resolve, reject });
      this.pump();
    });
  }

  compare(
    gold: Buffer,
    output: Buffer | undefined,
    answerPosition: unknown,
    options: CompareOptions,
  ): Promise<CompareResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({
        msg: { gold: shareable(gold), output: output && shareable(output), answerPosition, options },
        resolve,
        reject,
      });
      this.pump();
    });
  }

  async close(): Promise<void> {
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
export function inspectAsync(bytes: Buffer): Promise<string | undefined> {
  const p = sharedPool();
  if (!p) return Promise.resolve(inspectXlsx(bytes));
  return p.inspect(bytes);
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
): Promise<CompareResult> {
  const p = sharedPool();
  if (!p) return Promise.resolve(compareWorkbooks(gold, output, answerPosition, options));
  return p.compare(gold, output, answerPosition, options);
}
