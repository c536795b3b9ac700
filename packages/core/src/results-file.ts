import { closeSync, existsSync, fsyncSync, openSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import type { RolloutResult } from "./rollout-result.js";
import { forEachJsonLine } from "./run-dir/jsonl.js";
import { SeriesKeeper } from "./series/series-keeper.js";

/** Read a results.jsonl; a torn last line (a crash mid-write) is skipped, any other bad line is a UsageError. */
export function readResults(path: string): RolloutResult[] {
  if (!existsSync(path)) return [];
  const out: RolloutResult[] = [];
  forEachJsonLine(path, (v) => out.push(v as RolloutResult));
  return out;
}

/**
 * Appends one JSON line per rollout and flushes it to the OS at once, so a crash loses nothing written. With
 * `series`, it also keeps the run's live series and writes them beside the file (watch-series.json, SeriesKeeper), so
 * the first `benchmax watch` of the run draws it without reading results.jsonl.
 */
export class ResultsWriter {
  private fd: number | undefined;
  /** The live series of what was written (with the `series` option). */
  keeper?: SeriesKeeper;
  private constructor(readonly path: string) {}

  static async open(
    path: string,
    options: { keep?: RolloutResult[]; series?: { passThreshold: number; everyMs?: number } } = {},
  ): Promise<ResultsWriter> {
    await mkdir(dirname(path), { recursive: true });
    const w = new ResultsWriter(path);
    if (options.series) w.keeper = new SeriesKeeper(path, options.series);
    if (options.keep) {
      // rewrite atomically with the kept lines (drops a torn line and rollouts that will be re-run)
      const tmp = `${path}.tmp-${process.pid}`;
      const lines = options.keep.map((r) => `${JSON.stringify(r)}\n`);
      writeFileSync(tmp, lines.join(""));
      renameSync(tmp, path);
      if (w.keeper) for (let i = 0; i < lines.length; i++) w.keeper.add(options.keep[i]!, Buffer.byteLength(lines[i]!));
    }
    w.fd = openSync(path, options.keep ? "a" : "w");
    return w;
  }

  write(result: RolloutResult): void {
    if (this.fd === undefined) throw new Error(`results file ${this.path} is closed`);
    const bytes = writeSync(this.fd, `${JSON.stringify(result)}\n`);
    this.keeper?.add(result, bytes);
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      fsyncSync(this.fd);
    } catch {
      /* not every fs supports fsync */
    }
    closeSync(this.fd);
    this.fd = undefined;
    this.keeper?.close();
  }
}
