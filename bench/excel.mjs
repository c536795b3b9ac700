#!/usr/bin/env node
// bench-timeout-s: 900 (the LibreOffice baseline starts one soffice per file, 48 of them)
/**
 * excel env benchmark: rollouts held at once, init of a 100 KB workbook, fork vs init, scorer throughput against
 * the official-style Python scorer (openpyxl; $BENCHMAX_PYTHON or python3), with and without embedded recalculation,
 * and LibreOffice's cost per file where soffice exists. Prints progress to stderr and one JSON line to stdout.
 * Run `npx tsup` in envs/excel first.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import excel, {
  compareWorkbooks,
  corpusFidelity,
  findSoffice,
  LibreOfficeRecalc,
  pythonWithOpenpyxl,
  STRIPPED_BOOKS,
  strippedBook,
  XlsxValues,
} from "@benchmax/env-excel";

const log = (...a) => console.error("[bench:excel]", ...a);
const figures = [];
const now = () => performance.now();
const pkgDir = dirname(dirname(fileURLToPath(import.meta.resolve("@benchmax/env-excel"))));
const require = createRequire(join(pkgDir, "package.json"));
const ExcelJS = require("exceljs");
const tmp = mkdtempSync(join(tmpdir(), "bench-excel-"));

async function makeBigWorkbook(path, targetBytes = 100 * 1024) {
  let rows = 2500;
  for (let attempt = 0; attempt < 4; attempt++) {
    const wb = new ExcelJS.Workbook();
    const ws = wb.addWorksheet("Data");
    ws.addRow(["id", "name", "region", "amount", "date", "share"]);
    for (let i = 1; i <= rows; i++) {
      ws.addRow([
        i,
        `Customer ${i}`,
        ["North", "South", "East", "West"][i % 4],
        (i * 37.13) % 9973,
        new Date(Date.UTC(2024, i % 12, 1 + (i % 28))),
        (i % 100) / 100,
      ]);
    }
    ws.getCell(`H2`).value = { formula: `SUM(D2:D${rows + 1})` };
    const buf = Buffer.from(await wb.xlsx.writeBuffer());
    if (Math.abs(buf.length - targetBytes) < targetBytes * 0.15 || attempt === 3) {
      writeFileSync(path, buf);
      return { bytes: buf.length, rows };
    }
    rows = Math.round((rows * targetBytes) / buf.length);
  }
}

const env = excel.createEnv({});
const tasks = await env.capabilities.tasks.loadTasks();

// 1. rollouts held at once --------------------------------------------------------------------------------------
{
  const N = 256;
  const task = tasks.find((t) => t.id === "101");
  const rss0 = process.memoryUsage().rss;
  const t0 = now();
  const ids = Array.from({ length: N }, (_, i) => `held-${i}`);
  await Promise.all(ids.map((id) => env.init(id, task)));
  // every rollout opens its workbook and writes to it (distinct values), then we check isolation
  await Promise.all(ids.map((id, i) => env.runTool(id, { name: "write_cell", arguments: { cell: "C1", value: i } })));
  let isolated = 0;
  for (const [i, id] of ids.entries()) {
    const r = await env.runTool(id, { name: "read_range", arguments: { range: "C1" } });
    if (JSON.parse(r.content).values[0][0] === i) isolated++;
  }
  const ms = now() - t0;
  const rssMb = (process.memoryUsage().rss - rss0) / 1048576;
  log(
    `${N} rollouts initialised, written and read back in ${ms.toFixed(0)} ms; ${isolated} isolated; +${rssMb.toFixed(0)} MB RSS`,
  );
  await Promise.all(ids.map((id) => env.release(id)));
  figures.push({
    id: "excel.rollouts_held",
    label: "isolated excel rollouts held at once (each with its workbook open and written)",
    value: isolated,
    unit: "rollouts",
    goal: ">= 200",
    pass: isolated >= 200,
    note: `${N} held; +${rssMb.toFixed(0)} MB RSS; ${(ms / N).toFixed(2)} ms per rollout (init + write + read)`,
  });
}

// 2. init of a 100 KB workbook, 3. fork vs init ---------------------------------------------------------------------
const big = join(tmp, "big_input.xlsx");
const bigInfo = await makeBigWorkbook(big);
const bigGold = join(tmp, "big_answer.xlsx");
writeFileSync(bigGold, readFileSync(big));
log(`100 KB workbook: ${bigInfo.bytes} bytes, ${bigInfo.rows} rows`);
const bigTask = env.capabilities.tasks.parseTask(
  {
    id: "big",
    prompt: "x",
    ground_truth: { answer_position: `Data!A1:F${bigInfo.rows + 1}`, cases: [{ input: big, answer: bigGold }] },
  },
  join(tmp, "rows.jsonl:1"),
);
{
  const N = 200;
  for (let i = 0; i < 10; i++) {
    await env.init(`warm-${i}`, bigTask);
    await env.release(`warm-${i}`);
  }
  let total = 0;
  for (let i = 0; i < N; i++) {
    const t0 = now();
    await env.init(`init-${i}`, bigTask);
    total += now() - t0;
    await env.release(`init-${i}`);
  }
  const initMs = total / N;
  log(`init (private copy) of the ${bigInfo.bytes}-byte workbook: ${initMs.toFixed(3)} ms`);
  figures.push({
    id: "excel.init_ms",
    label: `init (private copy) of a ${Math.round(bigInfo.bytes / 1024)} KB workbook`,
    value: Number(initMs.toFixed(3)),
    unit: "ms",
    goal: "<= 10",
    pass: initMs <= 10,
  });

  const R = 15;
  let inits = 0;
  let forks = 0;
  for (let r = 0; r < R; r++) {
    let t0 = now();
    for (let i = 0; i < 16; i++) await env.init(`g-${r}-${i}`, bigTask);
    inits += now() - t0;
    for (let i = 0; i < 16; i++) await env.release(`g-${r}-${i}`);
    await env.init(`p-${r}`, bigTask);
    const kids = Array.from({ length: 16 }, (_, i) => `k-${r}-${i}`);
    t0 = now();
    await env.capabilities.fork.fork(`p-${r}`, kids);
    forks += now() - t0;
    for (const k of [`p-${r}`, ...kids]) await env.release(k);
  }
  const ratio = forks / inits;
  log(`fork to 16: ${(forks / R).toFixed(2)} ms vs 16 inits: ${(inits / R).toFixed(2)} ms (ratio ${ratio.toFixed(2)})`);
  figures.push({
    id: "excel.fork16_ms",
    label: "fork one rollout to a group of 16",
    value: Number((forks / R).toFixed(3)),
    unit: "ms",
    goal: "<= 0.25x of 16 inits",
    pass: ratio <= 0.25,
    baseline: { label: "16 inits", value: Number((inits / R).toFixed(3)) },
    ratio: Number(ratio.toFixed(3)),
    note: "children share one read-only snapshot of the parent workbook, copied into a private workspace on first need (copy-on-write)",
  });
}

// 4. scorer throughput ------------------------------------------------------------------------------------------
const jobs = [];
for (const t of tasks) {
  t.groundTruth.answers.forEach((gold, i) => {
    jobs.push({ gold, output: gold, answer_position: t.groundTruth.answerPosition });
    jobs.push({ gold, output: t.init.inputs[i], answer_position: t.groundTruth.answerPosition });
  });
}
jobs.push({ gold: bigGold, output: big, answer_position: `Data!A1:F${bigInfo.rows + 1}` });
const withFormulas = jobs.filter((j) => new XlsxValues(readFileSync(j.output)).hasFormulas()).length;
log(
  `scorer: ${jobs.length} compares (fixture answer/input pairs + the 100 KB workbook over all its cells); ${withFormulas} outputs hold formulas`,
);

// the same path as `benchmax score excel [--no-recalc]`: read both files, recalculate the output when it holds
// formulas (embedded engine), compare the answer-position cells
function ourPass(recalc) {
  return (async () => {
    const results = [];
    for (const [i, j] of jobs.entries()) {
      const c = { id: String(i), task: { answer_position: j.answer_position }, outputFile: j.output, goldFile: j.gold };
      results.push((await env.capabilities.scoring.scoreCase(c, { baseDir: "/", options: { recalc } })).reward === 1);
    }
    return results;
  })();
}

async function timeIt(fn, minMs = 1500) {
  await fn();
  let n = 0;
  const t0 = now();
  let res;
  do {
    res = await fn();
    n++;
  } while (now() - t0 < minMs);
  return { perPass: (now() - t0) / n, res };
}

// ours and Python alternate (3 rounds each) and the best round of each counts: the machine is shared, so
// interleaving keeps both sides under the same background load
const { python, available: havePy, reason: pyReason } = pythonWithOpenpyxl();
const script = join(pkgDir, "scripts", "py-compare.py");
const runPy = (repeat) =>
  JSON.parse(
    spawnSync(python, [script], {
      input: JSON.stringify({ mode: "compare", jobs, repeat }),
      encoding: "utf8",
      maxBuffer: 1 << 26,
    }).stdout,
  );
let oursPerSec = 0;
let oursRecalcPerSec = 0;
let pyPerSec = 0;
let ours;
let agree = true;
for (let round = 0; round < 3; round++) {
  ours = await timeIt(() => ourPass(false), 1000);
  oursPerSec = Math.max(oursPerSec, (jobs.length / ours.perPass) * 1000);
  const rc = await timeIt(() => ourPass(true), 1000);
  oursRecalcPerSec = Math.max(oursRecalcPerSec, (jobs.length / rc.perPass) * 1000);
  if (havePy) {
    const r = runPy(2);
    pyPerSec = Math.max(pyPerSec, (jobs.length * 2) / r.seconds);
    agree &&= r.results.every((p, i) => p === ours.res[i]);
  }
  log(
    `round ${round + 1}: ours ${oursPerSec.toFixed(0)} files/s (no recalc), ${oursRecalcPerSec.toFixed(0)} files/s (recalc)${havePy ? `; python ${pyPerSec.toFixed(0)} files/s` : ""}`,
  );
}
const pyNote = havePy
  ? `${pyReason}; ${agree ? "same verdicts on every file" : "VERDICTS DIFFER"}; best of 3 interleaved rounds`
  : `skipped the Python baseline: ${pyReason} (set BENCHMAX_PYTHON to a python with openpyxl)`;
if (!havePy) {
  pyPerSec = undefined;
  log(pyNote);
}
const withBase = (fig, v) =>
  pyPerSec
    ? {
        ...fig,
        baseline: { label: "official-style Python scorer (openpyxl data_only)", value: Number(pyPerSec.toFixed(1)) },
        ratio: Number((v / pyPerSec).toFixed(2)),
        pass: v / pyPerSec >= 3,
      }
    : fig;
figures.push(
  withBase(
    {
      id: "excel.score_per_s",
      label: "scorer throughput, cached values as stored (--no-recalc)",
      value: Number(oursPerSec.toFixed(1)),
      unit: "files/s",
      goal: ">= 3x official",
      note: pyNote,
    },
    oursPerSec,
  ),
);
figures.push(
  withBase(
    {
      id: "excel.score_recalc_per_s",
      label:
        "scorer throughput with embedded recalculation (outputs with formulas: compared cells and their dependencies evaluated from the XML)",
      value: Number(oursRecalcPerSec.toFixed(1)),
      unit: "files/s",
      goal: ">= 3x official",
      note: `${pyNote}; ${withFormulas} of ${jobs.length} outputs hold formulas and are recalculated`,
    },
    oursRecalcPerSec,
  ),
);

// 5. formula engine: fidelity, LibreOffice throughput, embedded vs LibreOffice, latency under 64 rollouts -------
const soffice = findSoffice();
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
// the stripped-values books as (gold, output) pairs: the output has no cached formula values, as a model's file
const positions = (book) => book.sheets.map((s) => `'${s.name}'!A1:Z40`).join(",");
const pairs = [];
// 16 rollouts × 3 test cases each (SpreadsheetBench tasks have 3), i.e. 48 files
for (let k = 0; k < 6; k++) {
  for (const b of STRIPPED_BOOKS)
    pairs.push({ gold: strippedBook(b, false), output: strippedBook(b, true), pos: positions(b) });
}
{
  const lo = soffice ? new LibreOfficeRecalc({ concurrency: 2 }) : undefined;
  const f = await corpusFidelity(lo);
  log(`fidelity: ${JSON.stringify(f)}`);
  figures.push({
    id: "excel.fidelity_formula_corpus",
    label: `formula corpus: embedded engine agrees with LibreOffice (${f.formulaCorpus.total} formulas)`,
    value: lo ? f.formulaCorpus.agree : null,
    unit: "cases",
    goal: "all",
    pass: lo ? f.formulaCorpus.agree === f.formulaCorpus.total : undefined,
    note: lo ? `${f.formulaCorpus.agree}/${f.formulaCorpus.total}` : "skipped: soffice not installed",
  });
  figures.push({
    id: "excel.fidelity_stripped",
    label: `stripped-values corpus: Excel's cached values reproduced after stripping (${f.stripped.total} cells)`,
    value: f.stripped.embedded,
    unit: "cells",
    goal: "all",
    pass: f.stripped.embedded === f.stripped.total,
    note: `embedded ${f.stripped.embedded}/${f.stripped.total}${f.stripped.libreoffice !== undefined ? `; LibreOffice ${f.stripped.libreoffice}/${f.stripped.total}` : ""}`,
  });
}
let loPathMs;
if (soffice) {
  // baseline: the official command, one soffice process per file (2 at a time, warm profiles), 16 rollouts at once
  const profiles = [0, 1].map((i) => join(tmp, `profile-${i}`));
  const perFile = async (buf, slot, i) => {
    const dir = join(tmp, `pf-${i}`);
    spawnSync("mkdir", ["-p", join(dir, "out")]);
    writeFileSync(join(dir, "in.xlsx"), buf);
    const r = spawnSync(
      soffice,
      [
        `-env:UserInstallation=file://${profiles[slot]}`,
        "--headless",
        "--calc",
        "--convert-to",
        "xlsx:Calc MS Excel 2007 XML",
        "--outdir",
        join(dir, "out"),
        join(dir, "in.xlsx"),
      ],
      { stdio: "ignore", timeout: 120_000 },
    );
    if (r.status !== 0) throw new Error(`soffice exited with ${r.status}`);
    return readFileSync(join(dir, "out", "in.xlsx"));
  };
  const runBaseline = async (files) => {
    const queue = files.map((b, i) => [b, i]);
    const workers = [0, 1].map(async (slot) => {
      for (let job = queue.shift(); job; job = queue.shift()) await perFile(job[0], slot, job[1]);
    });
    await Promise.all(workers);
  };
  await runBaseline(pairs.slice(0, 2).map((p) => p.output)); // warm both profiles
  let t0 = now();
  await runBaseline(pairs.map((p) => p.output));
  const baseMs = now() - t0;
  // the batched path runs each batch in its jail (no network, no host files, fresh profile) where the machine allows it
  const lo = new LibreOfficeRecalc({ concurrency: 2 });
  log(`LibreOffice jail: ${lo.jailed ? "on" : "OFF"} (${lo.jailReason})`);
  await Promise.all(pairs.slice(0, 2).map((p) => lo.recalc(p.output))); // warm
  const before = lo.processes;
  t0 = now();
  const outs = await Promise.all(pairs.map((p) => lo.recalc(p.output)));
  const loMs = now() - t0;
  const verdicts = outs.map((o, i) => compareWorkbooks(pairs[i].gold, o, pairs[i].pos).pass);
  loPathMs = now() - t0;
  const ratio = baseMs / loMs;
  log(
    `LibreOffice: ${pairs.length} files, per-file processes ${baseMs.toFixed(0)} ms vs batched ${loMs.toFixed(0)} ms (${lo.processes - before} processes), ratio ${ratio.toFixed(1)}`,
  );
  figures.push({
    id: "excel.libreoffice_throughput",
    label: `LibreOffice recalculation, 16 concurrent rollouts × 3 test cases (${pairs.length} files): batched soffice vs one process per file`,
    value: Number(((pairs.length / loMs) * 1000).toFixed(2)),
    unit: "files/s",
    baseline: {
      label: "official soffice --convert-to, one process per file",
      value: Number(((pairs.length / baseMs) * 1000).toFixed(2)),
    },
    ratio: Number(ratio.toFixed(2)),
    goal: ">= 10x",
    pass: ratio >= 10,
    note: `${lo.processes - before} soffice processes for ${pairs.length} files; ${verdicts.filter(Boolean).length}/${pairs.length} pass after LibreOffice; jail ${lo.jailed ? "on" : `off: ${lo.jailReason}`}`,
  });
  // a conversion that stalls (a workbook LibreOffice needs minutes for) is cut at its limit, whole tree included
  const limitMs = 10_000;
  const stall = new LibreOfficeRecalc({ concurrency: 1, timeoutMs: limitMs });
  // (the profile template was made by the batched run above: one per process)
  const swb = new ExcelJS.Workbook();
  const sws = swb.addWorksheet("Sheet1");
  for (let r = 1; r <= 20_000; r++) sws.getCell(`A${r}`).value = { formula: `SUMPRODUCT(ROW($C$1:$C$1000000)*${r})` };
  const slow = Buffer.from(await swb.xlsx.writeBuffer());
  t0 = now();
  const cut = await stall.recalc(slow).then(
    () => null,
    (e) => e,
  );
  const cutMs = now() - t0;
  // resolved only once every holder of the jail's stderr (soffice.bin included) has exited
  const gone = stall.running.size === 0;
  log(`LibreOffice stall: cut after ${cutMs.toFixed(0)} ms (limit ${limitMs} ms): ${cut?.message}; tree gone: ${gone}`);
  figures.push({
    id: "excel.libreoffice_stall_cut",
    label: `a stalled LibreOffice conversion is cut at its limit (${limitMs} ms), soffice.bin and all under it`,
    value: Math.round(cutMs),
    unit: "ms",
    goal: `<= ${limitMs + 2000} ms`,
    pass: Boolean(cut) && gone && cutMs <= limitMs + 2000,
    note: `${cut ? cut.message : "not cut"}; jail ${stall.jailed ? "on" : "off"}`,
  });
} else {
  figures.push({
    id: "excel.libreoffice_throughput",
    label: "LibreOffice recalculation throughput",
    value: null,
    unit: "files/s",
    note: "skipped: soffice (LibreOffice) is not installed",
  });
}
{
  // embedded recalculation + compare of the same pairs, against the LibreOffice path (recalc + compare)
  let best = Infinity;
  let passed = 0;
  for (let round = 0; round < 5; round++) {
    const t0 = now();
    passed = pairs.filter((p) => compareWorkbooks(p.gold, p.output, p.pos, { recalcOutput: true }).pass).length;
    best = Math.min(best, now() - t0);
  }
  const ratio = loPathMs ? loPathMs / best : undefined;
  log(
    `embedded recalc+compare: ${pairs.length} files in ${best.toFixed(1)} ms (${passed} pass)${ratio ? `, ${ratio.toFixed(0)}x the LibreOffice path` : ""}`,
  );
  figures.push({
    id: "excel.embedded_vs_libreoffice",
    label: `embedded recalculation + compare vs the LibreOffice path (${pairs.length} files)`,
    value: Number(((pairs.length / best) * 1000).toFixed(1)),
    unit: "files/s",
    ...(loPathMs
      ? {
          baseline: {
            label: "batched LibreOffice recalc + compare",
            value: Number(((pairs.length / loPathMs) * 1000).toFixed(2)),
          },
          ratio: Number(ratio.toFixed(1)),
          pass: ratio >= 20,
        }
      : { note: "no LibreOffice baseline: soffice not installed" }),
    goal: ">= 20x",
  });
}
{
  // reward latency: 64 concurrent rollouts score at once; one of them has a 40 000-formula workbook
  const heavyRows = 40_000;
  const hwb = new ExcelJS.Workbook();
  const hws = hwb.addWorksheet("Sheet1");
  for (let r = 1; r <= heavyRows; r++) {
    hws.getCell(`A${r}`).value = r;
    hws.getCell(`B${r}`).value = { formula: r === 1 ? "A1" : `B${r - 1}+A${r}` };
  }
  const heavy = {
    gold: pairs[0].gold,
    output: Buffer.from(await hwb.xlsx.writeBuffer()),
    pos: `'Sheet1'!B${heavyRows}`,
  };
  const casesDir = join(tmp, "lat");
  spawnSync("mkdir", ["-p", casesDir]);
  const jobsL = [];
  for (let i = 0; i < 64; i++) {
    const p = i === 0 ? heavy : pairs[i % pairs.length];
    writeFileSync(join(casesDir, `g${i}.xlsx`), p.gold);
    writeFileSync(join(casesDir, `o${i}.xlsx`), p.output);
    jobsL.push({
      id: `l${i}`,
      task: { answer_position: p.pos },
      goldFile: join(casesDir, `g${i}.xlsx`),
      outputFile: join(casesDir, `o${i}.xlsx`),
    });
  }
  // warm the compare workers (a running scorer has them started)
  await Promise.all(
    jobsL.slice(1, 17).map((c) => env.capabilities.scoring.scoreCase(c, { baseDir: "/", options: { recalc: true } })),
  );
  const lat = [];
  const t0 = now();
  await Promise.all(
    jobsL.map(async (c) => {
      const s = now();
      await env.capabilities.scoring.scoreCase(c, { baseDir: "/", options: { recalc: true } });
      if (c.id !== "l0") lat.push(now() - s);
    }),
  );
  const wall = now() - t0;
  const p50 = pct(lat, 50);
  const p99 = pct(lat, 99);
  log(
    `reward latency, 64 concurrent (one 40k-formula workbook): p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms, all done in ${wall.toFixed(0)} ms`,
  );
  figures.push({
    id: "excel.reward_latency_p50",
    label:
      "reward latency p50, 64 concurrent rollouts (one has a 40 000-formula workbook; compares run on worker threads)",
    value: Number(p50.toFixed(1)),
    unit: "ms",
  });
  figures.push({
    id: "excel.reward_latency_p99",
    label: "reward latency p99, 64 concurrent rollouts (one has a 40 000-formula workbook)",
    value: Number(p99.toFixed(1)),
    unit: "ms",
    note: `all 64 done in ${wall.toFixed(0)} ms`,
  });
}

await env.close();
rmSync(tmp, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ area: "excel", figures })}\n`);
