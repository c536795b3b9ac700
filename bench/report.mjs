#!/usr/bin/env node
// bench-timeout-s: 300
// Report benchmarks (issue 13): a 20,000-rollout run's report — page size, write time, and time to render in
// Chromium (navigation start → charts drawn, the first table page built, and that frame painted), against a 50-rollout report rendered in
// the same browser in the same run; plus opening one transcript from its sidecar chunk over file://.
// Prints one JSON line on stdout (bench/README.md). Needs Chromium (/usr/bin/chromium or BENCHMAX_CHROMIUM) for the
// render figures; without it only the size and write figures are reported, and stderr says why.
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { readResults, seededRandom as rng, summarize } from "@benchmax/core";
import { writeReportFiles } from "@benchmax/report";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const log = (...a) => console.error("[report]", ...a);
const figures = [];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const CHROMIUM = process.env.BENCHMAX_CHROMIUM ?? "/usr/bin/chromium";

const SYSTEM =
  "You are a careful research assistant. Answer with the tools; put the final answer in <answer></answer>.\n\n# Tools\n" +
  "search(query: string) — full-text search; returns titles and snippets.\nopen_page(title: string) — one page's text.";

/** A rollout as core's runner writes it: OpenAI-shaped messages, tool calls and results, mixed outcomes. */
function rollout(i, group) {
  const r = rng(1_000_003 + i);
  const taskN = Math.floor(i / group);
  const taskId = `q${taskN}`;
  const u = r();
  const outcome = u < 0.86 ? "completed" : u < 0.93 ? "truncated" : u < 0.97 ? "env_error" : "infra_error";
  const calls = outcome === "infra_error" ? 0 : 1 + Math.floor(r() * 3);
  const messages = [
    { role: "system", content: SYSTEM },
    { role: "user", content: `Question ${taskN}: which river flows through city ${taskN % 97} and how long is it?` },
  ];
  for (let k = 0; k < calls; k++) {
    const id = `call_${i}_${k}`;
    const name = k === 0 ? "search" : "open_page";
    const args = k === 0 ? { query: `river city ${taskN % 97}` } : { title: `River ${taskN % 31}` };
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(args) } }],
    });
    messages.push({
      role: "tool",
      tool_call_id: id,
      name,
      content: `River ${taskN % 31} is ${100 + (taskN % 900)} km long. `.repeat(k === 0 ? 2 : 6),
    });
  }
  const right = r() < 0.7;
  if (outcome === "completed" || outcome === "truncated") {
    messages.push({
      role: "assistant",
      content: `River ${taskN % 31}. <answer>${right ? 100 + (taskN % 900) : 42} km</answer>`,
    });
  }
  const base = {
    taskId,
    rolloutId: `${taskId}#${i % group}`,
    groupId: taskId,
    sample: i % group,
    attempt: 0,
    turns: calls + 1,
    toolCalls: calls,
    toolErrors: 0,
    durationMs: Math.round(200 + r() * 5000),
    messages,
  };
  if (outcome === "env_error") return { ...base, outcome, error: "reward failed: component f1 is NaN" };
  if (outcome === "infra_error")
    return { ...base, outcome, turns: 0, error: "policy endpoint answered 503 (3 attempts)" };
  const f1 = right ? 1 : Math.round(r() * 100) / 100;
  return { ...base, outcome, rewards: { exact_match: right ? 1 : 0, f1 }, reward: 0.7 * (right ? 1 : 0) + 0.3 * f1 };
}

function writeRun(dir, n, group = 4) {
  mkdirSync(dir, { recursive: true });
  const fd = openSync(join(dir, "results.jsonl"), "w");
  const light = [];
  for (let i = 0; i < n; i++) {
    const res = rollout(i, group);
    writeSync(fd, `${JSON.stringify(res)}\n`);
    light.push({ ...res, messages: [] });
  }
  closeSync(fd);
  writeFileSync(
    join(dir, "summary.json"),
    JSON.stringify(summarize(light, { env: "wiki-synthetic", policy: "synthetic" })),
  );
}

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), "bmx-bench-report-"));
  try {
    const big = join(tmp, "run-20k");
    const small = join(tmp, "run-50");
    writeRun(big, 20_000);
    writeRun(small, 50, 2);

    // write: the whole report (read, index, transcripts, page) vs only reading results.jsonl
    const t1 = performance.now();
    const w = await writeReportFiles(big);
    const writeMs = performance.now() - t1;
    const writeRssMB = Math.round(process.resourceUsage().maxRSS / 1024); // before anything else loads the run
    const t0 = performance.now();
    readResults(join(big, "results.jsonl"));
    const readMs = performance.now() - t0;
    await writeReportFiles(small);
    const sidecarBytes = w.transcriptFiles.reduce((a, f) => a + statSync(f).size, 0);
    const resultsMB = statSync(join(big, "results.jsonl")).size / 2 ** 20;
    const mb = w.bytes / 2 ** 20;
    log(
      `20k: report.html ${mb.toFixed(2)} MB, ${w.transcriptFiles.length} chunks (${(sidecarBytes / 2 ** 20).toFixed(1)} MB), written in ${writeMs.toFixed(0)} ms`,
    );
    figures.push({
      id: "report.html_mb_20k",
      label: "report.html size at 20,000 rollouts (transcripts in sidecar chunks)",
      value: +mb.toFixed(2),
      unit: "MB",
      goal: "<= 5",
      pass: mb <= 5,
      baseline: { label: "results.jsonl of the run", value: +resultsMB.toFixed(1) },
      ratio: +(mb / resultsMB).toFixed(3),
      note: `${w.transcriptFiles.length} transcript chunks, ${(sidecarBytes / 2 ** 20).toFixed(1)} MB beside the page`,
    });
    figures.push({
      id: "report.write_20k_ms",
      label: "writeReport on a 20,000-rollout run dir (read, index, transcripts, page)",
      value: Math.round(writeMs),
      unit: "ms",
      baseline: { label: "readResults of its results.jsonl alone", value: Math.round(readMs) },
      ratio: +(writeMs / readMs).toFixed(2),
      note: `peak RSS of the process through writeReport ${writeRssMB} MB (run generation included)`,
    });

    if (!existsSync(CHROMIUM)) {
      log(`render figures skipped: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set BENCHMAX_CHROMIUM)`);
      return;
    }
    const require = createRequire(join(root, "packages/report/package.json"));
    const { chromium } = require("playwright-core");
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ["--no-sandbox", "--disable-background-networking", "--disable-gpu", "--no-first-run"],
    });
    try {
      // time from navigation start to the first frame painted after the page script finished, fresh page each time
      const render = async (file, runs) => {
        const times = [];
        for (let k = 0; k < runs; k++) {
          const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
          const errors = [];
          page.on("pageerror", (e) => errors.push(e.message));
          await page.goto(pathToFileURL(file).href);
          await page.waitForFunction(() => typeof globalThis.benchmaxPaintedMs === "number", null, { timeout: 60_000 });
          if (errors.length) throw new Error(`page errors in ${file}: ${errors.join("; ")}`);
          times.push(await page.evaluate(() => globalThis.benchmaxPaintedMs));
          if (k < runs - 1) await page.close();
          else return { times, page };
        }
      };
      await render(join(small, "report.html"), 2); // warm the browser
      const s = await render(join(small, "report.html"), 5);
      await s.page.close();
      const b = await render(w.path, 5);
      const smallMs = median(s.times);
      const bigMs = median(b.times);
      log(
        `render: 50 rollouts ${smallMs.toFixed(0)} ms, 20,000 rollouts ${bigMs.toFixed(0)} ms (runs ${b.times.map((x) => x.toFixed(0)).join(", ")})`,
      );
      figures.push({
        id: "report.render_20k_ms",
        label:
          "20,000-rollout report rendered in Chromium (navigation → charts, first table page, painted), median of 5",
        value: Math.round(bigMs),
        unit: "ms",
        goal: "<= 3000",
        pass: bigMs <= 3000,
        baseline: { label: "50-rollout report, same browser", value: Math.round(smallMs) },
        ratio: +(bigMs / smallMs).toFixed(2),
      });

      // opening transcripts: click a row → conversation shown, each from a chunk not loaded before (file://)
      const page = b.page;
      const opens = [];
      for (const task of ["q1234", "q2500", "q3777", "q4999", "q17"]) {
        await page.fill("#filter-task", task);
        const id = `${task}#1`;
        const t = performance.now();
        await page.click(`#rollout-table tr[data-rollout="${id}"]`);
        await page.waitForSelector(`#viewer[data-rollout="${id}"][data-state=ready]`, { timeout: 30_000 });
        opens.push(performance.now() - t);
      }
      const openMs = median(opens);
      log(`transcript open: ${opens.map((x) => x.toFixed(0)).join(", ")} ms`);
      figures.push({
        id: "report.open_transcript_20k_ms",
        label: "click a rollout → its transcript shown, chunk loaded from file:// on demand, median of 5",
        value: Math.round(openMs),
        unit: "ms",
        baseline: { label: "render of the 50-rollout report", value: Math.round(smallMs) },
        ratio: +(openMs / smallMs).toFixed(2),
      });
    } finally {
      await browser.close();
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
process.stdout.write(`${JSON.stringify({ area: "report", figures })}\n`);
