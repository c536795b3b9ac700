#!/usr/bin/env node
// bench-timeout-s: 900
// Sessions at scale (issue 22): OpenEnv's published scaling test on `benchmax serve` — WebSocket sessions, each step
// a tool call that waits 10 s. OpenEnv reports about 256 sessions per core (2,048 sessions on 8 cores at p99 1.97 s);
// the goal here is 16,384 concurrent sessions on this machine, with the load generator on the same machine:
// at least 99.9 % of steps succeed, p99 step latency at most the wait plus 100 ms, and the server's RSS per session.
// The server runs in a child process (each process has its own file-descriptor limit); the load generator opens the
// sessions from 127.0.0.1-8 (so ephemeral ports never run out), resets each, then steps every session back to back
// until all are open and each open session has had two more full steps. Prints one JSON line on stdout.
// BENCH_SESSIONS (default 16384) and BENCH_SESSIONS_WAIT_MS (default 10000) make a smaller run (the CI smoke).
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath, pathToFileURL } from "node:url";

const log = (...a) => console.error("[sessions]", ...a);
const self = fileURLToPath(import.meta.url);
const N = Number(process.env.BENCH_SESSIONS ?? 16_384);
const WAIT_MS = Number(process.env.BENCH_SESSIONS_WAIT_MS ?? 10_000);
const SOURCES = 8;
const cpus = availableParallelism();

// ------------------------------------------------------------------------------------------------- the server
async function child() {
  const { serveEnv } = await import("@benchmax/server");
  const { defineEnv, tool } = await import("@benchmax/core");
  const { z } = await import("zod");
  const wait = Number(process.argv[3]);
  const n = Number(process.argv[4]);
  const env = defineEnv({
    name: "waiter",
    systemPrompt: "Call wait.",
    toolTimeoutMs: wait * 3 + 10_000,
    tools: [
      tool({
        name: "wait",
        description: `waits ${wait} ms`,
        parameters: z.object({}),
        execute: () => new Promise((r) => setTimeout(() => r("waited"), wait)),
      }),
    ],
    reward: () => ({ r: 1 }),
    loadTasks: async () => [{ id: "t", prompt: "wait", groundTruth: null }],
  });
  const s = await serveEnv(env, {
    port: 0,
    maxRollouts: n + 64,
    maxConnections: n + 256,
    idleTimeoutMs: 10 * 60_000,
  });
  process.stdout.write(`${JSON.stringify({ port: s.port })}\n`);
  process.on("SIGTERM", () => {
    void s.close().finally(() => process.exit(0));
  });
}

function rssMb(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** CPU seconds (user + system) the process has used, from /proc (clock ticks of 10 ms). */
function cpuS(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = f.slice(f.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

async function startServer() {
  // BENCH_SESSIONS_NODE_ARGS: extra node flags for the server (e.g. --cpu-prof to profile it)
  const extra = (process.env.BENCH_SESSIONS_NODE_ARGS ?? "").split(" ").filter(Boolean);
  const args = [...extra, "--max-old-space-size=8192", self, "--serve", String(WAIT_MS), String(N)];
  const proc = spawn(process.execPath, args, {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise((resolve, reject) => {
    let buf = "";
    proc.stdout.on("data", (d) => {
      buf += d;
      const nl = buf.indexOf("\n");
      if (nl >= 0) resolve(JSON.parse(buf.slice(0, nl)).port);
    });
    proc.once("exit", (c) => reject(new Error(`server exited ${c}`)));
  });
  return { proc, port };
}

// ------------------------------------------------------------------------------------------- the load generator
async function main() {
  const require = createRequire(fileURLToPath(import.meta.resolve("@benchmax/server")));
  const WebSocket = (await import(pathToFileURL(require.resolve("ws")).href)).default;
  const { proc, port } = await startServer();
  await new Promise((r) => setTimeout(r, 300));
  const baseRss = rssMb(proc.pid);
  const baseCpu = cpuS(proc.pid);
  const clientCpu0 = process.cpuUsage();
  const loads = [];
  const sampler = setInterval(() => loads.push(loadavg()[0]), 1000);
  log(`server pid ${proc.pid} on ${port}, RSS ${baseRss.toFixed(1)} MB; opening ${N} sessions (wait ${WAIT_MS} ms)`);

  const latencies = [];
  let ok = 0;
  let failed = 0;
  let sessionsFailed = 0;
  let open = 0;
  let peakOpen = 0;
  let stopAt = Number.POSITIVE_INFINITY;
  let firstError;

  async function session(i, ready) {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, {
      localAddress: `127.0.0.${1 + (i % SOURCES)}`,
      perMessageDeflate: false,
    });
    let waiter;
    ws.on("message", (d) => {
      const w = waiter;
      waiter = undefined;
      w?.(JSON.parse(String(d)));
    });
    const closed = new Promise((r) => ws.once("close", () => r(undefined)));
    ws.on("error", (e) => {
      firstError ??= e.message;
    });
    const ask = (m) =>
      Promise.race([
        new Promise((r) => {
          waiter = r;
          ws.send(JSON.stringify(m));
        }),
        closed,
      ]);
    const opened = await Promise.race([new Promise((r) => ws.once("open", () => r(true))), closed]);
    if (!opened) {
      sessionsFailed++;
      ready();
      return;
    }
    const reset = await ask({ type: "reset", data: {} });
    if (reset?.type !== "observation") {
      sessionsFailed++;
      firstError ??= JSON.stringify(reset);
      ws.close();
      ready();
      return;
    }
    open++;
    ready();
    peakOpen = Math.max(peakOpen, open);
    while (performance.now() < stopAt) {
      const t0 = performance.now();
      const r = await ask({ type: "step", data: { type: "call_tool", tool_name: "wait", arguments: {} } });
      const ms = performance.now() - t0;
      if (r?.type === "observation" && r.data?.observation?.result !== null && !r.data?.observation?.error) {
        ok++;
        latencies.push(ms);
      } else {
        failed++;
        firstError ??= JSON.stringify(r);
        if (!r) break;
      }
    }
    open--;
    ws.close();
  }

  const t0 = performance.now();
  const all = [];
  const CHUNK = 256;
  for (let i = 0; i < N; i += CHUNK) {
    const chunk = [];
    for (let j = i; j < Math.min(N, i + CHUNK); j++) {
      // the chunk is done when its sessions are open (or failed to), not when they end
      chunk.push(new Promise((ready) => all.push(session(j, ready))));
    }
    await Promise.all(chunk);
  }
  const rampS = (performance.now() - t0) / 1000;
  stopAt = performance.now() + 2 * WAIT_MS;
  log(`${open} sessions open after ${rampS.toFixed(1)} s (${sessionsFailed} failed to open); stepping two more waits`);
  // mid-run: every session open with a step in flight
  await new Promise((r) => setTimeout(r, WAIT_MS / 2));
  const peakRss = rssMb(proc.pid);
  const openAtPeak = open;
  log(`mid-run: ${openAtPeak} sessions open, server RSS ${peakRss.toFixed(1)} MB`);
  await Promise.all(all);
  const serverCpu = cpuS(proc.pid) - baseCpu;
  const c = process.cpuUsage(clientCpu0);
  const clientCpu = (c.user + c.system) / 1e6;
  clearInterval(sampler);
  const load = loads.length ? loads.reduce((a, b) => a + b, 0) / loads.length : loadavg()[0];
  proc.kill("SIGTERM");
  await new Promise((r) => proc.once("exit", r));

  latencies.sort((a, b) => a - b);
  const q = (p) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? Number.NaN;
  const p50 = q(0.5);
  const p99 = q(0.99);
  const successPct = (100 * ok) / Math.max(1, ok + failed + sessionsFailed);
  const perSessionKb = ((peakRss - baseRss) * 1024) / Math.max(1, openAtPeak);
  if (firstError) log(`first error: ${firstError}`);
  log(`steps ok ${ok}, failed ${failed}; p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`);
  const note = `${N} sessions asked, ${SOURCES} source addresses, wait ${WAIT_MS} ms; OpenEnv publishes ~256 sessions/core and 2,048 sessions on 8 cores at p99 1.97 s`;
  console.log(
    JSON.stringify({
      area: "sessions",
      figures: [
        {
          id: "sessions.concurrent",
          label:
            "WebSocket sessions open at once, each with a step in flight (server and load generator on this machine)",
          value: openAtPeak,
          unit: "sessions",
          goal: `>= ${N}`,
          pass: openAtPeak >= N,
          note,
        },
        {
          id: "sessions.step_success_pct",
          label: "steps that succeeded (failed sessions count as failed steps)",
          value: Number(successPct.toFixed(3)),
          unit: "%",
          goal: ">= 99.9",
          pass: successPct >= 99.9,
          note: `${ok} ok, ${failed} failed steps, ${sessionsFailed} sessions failed to open`,
        },
        {
          id: "sessions.step_p99_ms",
          label: `p99 step latency (each step waits ${WAIT_MS} ms)`,
          value: Number(p99.toFixed(1)),
          unit: "ms",
          goal: `<= ${WAIT_MS + 100}`,
          pass: p99 <= WAIT_MS + 100,
          note: `p50 ${p50.toFixed(1)} ms over ${latencies.length} steps; 1-min load average ${load.toFixed(1)} on ${cpus} cores during the run (other work on the machine delays every step)`,
        },
        {
          id: "sessions.rss_per_session_kb",
          label: "server RSS per open session (mid-run RSS minus idle RSS, over open sessions)",
          value: Number(perSessionKb.toFixed(1)),
          unit: "KB",
          note: `server RSS ${baseRss.toFixed(0)} MB idle, ${peakRss.toFixed(0)} MB with ${openAtPeak} sessions; ramp ${rampS.toFixed(1)} s`,
        },
        {
          id: "sessions.server_cpu_per_step_ms",
          label: "server CPU time per step (connect, reset and close spread over the steps)",
          value: Number(((serverCpu * 1000) / Math.max(1, ok + failed)).toFixed(3)),
          unit: "ms",
          note: `${serverCpu.toFixed(1)} CPU s in the server for ${ok + failed} steps of ${N - sessionsFailed} sessions; less sensitive to other load on the machine than the latency`,
        },
        {
          id: "sessions.client_cpu_per_step_ms",
          label: "load generator CPU time per step (the ws library client, same machine)",
          value: Number(((clientCpu * 1000) / Math.max(1, ok + failed)).toFixed(3)),
          unit: "ms",
          note: `${clientCpu.toFixed(1)} CPU s; server + client CPU per step times ${N} sessions / ${WAIT_MS / 1000} s is the share of the cores the test needs`,
        },
      ],
    }),
  );
}

if (process.argv[2] === "--serve") await child();
else await main();
