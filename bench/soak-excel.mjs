#!/usr/bin/env node
// Long-run memory of one excel server (issue 36): N rollouts through `benchmax serve excel`, every one with a code
// call (run_code in the jail), driven over HTTP (connectRemoteEnv) by the env's scripted solutions. The server runs
// under the inspector (127.0.0.1 only) so this bench can force a full GC in it and read its live heap; RSS, file
// descriptors, child processes and leftover workspaces come from /proc.
//
// Goal: after warm-up (10 % of the rollouts, at least 1,100 where there are twice as many), RSS grows < 5 % and the live heap after GC stays bounded (grows < 5 %).
// Samples: the live heap after GC and RSS at 10 points after warm-up; growth is the last sample against the first.
// Baseline (same run): the live heap after GC right after start, before any rollout.
// BENCHMAX_SOAK_EXCEL_ROLLOUTS=N (default 2,000; the figure is 1,000,000: set it and the time limit, e.g.
// `node bench/run.mjs --only soak-excel --timeout-s 20000`). BENCHMAX_SOAK_HEAP_SNAPSHOTS=DIR writes the server's
// heap snapshots after warm-up and at the end (first.heapsnapshot, last.heapsnapshot) for Chrome DevTools' comparison.
// bench-timeout-s: 900
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runMany, scriptedPolicy } from "@benchmax/core";
import excel from "@benchmax/env-excel";
import { connectRemoteEnv } from "@benchmax/server";
import { procStats } from "./lib/proc-stats.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const WebSocket = createRequire(join(root, "packages", "server", "package.json"))("ws");
const log = (...a) => console.error("[soak-excel]", ...a);
const TOTAL = Number(process.env.BENCHMAX_SOAK_EXCEL_ROLLOUTS ?? 2_000);
// past the server's ring of 1,024 final states (OpenEnv's /state after done) and the warm pools, where it can
const WARMUP = Math.max(1, Math.min(Math.max(Math.round(TOTAL * 0.1), 1100), Math.round(TOTAL / 2)));
const SAMPLES = 10;
const CONCURRENCY = 8;
const TOKEN = "soak-excel-bench-token";

if (process.platform !== "linux") {
  console.error("soak-excel: needs Linux (/proc)");
  process.exit(1);
}

/** `benchmax serve excel --port 0` under the inspector; resolves with its URL and its inspector's WebSocket URL. */
function serve() {
  const bin = join(root, "packages", "cli", "bin", "benchmax.js");
  const proc = spawn(
    process.execPath,
    [
      "--inspect=127.0.0.1:0",
      bin,
      "serve",
      "excel",
      "--port",
      "0",
      "--token",
      TOKEN,
      "--max-rollouts",
      "256",
      "--data-root",
      join(root, "envs", "excel"),
    ],
    { cwd: root, stdio: ["ignore", "pipe", "pipe"] },
  );
  let err = "";
  let out = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`benchmax serve excel did not start in 60 s: ${err.slice(-500)}`));
    }, 60_000);
    const ready = () => {
      const url = /serving \S+ at (http:\/\/\S+)/.exec(out)?.[1];
      const inspector = /Debugger listening on (ws:\/\/\S+)/.exec(err)?.[1];
      if (url && inspector) {
        clearTimeout(timer);
        resolve({ proc, url, inspector, pid: proc.pid });
      }
    };
    proc.stdout.on("data", (d) => {
      out += d;
      ready();
    });
    proc.stderr.on("data", (d) => {
      err += d;
      if (err.length > 100_000) err = err.slice(-50_000);
      ready();
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`benchmax serve excel exited (${code}): ${err.slice(-500)}`));
    });
  });
}

/** A Chrome DevTools Protocol session on the server's inspector. */
async function inspector(url) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let next = 1;
  const waiting = new Map();
  let chunks = [];
  ws.on("message", (data) => {
    const m = JSON.parse(String(data));
    if (m.method === "HeapProfiler.addHeapSnapshotChunk") chunks.push(m.params.chunk);
    const w = m.id !== undefined ? waiting.get(m.id) : undefined;
    if (!w) return;
    waiting.delete(m.id);
    if (m.error) w.reject(new Error(`${m.error.message} (inspector)`));
    else w.resolve(m.result);
  });
  const send = (method, params = {}) =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  return {
    /** Live heap after a full GC, in bytes. */
    async liveHeap() {
      await send("HeapProfiler.collectGarbage");
      await send("HeapProfiler.collectGarbage");
      return (await send("Runtime.getHeapUsage")).usedSize;
    },
    /** Counts of the server's live resources by kind (process.getActiveResourcesInfo). */
    async resources() {
      const r = await send("Runtime.evaluate", {
        expression:
          "(() => { const c = {}; for (const k of process.getActiveResourcesInfo()) c[k] = (c[k] ?? 0) + 1; return c; })()",
        returnByValue: true,
      });
      return r.result.value;
    },
    /** A heap snapshot (the .heapsnapshot text Chrome DevTools opens), after a full GC. */
    async snapshot() {
      chunks = [];
      await send("HeapProfiler.collectGarbage");
      await send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
      const text = chunks.join("");
      chunks = [];
      return text;
    },
    close: () => ws.close(),
  };
}

/**
 * The env's scripted solutions, looked up by the task's id before its `~tag` suffix (tasks are cycled with fresh
 * ids), with a code call first in every rollout: a run_code that reads a cell, so every rollout runs the jail.
 */
function soakPolicy() {
  return scriptedPolicy("excel-soak", ({ task, messages }) => {
    const turn = messages.filter((m) => m.role === "assistant").length;
    const turns = solutions[task.id.split("~")[0]] ?? [];
    if (turn === 0)
      return { calls: [{ name: "run_code", arguments: { code: "console.log(workbook.worksheets.length)" } }] };
    if (turn - 1 < turns.length) return { calls: turns[turn - 1] };
    return { answer: "Done: the workbook is updated." };
  });
}

let solutions = {};

function cycle(base, n, tag) {
  return Array.from({ length: n }, (_, i) => ({
    ...base[i % base.length],
    id: `${base[i % base.length].id}~${tag}${i}`,
  }));
}

async function main() {
  solutions = JSON.parse(readFileSync(join(root, "envs", "excel", "fixtures", "solutions.json"), "utf8"));
  const local = await excel.createEnv({});
  // the tasks the scripted solutions solve (reward 1 in-process): a rollout that scores less over HTTP is wrong
  const tasks = (await local.capabilities.tasks.loadTasks()).filter((t) => solutions[t.id]);
  await local.close();
  if (tasks.length === 0) throw new Error("excel: no fixture task has a scripted solution");

  const srv = await serve();
  log(`benchmax serve excel: ${srv.url} (pid ${srv.pid}), inspector ${srv.inspector}`);
  const insp = await inspector(srv.inspector);
  const remote = await connectRemoteEnv([srv.url], { token: TOKEN, timeoutMs: 120_000 });
  const policy = soakPolicy();
  try {
    const heap0 = await insp.liveHeap();
    const outcomes = { completed: 0, truncated: 0, env_error: 0, infra_error: 0 };
    let codeCalls = 0;
    let wrong = 0;
    const errors = [];
    const run = async (n, tag) => {
      const { results } = await runMany(remote, cycle(tasks, n, tag), policy, {
        concurrency: CONCURRENCY,
        keepMessages: false,
      });
      for (const r of results) {
        outcomes[r.outcome]++;
        codeCalls += 1;
        if (r.outcome === "completed" && r.reward !== 1) wrong++;
        if (r.error && errors.length < 5) errors.push(`${r.taskId}: ${r.error}`);
      }
    };
    const t0 = performance.now();
    await run(WARMUP, "w");
    const samples = [];
    const sample = async (done) => {
      const heap = await insp.liveHeap();
      const s = { done, heap, resources: await insp.resources(), ...procStats(srv.pid) };
      samples.push(s);
      log(
        `${done} rollouts: live heap ${(heap / 2 ** 20).toFixed(1)} MB, RSS ${(s.rss / 2 ** 20).toFixed(1)} MB, ` +
          `fds ${s.fds}, children ${s.children}, workspaces ${s.workspaces}, ${JSON.stringify(s.resources)}, ` +
          `${(done / ((performance.now() - t0) / 1000)).toFixed(0)} rollouts/s`,
      );
    };
    const snapshots = process.env.BENCHMAX_SOAK_HEAP_SNAPSHOTS;
    if (snapshots) {
      mkdirSync(snapshots, { recursive: true });
      writeFileSync(join(snapshots, "first.heapsnapshot"), await insp.snapshot());
    }
    await sample(WARMUP);
    const per = Math.ceil((TOTAL - WARMUP) / SAMPLES);
    let done = WARMUP;
    for (let k = 0; k < SAMPLES && done < TOTAL; k++) {
      const n = Math.min(per, TOTAL - done);
      await run(n, `m${k}-`);
      done += n;
      await sample(done);
    }
    const secs = (performance.now() - t0) / 1000;
    if (snapshots) {
      writeFileSync(join(snapshots, "last.heapsnapshot"), await insp.snapshot());
      log(`heap snapshots in ${snapshots}`);
    }
    if (errors.length) log(`errors (first 5): ${errors.join(" | ")}`);
    const health = await fetch(`${srv.url}/health`, { headers: { authorization: `Bearer ${TOKEN}` } }).then((r) =>
      r.json(),
    );
    const first = samples[0];
    const last = samples.at(-1);
    const rssGrowth = ((last.rss - first.rss) / first.rss) * 100;
    const heapGrowth = ((last.heap - first.heap) / first.heap) * 100;
    const peakHeap = Math.max(...samples.map((s) => s.heap));
    const failed = outcomes.env_error + outcomes.infra_error;
    const leaks = last.workspaces + (health.activeRollouts ?? 0) + Math.max(0, last.children - first.children);
    const figures = [
      {
        id: "soak-excel.rollouts",
        label: `excel rollouts through benchmax serve, each with a run_code call`,
        value: done,
        unit: "rollouts",
        goal: `>= ${TOTAL}`,
        pass: done >= TOTAL,
        note: `${JSON.stringify(outcomes)}; ${(done / secs).toFixed(1)} rollouts/s; ${codeCalls} code calls`,
      },
      {
        id: "soak-excel.failed_or_wrong",
        label: "env_error + infra_error rollouts, and completed ones scored below the in-process 1",
        value: failed + wrong,
        unit: "rollouts",
        goal: "0",
        pass: failed + wrong === 0,
        ...(errors.length ? { note: errors[0].slice(0, 200) } : {}),
      },
      {
        id: "soak-excel.rss_growth",
        label: "server RSS growth after warm-up",
        value: rssGrowth,
        unit: "%",
        goal: "< 5",
        pass: rssGrowth < 5,
        note: samples.map((s) => (s.rss / 2 ** 20).toFixed(0)).join(" → ") + " MB",
      },
      {
        id: "soak-excel.live_heap_growth",
        label: "server live heap after a full GC, growth after warm-up",
        value: heapGrowth,
        unit: "%",
        goal: "< 5",
        pass: heapGrowth < 5,
        baseline: { label: "live heap after GC at start, before any rollout (MB)", value: heap0 / 2 ** 20 },
        note: `${samples.map((s) => (s.heap / 2 ** 20).toFixed(1)).join(" → ")} MB; peak ${(peakHeap / 2 ** 20).toFixed(1)} MB`,
      },
      {
        id: "soak-excel.leaks",
        label: "leaked workspaces + live rollouts + new child processes at the end",
        value: leaks,
        unit: "count",
        goal: "0",
        pass: leaks === 0,
      },
      {
        id: "soak-excel.fd_growth",
        label: "server open file descriptors, growth after warm-up",
        value: last.fds - first.fds,
        unit: "fds",
        goal: `<= ${CONCURRENCY}`,
        pass: last.fds - first.fds <= CONCURRENCY,
        note: `${first.fds} → ${last.fds}`,
      },
    ];
    console.log(JSON.stringify({ area: "soak-excel", figures }));
  } finally {
    insp.close();
    await remote.close();
    srv.proc.kill("SIGTERM");
    await new Promise((r) => {
      const t = setTimeout(() => {
        srv.proc.kill("SIGKILL");
        r();
      }, 10_000);
      srv.proc.once("exit", () => {
        clearTimeout(t);
        r();
      });
    });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
