import { renameSync, rmSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { UsageError } from "@benchmax/core";
import { chartJsSource } from "./chart-library.js";
import type { CompareOptions } from "./compare-runs.js";
import { loadRun } from "./load-run.js";
import { inlineTranscripts, renderHtml } from "./render-html.js";
import { buildReportData } from "./report-data.js";
import { assertNotSymlink } from "./run-files.js";
import { clearSidecar, TranscriptStore } from "./transcripts.js";

export interface WriteReportOptions {
  /** A baseline run dir to compare against. */
  baseline?: string;
  /** Earlier run dirs, oldest first: the page draws each metric's curve across them and this run. */
  series?: string[];
  /** Where to write (default `<runDir>/report.html`). */
  out?: string;
  /**
   * The regression gate's options, as `benchmax compare` takes them: `maxDrop` (tolerated drop in reward, pass rate
   * and each component, default 0), `maxErrorRateIncrease` (default 0.005) and `allow` (accepted mismatches).
   */
  compare?: CompareOptions;
  /**
   * Where the rollout transcripts go: `inline` in the page, `sidecar` chunk files in a folder beside it
   * (`report.transcripts/` for `report.html`), loaded on demand; `auto` (default) inlines them while they stay under
   * `inlineLimitBytes`, so a small run's report is one file, and a large run's page stays small.
   */
  transcripts?: "auto" | "inline" | "sidecar" | "none";
  /** `auto` inlines transcripts up to this many bytes (default 2 MiB). */
  inlineLimitBytes?: number;
  /** Bytes of transcript JSON per sidecar chunk (default 1 MiB). */
  chunkBytes?: number;
  /**
   * The most bytes one results line may hold (default 16 MiB): a longer line is skipped unread and listed on the
   * page and in `tooLarge` (see `LoadRunOptions.maxLineBytes`).
   */
  maxLineBytes?: number;
}

/** What `writeReport` wrote. */
export interface WrittenReport {
  /** The page. */
  path: string;
  /** Its size in bytes. */
  bytes: number;
  /** The sidecar transcript chunk files (none when the transcripts are inlined). */
  transcriptFiles: string[];
  /** Whether `benchmax compare` fails on these runs: a regression or runs that are not comparable (undefined without a baseline). */
  failed?: boolean;
  /** Results lines over `maxLineBytes`, skipped unread (this run's, the baseline's and the series'). */
  tooLarge?: { file: string; line: number; bytes: number }[];
}

const MODES = ["auto", "inline", "sidecar", "none"] as const;

/**
 * Write the report of a run dir and describe what was written. The page inlines chart.js and the data, so it opens
 * offline; transcripts go into the page or into a sidecar folder beside it (see `transcripts`).
 */
export async function writeReportFiles(runDir: string, options: WriteReportOptions = {}): Promise<WrittenReport> {
  const mode = options.transcripts ?? "auto";
  if (!MODES.includes(mode)) throw new UsageError(`transcripts must be one of ${MODES.join(", ")}, got "${mode}"`);
  for (const k of ["maxDrop", "maxErrorRateIncrease"] as const) {
    const v = options.compare?.[k];
    if (v !== undefined && !(Number.isFinite(v) && v >= 0))
      throw new UsageError(`${k} must be a number >= 0, got ${v}`);
  }
  // the conversations stream into the store as results.jsonl is read; only the rows stay in memory
  const store = mode === "none" ? undefined : new TranscriptStore({ chunkBytes: options.chunkBytes });
  const maxLineBytes = options.maxLineBytes;
  const run = loadRun(runDir, { transcripts: store, dropMessages: true, maxLineBytes });
  store?.finish();
  const baseline = options.baseline ? loadRun(options.baseline, { dropMessages: true, maxLineBytes }) : undefined;
  const series = options.series?.map((d) => loadRun(d, { dropMessages: true, maxLineBytes }));
  const tooLarge = [run, baseline, ...(series ?? [])].flatMap((r) => r?.tooLarge ?? []);
  const data = buildReportData(run, baseline, {
    ...(options.compare ? { compare: options.compare } : {}),
    ...(series?.length ? { series } : {}),
  });
  if (tooLarge.length) data.tooLarge = tooLarge;
  const out = options.out ?? join(runDir, "report.html");
  const sidecarName = `${basename(out).replace(/\.html?$/i, "")}.transcripts`;
  const sidecarDir = join(dirname(out), sidecarName);
  const sidecar =
    store !== undefined &&
    (mode === "sidecar" || (mode === "auto" && store.totalBytes > (options.inlineLimitBytes ?? 2 << 20)));
  assertNotSymlink(sidecarDir, "transcripts folder");
  let transcriptFiles: string[] = [];
  let transcriptsHtml = "";
  if (store && sidecar) {
    data.transcripts = { mode: "sidecar", chunks: store.chunks.length, dir: sidecarName };
    transcriptFiles = store.writeSidecar(sidecarDir, data.reportId);
  } else {
    clearSidecar(sidecarDir);
    if (store) transcriptsHtml = inlineTranscripts(store.chunks.map((_, i) => store.chunkJson(i)));
  }
  const html = renderHtml(data, chartJsSource(), transcriptsHtml);
  // written beside and renamed into place: a report.html that is a symlink is replaced, never written through
  const tmp = `${out}.tmp-${process.pid}-${Date.now()}`;
  try {
    writeFileSync(tmp, html, { flag: "wx" });
    renameSync(tmp, out);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
  return {
    path: out,
    bytes: Buffer.byteLength(html),
    transcriptFiles,
    ...(data.baseline ? { failed: data.baseline.check.failed } : {}),
    ...(tooLarge.length ? { tooLarge } : {}),
  };
}

/**
 * Write `report.html` into the run dir (or `out`): charts and data inlined, works offline; transcripts inlined for
 * small runs and in a sidecar folder beside the page for large ones. Resolves to the path written. A dir without
 * results.jsonl is a UsageError.
 */
export async function writeReport(runDir: string, options: WriteReportOptions = {}): Promise<string> {
  return (await writeReportFiles(runDir, options)).path;
}
