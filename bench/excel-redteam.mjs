#!/usr/bin/env node
/**
 * excel red team vs the event loop (issue 23): the env's event-loop delay (perf_hooks monitorEventLoopDelay) while
 * victim rollouts (the reference policy) run beside the red-team cases a model can send through the tools — a
 * SUMPRODUCT over A2:XFC1048575 written to XFD1, answers with FOOBAR/CELL, a 10,000-call reply, and (where the
 * run_python jail works) a non-zip, a DTD, a zip bomb and a 1.1M-shared-string workbook written by run_python, then
 * read — and a million-formula chain scored through `score`. The baseline is the same victims alone, same run.
 * Goal: max delay under 50 ms during the red team. Run `npx tsup` in packages/core and envs/excel first.
 * `BENCH_REDTEAM_CASES=dtd,zip` runs only the cases whose name holds one of those words (case-insensitive); the
 * baseline always runs; `BENCH_REDTEAM_VICTIMS=0` runs the cases alone (for a CPU profile). Prints progress to stderr and one JSON line to stdout.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { Worker } from "node:worker_threads";
import { runRollout } from "@benchmax/core";
import excel, { pythonAvailable, rawSheetXlsx } from "@benchmax/env-excel";

const log = (...a) => console.error("[bench:excel-redteam]", ...a);
const figures = [];
const py = pythonAvailable();
if (!py.ok) log(`run_python cases skipped: ${py.reason}`);
const env = excel.createEnv({ tools: py.ok ? "all" : "structured,js", runPythonTimeoutMs: 60_000 });
const task = (await env.capabilities.tasks.loadTasks()).find((t) => t.id === "101");
const tmp = mkdtempSync(join(tmpdir(), "bench-excel-redteam-"));
const only = (process.env.BENCH_REDTEAM_CASES ?? "")
  .split(",")
  .map((w) => w.trim().toLowerCase())
  .filter(Boolean);
const picked = (name) => !only.length || only.some((w) => name.toLowerCase().includes(w));

const calls = (...cs) => ({
  role: "assistant",
  content: null,
  tool_calls: cs.map(([name, args], i) => ({
    id: `c${i}`,
    type: "function",
    function: { name, arguments: JSON.stringify(args) },
  })),
});
const scripted = (replies) => {
  let i = 0;
  return { name: "red", act: async () => ({ message: replies[i++] ?? { role: "assistant", content: "done" } }) };
};

/** Victims: reference-policy rollouts in a loop until `stop`; counts how many scored 1. */
function victims(n, stop) {
  const stats = { runs: 0, ok: 0, errors: [] };
  const one = async () => {
    while (!stop.done) {
      const r = await runRollout(env, task, env.capabilities.reference.referencePolicy(), { maxTurns: 6 });
      stats.runs++;
      if (r.reward === 1) stats.ok++;
      else stats.errors.push(r.error ?? JSON.stringify(r.rewards));
    }
  };
  return { stats, done: Promise.all(Array.from({ length: n }, one)) };
}

/**
 * The main thread's own CPU time (/proc/self/task/<pid>/schedstat: nanoseconds on a CPU; where that file is missing,
 * utime + stime of .../stat in 10 ms clock ticks) between two turns of a 5 ms timer: the longest stretch the event
 * loop was busy with work, which — unlike the event-loop delay — does not grow when a loaded machine leaves the
 * thread waiting for a core.
 */
const turnLog = Number(process.env.BENCH_REDTEAM_TURNS ?? 0);
function mainThreadSampler() {
  const dir = `/proc/self/task/${process.pid}`;
  const ns = () => {
    try {
      return Number(readFileSync(`${dir}/schedstat`, "latin1").split(" ")[0]) / 1e6;
    } catch {
      return Number.NaN;
    }
  };
  const ticks = () => {
    try {
      const f = readFileSync(`${dir}/stat`, "latin1");
      const rest = f.slice(f.lastIndexOf(")") + 2).split(" ");
      return (Number(rest[11]) + Number(rest[12])) * 10; // fields 14 and 15: utime, stime
    } catch {
      return Number.NaN;
    }
  };
  const cpuMs = Number.isFinite(ns()) ? ns : ticks;
  let last = cpuMs();
  let lastAt = process.hrtime.bigint() / 1000n;
  let max = 0;
  const t = setInterval(() => {
    const now = cpuMs();
    const at = process.hrtime.bigint() / 1000n;
    if (now - last > max) max = now - last;
    // BENCH_REDTEAM_TURNS=<ms>: print each turn busier than that, as monotonic µs (a --cpu-prof's clock)
    if (turnLog && now - last > turnLog) log(`busy turn ${(now - last).toFixed(1)} ms cpu, µs ${lastAt}..${at}`);
    last = now;
    lastAt = at;
  }, 5);
  return {
    stop: () => {
      clearInterval(t);
      return Number(max.toFixed(1));
    },
  };
}

async function measure(label, work) {
  const cpu = mainThreadSampler();
  const h = monitorEventLoopDelay({ resolution: 5 });
  const stop = { done: false };
  const v = victims(Number(process.env.BENCH_REDTEAM_VICTIMS ?? 4), stop);
  h.enable();
  const t0 = performance.now();
  await work();
  stop.done = true;
  await v.done;
  h.disable();
  const busyMax = cpu.stop();
  const ms = (x) => Number((x / 1e6).toFixed(1));
  const out = {
    label,
    busyMax,
    max: ms(h.max),
    p99: ms(h.percentile(99)),
    mean: ms(h.mean),
    wallMs: Math.round(performance.now() - t0),
    victims: v.stats,
  };
  log(
    `${label}: event-loop delay max ${out.max} ms, p99 ${out.p99} ms; main-thread CPU per loop turn max ${busyMax} ms; victims ${v.stats.ok}/${v.stats.runs} scored 1`,
  );
  return out;
}

const pyCases = [
  ["non-zip", "open(workbook_path, 'wb').write(b'junk')"],
  [
    "dtd",
    "import zipfile\nsrc = zipfile.ZipFile(workbook_path); p = {n: src.read(n) for n in src.namelist()}; src.close()\np['xl/workbook.xml'] = p['xl/workbook.xml'].replace(b'?>', b'?><!DOCTYPE w [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>', 1)\nz = zipfile.ZipFile(workbook_path, 'w', zipfile.ZIP_DEFLATED)\n[z.writestr(n, d) for n, d in p.items()]; z.close()",
  ],
  [
    "zip bomb",
    "import zipfile\nsrc = zipfile.ZipFile(workbook_path); p = {n: src.read(n) for n in src.namelist()}; src.close()\nz = zipfile.ZipFile(workbook_path, 'w', zipfile.ZIP_DEFLATED, compresslevel=1)\n[z.writestr(n, d) for n, d in p.items()]\nc = b' ' * 1048576\nfor i in range(3):\n    with z.open(f'xl/bomb{i}.xml', 'w') as f:\n        for _ in range(100): f.write(c)\nz.close()",
  ],
  [
    "huge shared strings",
    "import zipfile\nsrc = zipfile.ZipFile(workbook_path); p = {n: src.read(n) for n in src.namelist()}; src.close()\nn = 1100000\np['xl/sharedStrings.xml'] = (f'<sst xmlns=\"http://schemas.openxmlformats.org/spreadsheetml/2006/main\" count=\"{n}\" uniqueCount=\"{n}\">' + '<si><t>x</t></si>' * n + '</sst>').encode()\nz = zipfile.ZipFile(workbook_path, 'w', zipfile.ZIP_DEFLATED)\n[z.writestr(k, d) for k, d in p.items()]; z.close()",
  ],
];

/** The million-formula chain's output file, written by a worker thread (its strings stay out of this heap). */
async function buildChain(file) {
  const src = `const { rawSheetXlsx } = await import(${JSON.stringify(import.meta.resolve("@benchmax/env-excel"))}); const { writeFileSync } = await import("node:fs");
const { workerData } = await import("node:worker_threads");
const cells = ['<c r="A1"><v>1</v></c>'];
for (let r = 2; r <= 1_000_000; r++) cells.push(\`<c r="A\${r}"><f>A\${r - 1}+1</f></c>\`);
writeFileSync(workerData, rawSheetXlsx(cells));`;
  const w = new Worker(new URL(`data:text/javascript,${encodeURIComponent(src)}`), { workerData: file });
  await new Promise((resolve, reject) => {
    w.on("error", reject);
    w.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`chain builder exited ${code}`))));
  });
}

/** The red-team cases, each a function run beside the victims; outcomes are collected by name. */
function redTeamCases(outcomes) {
  const rollout = (name, replies) => async () => {
    const r = await runRollout(env, task, scripted(replies), { maxTurns: 4 });
    outcomes[name] = `${r.outcome} reward=${r.reward}`;
  };
  // the chain's output is built before any measurement, on a worker thread (buildChain): its million strings never
  // sit in (nor are collected from) the heap whose event loop is measured
  writeFileSync(join(tmp, "gold.xlsx"), rawSheetXlsx(['<c r="A1000000"><v>1000000</v></c>']));
  const cases = [
    [
      "xfd1 sumproduct",
      rollout("xfd1 sumproduct", [calls(["write_cell", { cell: "XFD1", value: "=SUMPRODUCT(A2:XFC1048575)" }])]),
    ],
    ["foobar answer", rollout("foobar answer", [calls(["write_cell", { cell: "B8", value: "=FOOBAR(B2:B7)" }])])],
    [
      "10,000-call reply",
      rollout("10,000-call reply", [
        calls(...Array.from({ length: 10_000 }, (_, i) => ["write_cell", { cell: `D${(i % 50) + 1}`, value: i }])),
      ]),
    ],
    ...(py.ok
      ? pyCases.map(([n, code]) => [
          n,
          rollout(n, [calls(["run_python", { code }]), calls(["read_range", { range: "A1:B8" }])]),
        ])
      : []),
    [
      "million-formula chain (score)",
      async () => {
        const s = await env.capabilities.scoring.scoreCase(
          { id: "chain", task: { answer_position: "A1000000" }, goldFile: "gold.xlsx", outputFile: "out.xlsx" },
          { baseDir: tmp, options: {} },
        );
        outcomes["million-formula chain (score)"] = `reward=${s.reward} ${String(s.metadata?.message).slice(0, 90)}`;
      },
    ],
  ];
  return cases.filter(([name]) => picked(name));
}

if (picked("million-formula chain (score)")) await buildChain(join(tmp, "out.xlsx"));
const base = await measure("victims alone", () => new Promise((r) => setTimeout(r, 5_000)));
const outcomes = {};
const perCase = [];
for (const [name, run] of redTeamCases(outcomes)) perCase.push(await measure(name, run));
const worst = perCase.reduce((a, b) => (b.max > a.max ? b : a));
const busiest = perCase.reduce((a, b) => (b.busyMax > a.busyMax ? b : a));
const runs = perCase.reduce((a, c) => a + c.victims.runs, 0);
const ok = perCase.reduce((a, c) => a + c.victims.ok, 0);
figures.push({
  id: "excel_redteam.event_loop_max",
  label: "event-loop delay, max over the red-team cases (each run beside 4 victim rollout loops, in-process env)",
  value: worst.max,
  unit: "ms",
  goal: "< 50",
  baseline: { label: "victims alone, max", value: base.max },
  note: `worst: ${worst.label}; per case max/p99 ms: ${perCase.map((c) => `${c.label} ${c.max}/${c.p99}`).join(", ")}; victims alone p99 ${base.p99} ms; outcomes ${JSON.stringify(outcomes)}`,
});
figures.push({
  id: "excel_redteam.main_thread_busy_max",
  label:
    "longest main-thread CPU stretch between two 5 ms timer turns, over the red-team cases (/proc task schedstat; load-independent)",
  value: busiest.busyMax,
  unit: "ms",
  goal: "< 50",
  baseline: { label: "victims alone", value: base.busyMax },
  note: `worst: ${busiest.label}; per case: ${perCase.map((c) => `${c.label} ${c.busyMax}`).join(", ")}; load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}`,
});
figures.push({
  id: "excel_redteam.victims_ok",
  label: "victim rollouts that scored 1 while the red-team cases ran (of those run)",
  value: runs ? Number((ok / runs).toFixed(3)) : 0,
  unit: "fraction",
  goal: ">= 1",
  note: `${ok}/${runs}; ${perCase
    .flatMap((c) => c.victims.errors)
    .slice(0, 3)
    .join(" | ")}`,
});
await env.close();
rmSync(tmp, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ area: "excel-redteam", figures })}\n`);
