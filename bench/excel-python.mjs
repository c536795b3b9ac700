#!/usr/bin/env node
// bench-timeout-s: 300
/**
 * excel code sandboxes: run_python (native python3 + openpyxl in the jail) against run_code (Node + exceljs in the
 * same jail), measured in the same run. Cold start (the first call of a process), per-call time, memory per instance
 * (peak RSS of the sandboxed process), throughput with 1 and 8 calls at once (each call is a fresh jail: there is no
 * warm pool to reuse, so concurrency is the pooling question), and the jail's own cost against run_code without it.
 * Prints progress to stderr and one JSON line to stdout. Run `npx tsup` in envs/excel first.
 */
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixturesDir, jailAvailable, pythonAvailable, runCode, runPython } from "@benchmax/env-excel";

const log = (...a) => console.error("[bench:excel-python]", ...a);
const figures = [];
const now = () => performance.now();
const tmp = mkdtempSync(join(tmpdir(), "bench-excel-python-"));
const input = join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_input.xlsx");
function ws() {
  const dir = mkdtempSync(join(tmp, "ws-"));
  const file = join(dir, "workbook.xlsx");
  copyFileSync(input, file);
  return { dir, file };
}

const PY_EDIT =
  "import resource\nwb = openpyxl.load_workbook(workbook_path)\nws = wb.active\nws['B8'] = '=SUM(B2:B7)'\nwb.save(workbook_path)\nprint(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)";
const JS_EDIT =
  "workbook.worksheets[0].getCell('B8').value = { formula: 'SUM(B2:B7)' };\nconst p = workbook.constructor.constructor('return process')();\nconsole.log(p.resourceUsage().maxRSS);";

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function timeCalls(fn, count) {
  const times = [];
  let rss = 0;
  for (let i = 0; i < count; i++) {
    const { dir, file } = ws();
    const t0 = now();
    const r = await fn(file, dir);
    times.push(now() - t0);
    rss = Math.max(rss, Number(r.output.trim()) || 0);
  }
  return { ms: median(times), rssKb: rss };
}

async function throughput(fn, concurrency, total) {
  const t0 = now();
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) {
        next++;
        const { dir, file } = ws();
        await fn(file, dir);
      }
    }),
  );
  return (total / (now() - t0)) * 1000;
}

const jail = jailAvailable();
const py = pythonAvailable();
log(`jail: ${jail.ok ? "yes" : `no (${jail.reason})`}; run_python: ${py.ok ? py.reason : `no (${py.reason})`}`);

const js = (file, dir) => runCode(file, dir, JS_EDIT, { timeoutMs: 30_000 });
const jsNoJail = (file, dir) => runCode(file, dir, JS_EDIT, { timeoutMs: 30_000, jail: false });
const pyRun = (file, dir) => runPython(file, dir, PY_EDIT, { timeoutMs: 30_000 });

{
  const t0 = now();
  const { dir, file } = ws();
  await js(file, dir);
  figures.push({
    id: "run_code.cold_ms",
    label: "run_code first call of a process (bundle located or built)",
    value: Math.round(now() - t0),
    unit: "ms",
  });
}
const jsCall = await timeCalls(js, 8);
figures.push({
  id: "run_code.call_ms",
  label: "run_code per call (median, jail)",
  value: Math.round(jsCall.ms),
  unit: "ms",
});
figures.push({
  id: "run_code.rss_mb",
  label: "run_code peak RSS per instance",
  value: Math.round(jsCall.rssKb / 1024),
  unit: "MB",
});
if (jail.ok) {
  const bare = await timeCalls(jsNoJail, 8);
  figures.push({
    id: "run_code.jail_overhead",
    label: "run_code per call in the jail vs the permission model alone",
    value: Math.round(jsCall.ms),
    unit: "ms",
    baseline: { label: "run_code without the jail (median ms)", value: Math.round(bare.ms) },
    ratio: Number((jsCall.ms / bare.ms).toFixed(2)),
  });
}

if (py.ok) {
  {
    const t0 = now();
    const { dir, file } = ws();
    await pyRun(file, dir);
    figures.push({
      id: "run_python.cold_ms",
      label: "run_python first call of a process (interpreter probe included)",
      value: Math.round(now() - t0),
      unit: "ms",
    });
  }
  const pyCall = await timeCalls(pyRun, 8);
  figures.push({
    id: "run_python.call_ms",
    label: "run_python per call (median: jail + python3 + openpyxl load/edit/save)",
    value: Math.round(pyCall.ms),
    unit: "ms",
    baseline: { label: "run_code per call, same run (median ms)", value: Math.round(jsCall.ms) },
    ratio: Number((pyCall.ms / jsCall.ms).toFixed(2)),
    goal: "≤ 2× run_code",
    pass: pyCall.ms <= 2 * jsCall.ms,
  });
  figures.push({
    id: "run_python.rss_mb",
    label: "run_python peak RSS per instance",
    value: Math.round(pyCall.rssKb / 1024),
    unit: "MB",
  });
  const one = await throughput(pyRun, 1, 8);
  const eight = await throughput(pyRun, 8, 24);
  figures.push({
    id: "run_python.throughput_8",
    label: "run_python calls/s with 8 at once (fresh jail per call)",
    value: Number(eight.toFixed(2)),
    unit: "calls/s",
    baseline: { label: "one at a time (calls/s)", value: Number(one.toFixed(2)) },
    ratio: Number((eight / one).toFixed(2)),
  });
} else {
  log(`run_python figures skipped: ${py.reason}`);
}

rmSync(tmp, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ area: "excel-python", figures })}\n`);
