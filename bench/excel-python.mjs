#!/usr/bin/env node
// bench-timeout-s: 600
/**
 * excel code tools: the live interpreter per rollout (run_python: python3 + openpyxl; run_code: Node + exceljs;
 * both in the jail, from a warm pool) against a fresh jail per call, measured in the same run:
 * - small-call p50 (print, read a cell of a workbook the interpreter already holds), live vs fresh;
 * - cold start of a rollout's interpreter from the warm pool (its first call, the workbook sent in included);
 * - code calls/s with 64 rollouts at once, live vs a fresh jail per call at the same concurrency;
 * - memory with 256 live Python interpreters (RSS and PSS summed over every process of their jails).
 * Prints progress to stderr and one JSON line to stdout. Run `npx tsup` in envs/excel first.
 * BENCH_LIVE_N (default 256) sets the live-interpreter count of the memory figure.
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  closeInterpreters,
  fixturesDir,
  interpreterStats,
  jailAvailable,
  pythonAvailable,
  runCode,
  runPython,
} from "@benchmax/env-excel";

const log = (...a) => console.error("[bench:excel-python]", ...a);
const figures = [];
const now = () => performance.now();
const tmp = mkdtempSync(join(tmpdir(), "bench-excel-python-"));
const input = join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_input.xlsx");
function ws() {
  const d = mkdtempSync(join(tmp, "r-"));
  const file = join(d, "workbook.xlsx");
  copyFileSync(input, file);
  return { dir: d, file };
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function untilWarm(language) {
  for (let i = 0; i < 4800 && !(interpreterStats().warmBy?.[language] >= 1); i++) await sleep(25);
}

const PY_OPEN = "wb = openpyxl.load_workbook(workbook_path)\nws = wb.active";
const PY_SMALL = "print(ws['A2'].value)";
const JS_SMALL = "console.log(workbook.worksheets[0].getCell('A2').value)";
const py =
  (o = {}) =>
  (f, d, code) =>
    runPython(f, d, code, { timeoutMs: 60_000, ...o });
const js =
  (o = {}) =>
  (f, d, code) =>
    runCode(f, d, code, { timeoutMs: 60_000, deferSave: true, ...o });

async function p50(run, setup, small, n) {
  const { dir, file } = ws();
  if (setup) await run(file, dir, setup);
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = now();
    await run(file, dir, small);
    times.push(now() - t0);
  }
  return median(times);
}

async function rate(run, setup, small, concurrency, callsEach) {
  const rollouts = Array.from({ length: concurrency }, () => ws());
  if (setup) await Promise.all(rollouts.map((r) => run(r.file, r.dir, setup)));
  const t0 = now();
  await Promise.all(
    rollouts.map(async (r) => {
      for (let i = 0; i < callsEach; i++) await run(r.file, r.dir, small);
    }),
  );
  return (concurrency * callsEach * 1000) / (now() - t0);
}

/** RSS and PSS (kB) summed over every descendant process of this one. */
function treeMemory() {
  const kids = new Map();
  for (const n of readdirSync("/proc")) {
    if (!/^\d+$/.test(n)) continue;
    try {
      const s = readFileSync(`/proc/${n}/stat`, "utf8");
      const ppid = Number(s.slice(s.lastIndexOf(")") + 2).split(" ")[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(n));
    } catch {}
  }
  let rss = 0;
  let pss = 0;
  let procs = 0;
  const walk = (p) => {
    for (const c of kids.get(p) ?? []) {
      try {
        const r = readFileSync(`/proc/${c}/smaps_rollup`, "utf8");
        rss += Number(/^Rss:\s+(\d+)/m.exec(r)?.[1] ?? 0);
        pss += Number(/^Pss:\s+(\d+)/m.exec(r)?.[1] ?? 0);
        procs++;
      } catch {}
      walk(c);
    }
  };
  walk(process.pid);
  return { rss, pss, procs };
}

const jail = jailAvailable();
const pyOk = pythonAvailable();
log(`jail: ${jail.ok ? "yes" : `no (${jail.reason})`}; run_python: ${pyOk.ok ? pyOk.reason : `no (${pyOk.reason})`}`);
if (!jail.ok || !pyOk.ok) {
  log("no jail or no python here: nothing to measure");
  process.stdout.write(`${JSON.stringify({ area: "excel-python", figures })}\n`);
  process.exit(0);
}

// warm-up: the first call of a process probes python and locates the exceljs bundle
{
  const { dir, file } = ws();
  await py()(file, dir, "print(1)");
  await js()(file, dir, JS_SMALL);
  closeInterpreters();
}

for (const [tool, run, setup, small, fresh] of [
  ["run_python", py(), PY_OPEN, PY_SMALL, py({ fresh: true })],
  ["run_code", js(), undefined, JS_SMALL, js({ fresh: true, deferSave: false })],
]) {
  const live = await p50(run, setup, small, 40);
  // a fresh jail per call has no state: it opens the workbook in every call
  const base = await p50(fresh, undefined, tool === "run_python" ? `${PY_OPEN}\n${PY_SMALL}` : small, 8);
  log(`${tool}: live p50 ${live.toFixed(1)} ms, fresh jail ${base.toFixed(1)} ms`);
  figures.push({
    id: `${tool}.small_call_p50_ms`,
    label: `${tool} small call (read a cell, print) p50, live interpreter`,
    value: Number(live.toFixed(1)),
    unit: "ms",
    baseline: { label: "a fresh jail per call, same run (p50 ms)", value: Number(base.toFixed(1)) },
    ratio: Number((base / live).toFixed(1)),
    goal: "≤ 10 ms and ≥ 20× faster than a fresh jail",
    pass: live <= 10 && base / live >= 20,
  });
}

// cold start: a new rollout's first call when the pool has a jail ready
for (const [tool, run, code, what] of [
  ["run_python", py(), "print(1)", "workbook sent in, print"],
  [
    "run_python",
    py(),
    PY_SMALL.replace("ws['A2']", "openpyxl.load_workbook(workbook_path).active['A2']"),
    "workbook sent in, opened with openpyxl, a cell read",
  ],
  ["run_code", js(), JS_SMALL, "workbook sent in and loaded by exceljs, a cell read"],
]) {
  const times = [];
  const first = ws();
  await run(first.file, first.dir, "1"); // the pool for these options exists and fills
  for (let i = 0; i < 8; i++) {
    await untilWarm(tool === "run_python" ? "python" : "node");
    const { dir, file } = ws();
    const t0 = now();
    await run(file, dir, code);
    times.push(now() - t0);
  }
  const ms = median(times);
  log(`${tool}: cold start from the warm pool (${what}) p50 ${ms.toFixed(1)} ms`);
  figures.push({
    id: `${tool}.pool_cold_start_ms${code === "print(1)" ? "" : "_open"}`,
    label: `${tool} a rollout's first call with a warm jail ready (${what}) p50`,
    value: Number(ms.toFixed(1)),
    unit: "ms",
    goal: "≤ 50 ms",
    pass: ms <= 50,
  });
  closeInterpreters();
}

// throughput with 64 rollouts at once
for (const [tool, run, setup, small, fresh, freshSmall] of [
  ["run_python", py({ warmPool: 8 }), PY_OPEN, PY_SMALL, py({ fresh: true }), `${PY_OPEN}\n${PY_SMALL}`],
  ["run_code", js({ warmPool: 8 }), "1", JS_SMALL, js({ fresh: true, deferSave: false }), JS_SMALL],
]) {
  const live = await rate(run, setup, small, 64, 20);
  closeInterpreters();
  // a fresh jail per call: 64 callers at once, one call each (starts are CPU-bound and run a few at a time)
  const base = await rate(fresh, undefined, freshSmall, 64, 1);
  log(`${tool}: ${live.toFixed(1)} calls/s live with 64 rollouts, ${base.toFixed(1)} with a fresh jail per call`);
  figures.push({
    id: `${tool}.calls_per_s_64`,
    label: `${tool} small calls/s with 64 rollouts at once, live interpreters`,
    value: Number(live.toFixed(1)),
    unit: "calls/s",
    baseline: {
      label: "a fresh jail per call, 64 callers at once, same run (calls/s)",
      value: Number(base.toFixed(2)),
    },
    ratio: Number((live / base).toFixed(1)),
    goal: "≥ 20× a fresh jail per call",
    pass: live / base >= 20,
  });
}

// memory with N live python interpreters
{
  const n = Number(process.env.BENCH_LIVE_N ?? 256);
  const before = treeMemory();
  const rollouts = Array.from({ length: n }, () => ws());
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < rollouts.length) {
        const r = rollouts[next++];
        await runPython(r.file, r.dir, PY_OPEN, { timeoutMs: 120_000, warmPool: 4 });
      }
    }),
  );
  const live = interpreterStats().live;
  const m = treeMemory();
  const rssMb = (m.rss - before.rss) / 1024;
  const pssMb = (m.pss - before.pss) / 1024;
  log(
    `${live} live python interpreters: RSS ${rssMb.toFixed(0)} MB, PSS ${pssMb.toFixed(0)} MB (${m.procs} processes)`,
  );
  figures.push({
    id: "run_python.rss_per_live_mb",
    label: `RSS per live Python interpreter (workbook open), ${live} live, summed over their jails' processes`,
    value: Number((rssMb / live).toFixed(1)),
    unit: "MB",
    goal: "≤ 40 MB",
    pass: rssMb / live <= 40,
  });
  figures.push({
    id: "run_python.pss_per_live_mb",
    label: `PSS per live Python interpreter (shared pages split), ${live} live`,
    value: Number((pssMb / live).toFixed(1)),
    unit: "MB",
  });
  figures.push({
    id: "run_python.rss_total_live_mb",
    label: `RSS of ${live} live Python interpreters`,
    value: Math.round(rssMb),
    unit: "MB",
  });
  closeInterpreters();
}

rmSync(tmp, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ area: "excel-python", figures })}\n`);
process.exit(0);
