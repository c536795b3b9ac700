#!/usr/bin/env node
import { fork } from "node:child_process";
// Issue 25: `benchmax watch` on a run of 1,000,000 recorded rollouts (SkyRL-style: trainer step, groups of 8, short
// conversations). Measures in headless Chromium the dashboard's first paint (navigation start → first contentful
// paint, and → body[data-ready] with charts drawn), the time until all 1M rollouts are drawn, and how long a rollout
// appended afterwards takes to reach the open page. Goals: first paint ≤ 1000 ms, a new rollout ≤ 2000 ms. Prints
// one JSON line on stdout.
// bench-timeout-s: 600
import { appendFileSync, closeSync, existsSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const log = (...a) => console.error("[watch]", ...a);
const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const N = Number(process.env.BENCH_WATCH_ROLLOUTS ?? 1_000_000);
const GROUP = 8;
const CHROMIUM = process.env.BENCHMAX_CHROMIUM ?? "/usr/bin/chromium";

function line(i) {
  const step = Math.floor(i / 512);
  const task = `t${Math.floor(i / GROUP) % 5000}`;
  const reward = (i * 2654435761) % 100 < 40 + (step % 60) ? 1 : 0;
  return `${JSON.stringify({
    taskId: task,
    rolloutId: `r${i}`,
    groupId: `${task}@${step}`,
    sample: i % GROUP,
    attempt: 0,
    outcome: i % 97 === 0 ? "env_error" : "completed",
    ...(i % 97 === 0 ? { error: "reward failed" } : { reward, rewards: { correct: reward, format: 1 } }),
    turns: 2,
    toolCalls: 1,
    toolErrors: 0,
    durationMs: 100,
    messages: [
      { role: "user", content: `What is ${i} + 1?` },
      { role: "assistant", content: `<answer>${i + reward}</answer>` },
    ],
    trainerStep: step,
  })}\n`;
}

async function main() {
  if (!existsSync(CHROMIUM)) {
    console.error(
      `[watch] cannot measure: no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set BENCHMAX_CHROMIUM)`,
    );
    process.exit(1);
  }
  const dir = mkdtempSync(join(tmpdir(), "bench-watch-"));
  const path = join(dir, "results.jsonl");
  const fd = openSync(path, "w");
  let buf = "";
  for (let i = 0; i < N; i++) {
    buf += line(i);
    if (buf.length > 1 << 20) {
      writeSync(fd, buf);
      buf = "";
    }
  }
  writeSync(fd, buf);
  closeSync(fd);
  log(`wrote ${N} rollouts`);
  const require = createRequire(join(root, "packages/report/package.json"));
  const { chromium } = require("playwright-core");
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
  // the watcher runs in a process of its own, as `benchmax watch` does (the browser driver here shares no event loop)
  const t0 = performance.now();
  const child = fork(fileURLToPath(import.meta.url), ["--child", dir], {
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const w = await new Promise((res) => child.once("message", res));
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await page.goto(w.url);
    await page.waitForSelector("body[data-ready]");
    const paint = await page.evaluate(() => {
      const fcp = performance.getEntriesByName("first-contentful-paint")[0];
      const nav = performance.getEntriesByType("navigation")[0];
      return {
        responseStartMs: Math.round(nav.responseStart),
        responseEndMs: Math.round(nav.responseEnd),
        domInteractiveMs: Math.round(nav.domInteractive),
        fcpMs: fcp ? Math.round(fcp.startTime) : null,
        readyMs: Math.round(globalThis.benchmaxReadyMs),
        drawn: Number(document.body.getAttribute("data-total")),
      };
    });
    log(
      `first paint ${paint.fcpMs} ms (response ${paint.responseStartMs}–${paint.responseEndMs} ms, DOM interactive ${paint.domInteractiveMs} ms), ready ${paint.readyMs} ms with ${paint.drawn} rollouts drawn`,
    );
    await page.waitForSelector(`body[data-total="${N}"]`, { timeout: 600_000 });
    const allMs = Math.round(performance.now() - t0);
    const points = await page.evaluate(() => globalThis.benchmaxCharts["chart-reward"].data.labels.length);
    // one more rollout appended: how long until the open page shows it (SSE push after the next poll)
    const t1 = performance.now();
    appendFileSync(path, line(N));
    await page.waitForSelector(`body[data-total="${N + 1}"]`, { timeout: 30_000 });
    const newMs = Math.round(performance.now() - t1);
    const load1 = (await import("node:os")).loadavg()[0].toFixed(1);
    const note = `${N} rollouts; ${paint.drawn} drawn at first paint, ${points} points per curve; the page's response ${paint.responseStartMs}–${paint.responseEndMs} ms; load average ${load1}`;
    const figures = [
      {
        id: "watch.first_paint_ms",
        label: `dashboard first contentful paint, ${N} recorded rollouts`,
        value: paint.fcpMs ?? -1,
        unit: "ms",
        goal: "<= 1000",
        pass: paint.fcpMs !== null && paint.fcpMs <= 1000,
        note,
      },
      { id: "watch.ready_ms", label: "charts drawn (body[data-ready])", value: paint.readyMs, unit: "ms", note },
      { id: "watch.all_drawn_ms", label: `all ${N} rollouts read and drawn`, value: allMs, unit: "ms" },
      {
        id: "watch.new_rollout_ms",
        label: "a rollout appended to results.jsonl reaches the open page (SSE)",
        value: newMs,
        unit: "ms",
        goal: "<= 2000",
        pass: newMs <= 2000,
      },
    ];
    console.log(JSON.stringify({ area: "watch", figures }));
  } finally {
    child.kill();
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--child") {
  const { startWatch } = await import("@benchmax/report");
  const w = await startWatch(process.argv[3], { pollMs: 250 });
  process.send?.({ url: w.url });
} else await main();
