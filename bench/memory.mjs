#!/usr/bin/env node
// bench-timeout-s: 900
// Memory benchmark (issue 13): RSS of one process running 1,000,000 reference-style rollouts through `runMany`
// (a trivial in-process env, a scripted policy that calls a tool then answers, every result appended to a temp
// results.jsonl). RSS is sampled after a GC at 10k, 100k, 200k … 1M rollouts; the slope per 100k comes from a
// least-squares fit over 100k…1M. Bounded memory means a flat slope. Prints one JSON line on stdout (bench/README.md).
// BENCH_MEMORY_ROLLOUTS overrides the 1M (a smaller run for a quick look).
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defineEnv, runMany, scriptedPolicy, tool } from "@benchmax/core";
import { z } from "zod";

const log = (...a) => console.error("[memory]", ...a);
const TOTAL = Number(process.env.BENCH_MEMORY_ROLLOUTS ?? 1_000_000);
const TASKS = 1000;
const G = Math.max(1, Math.round(TOTAL / TASKS));
const MB = 2 ** 20;

const env = defineEnv({
  name: "mem",
  systemPrompt: "Add the numbers with the tool, then answer in <answer> tags.",
  tools: [
    tool({
      name: "add",
      description: "a + b",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => String(a + b),
    }),
  ],
  reward: ({ completion, task }) => ({ correct: completion.includes(`<answer>${task.groundTruth}</answer>`) ? 1 : 0 }),
  rewardWeights: { correct: 1 },
});
const tasks = Array.from({ length: TASKS }, (_, i) => ({
  id: `m${i}`,
  prompt: `${i} + 1`,
  groundTruth: String(i + 1),
}));
const policy = scriptedPolicy("reference", ({ turn, task, messages }) => {
  if (turn === 0) return { calls: [{ name: "add", arguments: { a: Number(task.id.slice(1)), b: 1 } }] };
  return { answer: `<answer>${messages[messages.length - 1].content}</answer>` };
});

function rssNow() {
  global.gc?.();
  global.gc?.();
  return process.memoryUsage().rss;
}

const dir = mkdtempSync(join(tmpdir(), "bmx-mem-"));
const resultsPath = join(dir, "results.jsonl");
const checkpoints = new Set([10_000, ...Array.from({ length: 10 }, (_, i) => (i + 1) * 100_000)]);
const samples = [];
const rss0 = rssNow();
const t0 = performance.now();
let run;
try {
  run = await runMany(env, tasks, policy, {
    group: G,
    concurrency: 32,
    toolFormat: "hermes",
    resultsPath,
    onEvent: (e) => {
      if (e.type !== "rollout" || !checkpoints.has(e.done)) return;
      const rss = rssNow();
      samples.push({ n: e.done, rss });
      log(
        `${e.done.toLocaleString("en")} rollouts: RSS ${(rss / MB).toFixed(1)} MB, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
      );
    },
  });
} finally {
  const size = (() => {
    try {
      return statSync(resultsPath).size;
    } catch {
      return 0;
    }
  })();
  log(`results file ${(size / MB).toFixed(0)} MB`);
  rmSync(dir, { recursive: true, force: true });
}
const secs = (performance.now() - t0) / 1000;
const agg = run.aggregate;

// same-run baseline: the old way, every result held in memory (keepResults), over 100k rollouts
const slopeOf = (pts) => {
  if (pts.length < 2) return 0;
  const mx = pts.reduce((a, s) => a + s.n, 0) / pts.length;
  const my = pts.reduce((a, s) => a + s.rss, 0) / pts.length;
  const num = pts.reduce((a, s) => a + (s.n - mx) * (s.rss - my), 0);
  const den = pts.reduce((a, s) => a + (s.n - mx) ** 2, 0);
  return (num / den) * 100_000;
};
const keptPts = [];
{
  const KEPT = Math.min(100_000, TOTAL);
  const keptDir = mkdtempSync(join(tmpdir(), "bmx-mem-kept-"));
  try {
    const kept = await runMany(env, tasks, policy, {
      group: Math.max(1, Math.round(KEPT / TASKS)),
      concurrency: 32,
      resultsPath: join(keptDir, "results.jsonl"),
      keepResults: true,
      onEvent: (e) => {
        if (e.type === "rollout" && e.done % 20_000 === 0) keptPts.push({ n: e.done, rss: rssNow() });
      },
    });
    log(
      `baseline (results kept in memory): ${kept.results.length} results, ${keptPts.map((p) => `${p.n / 1000}k=${(p.rss / MB).toFixed(0)}`).join(", ")} MB`,
    );
  } finally {
    rmSync(keptDir, { recursive: true, force: true });
  }
}
const keptSlope = slopeOf(keptPts);
const at = (n) => samples.find((s) => s.n === n)?.rss;
const fit = samples.filter((s) => s.n >= 100_000);
const slope = slopeOf(fit);
const r10k = at(10_000);
const last = samples[samples.length - 1];
const ok = agg.n === TASKS * G && agg.outcomes.completed === agg.n;
const figures = [];
if (r10k !== undefined) {
  figures.push({
    id: "memory.rss_10k_mb",
    label: "RSS after 10,000 reference-style rollouts streamed to results.jsonl",
    value: +(r10k / MB).toFixed(1),
    unit: "MB",
    baseline: { label: "RSS before the run", value: +(rss0 / MB).toFixed(1) },
    ratio: +(r10k / rss0).toFixed(2),
  });
}
if (last && r10k !== undefined) {
  figures.push({
    id: "memory.rss_1m_mb",
    label: `RSS after ${last.n.toLocaleString("en")} reference-style rollouts streamed to results.jsonl`,
    value: +(last.rss / MB).toFixed(1),
    unit: "MB",
    goal: "bounded (≤ 1.5 × RSS at 10k)",
    pass: last.rss <= 1.5 * r10k && ok,
    baseline: { label: "RSS after 10,000 rollouts", value: +(r10k / MB).toFixed(1) },
    ratio: +(last.rss / r10k).toFixed(2),
    note: `${agg.n.toLocaleString("en")} rollouts (${agg.outcomes.completed} completed) in ${secs.toFixed(0)} s; ${TASKS} tasks × group ${G}`,
  });
}
if (fit.length >= 2) {
  figures.push({
    id: "memory.rss_slope_mb_per_100k",
    label: "RSS growth per 100,000 rollouts (least squares over 100k…1M)",
    value: +(slope / MB).toFixed(2),
    unit: "MB / 100k",
    goal: "<= 1 (flat)",
    pass: slope / MB <= 1 && ok,
    baseline: {
      label: "same env, every result kept in memory (keepResults), MB / 100k",
      value: +(keptSlope / MB).toFixed(1),
    },
    ratio: +(slope / keptSlope).toFixed(3),
    note: `samples: ${fit.map((s) => `${s.n / 1000}k=${(s.rss / MB).toFixed(0)}`).join(", ")} MB`,
  });
}
process.stdout.write(`${JSON.stringify({ area: "memory", figures })}\n`);
