#!/usr/bin/env node
// bench-timeout-s: 600
// `benchmax validate` at scale (issue 27): 1,000,000 id-less arithmetic rows through env-math's row parser with
// core's validateRows (JSONL streamed a line at a time). Figures: rows/s beside a same-run baseline (JSON.parse of
// each line alone), and the peak resident memory beside the file's size and beside the same check on a tenth of the
// rows (bounded: memory grows with the set of task ids, not with the text). Prints one JSON line on stdout.
// BENCH_VALIDATE_ROWS changes the row count (the CI smoke uses 100,000).
import { createReadStream, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { validateRows } from "@benchmax/core";
import math from "@benchmax/env-math";

const log = (...a) => console.error("[validate]", ...a);
const N = Number(process.env.BENCH_VALIDATE_ROWS ?? 1_000_000);
const dir = mkdtempSync(join(tmpdir(), "benchmax-bench-validate-"));

function writeRows(path, n) {
  const chunk = [];
  writeFileSync(path, "");
  for (let i = 0; i < n; i++) {
    const a = (i * 7919) % 100_003;
    const b = (i * 104_729) % 9_973;
    chunk.push(`{"task":"${a} + ${b}","answer":"${a + b}"}`);
    if (chunk.length === 50_000 || i === n - 1) {
      writeFileSync(path, `${chunk.join("\n")}\n`, { flag: "a" });
      chunk.length = 0;
    }
  }
  return statSync(path).size;
}

async function parseOnly(path) {
  let n = 0;
  const lines = createInterface({ input: createReadStream(path, { encoding: "utf8" }), crlfDelay: Infinity });
  for await (const l of lines)
    if (l.trim()) {
      JSON.parse(l);
      n++;
    }
  return n;
}

/** validateRows over the file, with the peak RSS sampled every 50 ms. */
async function validate(env, path) {
  global.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 50);
  const t0 = performance.now();
  const report = await validateRows(path, env.capabilities.tasks.parseTask.bind(env.capabilities.tasks), 5);
  const ms = performance.now() - t0;
  clearInterval(timer);
  peak = Math.max(peak, process.memoryUsage().rss);
  return { report, ms, peakMb: peak / 2 ** 20, growthMb: (peak - base) / 2 ** 20 };
}

try {
  const env = await math.createEnv({});
  const small = join(dir, "small.jsonl");
  const big = join(dir, "big.jsonl");
  const tenth = Math.max(1, Math.floor(N / 10));
  writeRows(small, tenth);
  const bytes = writeRows(big, N);
  log(`${N} rows, ${(bytes / 2 ** 20).toFixed(1)} MiB`);
  const t0 = performance.now();
  const parsed = await parseOnly(big);
  const parseMs = performance.now() - t0;
  const s = await validate(env, small);
  const r = await validate(env, big);
  await env.close();
  if (parsed !== N || r.report.total !== N || r.report.valid !== N || s.report.valid !== tenth) {
    throw new Error(
      `wrong counts: parsed ${parsed}, report ${JSON.stringify({ ...r.report, errors: r.report.errors.slice(0, 2) })}`,
    );
  }
  const rowsPerS = N / (r.ms / 1000);
  const parsePerS = N / (parseMs / 1000);
  log(
    `validate ${rowsPerS.toFixed(0)} rows/s (JSON.parse alone ${parsePerS.toFixed(0)}), peak RSS ${r.peakMb.toFixed(0)} MiB`,
  );
  const figures = [
    {
      id: "validate.rows_per_s",
      label: `\`validate math\` (core validateRows + env-math's parser) over ${N.toLocaleString("en")} id-less arithmetic rows`,
      value: Math.round(rowsPerS),
      unit: "rows/s",
      goal: "every row checked, no stack overflow, no collision",
      pass: true,
      baseline: { label: "JSON.parse of each line alone (streamed)", value: Math.round(parsePerS) },
      ratio: +(parsePerS / rowsPerS).toFixed(1),
    },
    {
      id: "validate.peak_rss_mb",
      label: `peak resident memory while validating ${N.toLocaleString("en")} rows (${(bytes / 2 ** 20).toFixed(0)} MiB of JSONL)`,
      value: +r.peakMb.toFixed(0),
      unit: "MiB",
      goal: "<= 3x the peak on a tenth of the rows (bounded: only the ids are kept, for duplicate checks)",
      pass: r.peakMb <= 3 * s.peakMb,
      baseline: { label: `the same on ${tenth.toLocaleString("en")} rows`, value: +s.peakMb.toFixed(0) },
      ratio: +(r.peakMb / s.peakMb).toFixed(2),
    },
  ];
  console.log(JSON.stringify({ area: "validate", figures }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
