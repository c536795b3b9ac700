/** A worker thread of the compare pool: runs `compareWorkbooks` (with its recalculation) off the main thread. */
import { parentPort } from "node:worker_threads";
import { BookHost, type BookJob, type ReplayJob } from "./book-host.js";
import { type CompareOptions, compareWorkbooks } from "./compare.js";
import { refuseExternalRefs } from "./external-refs.js";
import { inspectXlsx } from "./xlsx-inspect.js";
import { hasFormulas } from "./xlsx-values.js";

interface Job {
  id: number;
  kind?: "compare" | "inspect" | "seal" | "formulas";
  bytes?: Uint8Array;
  gold: Uint8Array;
  output?: Uint8Array;
  answerPosition: unknown;
  options: CompareOptions;
}

let host: BookHost | undefined;

parentPort?.on("message", (job: Job | BookJob | ReplayJob | { kind: "drop"; file: string }) => {
  // the book pool's jobs (book-pool.ts): the structured tools' workbooks, one job at a time per worker
  if (job.kind === "drop") {
    host?.drop(job.file);
    return;
  }
  if (job.kind === "book" || job.kind === "replay") {
    host ??= new BookHost();
    // a replay's workbook is on a SharedArrayBuffer (book-host.ts): the parent gets it without a copy
    void host.run(job).then((reply) => parentPort!.postMessage({ reply }));
    return;
  }
  try {
    if (job.kind === "inspect") {
      const b = job.bytes!;
      parentPort!.postMessage({ id: job.id, result: inspectXlsx(Buffer.from(b.buffer, b.byteOffset, b.byteLength)) });
      return;
    }
    if (job.kind === "formulas") {
      const b = job.bytes!;
      parentPort!.postMessage({ id: job.id, result: hasFormulas(Buffer.from(b.buffer, b.byteOffset, b.byteLength)) });
      return;
    }
    if (job.kind === "seal") {
      const b = job.bytes!;
      const buf = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
      const sealed = refuseExternalRefs(buf).xlsx;
      if (sealed === buf) parentPort!.postMessage({ id: job.id, result: undefined });
      else {
        const out = new Uint8Array(sealed.byteLength);
        out.set(sealed);
        parentPort!.postMessage({ id: job.id, result: out }, [out.buffer]);
      }
      return;
    }
    const r = compareWorkbooks(
      Buffer.from(job.gold.buffer, job.gold.byteOffset, job.gold.byteLength),
      job.output ? Buffer.from(job.output.buffer, job.output.byteOffset, job.output.byteLength) : undefined,
      job.answerPosition,
      job.options,
    );
    parentPort!.postMessage({ id: job.id, result: r });
  } catch (e) {
    parentPort!.postMessage({ id: job.id, error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) });
  }
});
