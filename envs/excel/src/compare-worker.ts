/** A worker thread of the compare pool: runs `compareWorkbooks` (with its recalculation) off the main thread. */
import { parentPort } from "node:worker_threads";
import { type CompareOptions, compareWorkbooks } from "./compare.js";

interface Job {
  id: number;
  gold: Uint8Array;
  output?: Uint8Array;
  answerPosition: unknown;
  options: CompareOptions;
}

parentPort?.on("message", (job: Job) => {
  try {
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
