#!/usr/bin/env node
// Soak (issue 10): 10,000 rollouts through `benchmax serve` with a mix of envs (one server process per env,
// started through the CLI), driven by each env's reference policy over HTTP (connectRemoteEnv). Measured in each
// server process from /proc after a warm-up (20 % of the rollouts) and at the end: RSS growth (goal < 5 %),
// leaked workspaces (core Workspace dirs under $TMPDIR/benchmax-<pid>), file descriptors and child processes.
// Baseline: the same math rollouts in-process (no HTTP), for the throughput ratio.
// The one benchmark allowed to run past 2 minutes on a loaded 2-core machine:
// bench-timeout-s: 900
// BENCHMAX_SOAK_ROLLOUTS=N runs fewer (or more). Linux only (reads /proc).
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runMany } from "@benchmax/core";
import { connectRemoteEnv } from "@benchmax/server";
import { procStats } from "./lib/proc-stats.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const log = (...a) => console.error("[soak]", ...a);
const TOTAL = Number(process.env.BENCHMAX_SOAK_ROLLOUTS ?? 10_000);
const WARMUP = Math.round(TOTAL * 0.2);
const CONCURRENCY = 8;
const TOKEN = "soak-bench-token";
/** Share of the rollouts per env (renormalised over the envs that load). */
const MIX = { math: 0.4, wikipedia: 0.25, crm: 0.25, excel: 0.1 };

if (process.platform !== "linux") {
  console.error("soak: needs Linux (/proc)");
  process.exit(1);
}

/** `benchmax serve <env> --port 0`; resolves with its URL once it prints it. */
function serve(envName) {
  const bin = join(root, "packages", "cli", "bin", "benchmax.js");
  const proc = spawn(
    process.execPath,
    // the tasks are sent by the client (cycled with fresh ids) and name the env's fixture files: allow them
    [
      bin,
      "serve",
      envName,
      "--port",
      "0",
      "--token",
      TOKEN,
      "--max-rollouts",
      "4096",
      "--data-root",
      join(root, "envs", envName),
    ],
    {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let err = "";
  proc.stderr.on("data", (d) => {
    err += d;
  });
  return new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`benchmax serve ${envName} did not start in 60 s: ${err.slice(-500)}`));
    }, 60_000);
    proc.stdout.on("data", (d) => {
      out += d;
      const m = /serving \S+ at (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve({ name: envName, proc, url: m[1], pid: proc.pid });
      }
    });
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`benchmax serve ${envName} exited (${code}): ${err.slice(-500)}`));
    });
  });
}

async function loadEnvModule(name) {
  try {
    const mod = await import(`@benchmax/env-${name}`);
    if (typeof mod.default?.createEnv !== "function") return { reason: "no default EnvModule" };
    const env = await mod.default.createEnv({});
    const tasks = await env.capabilities.tasks.loadTasks();
    const policy = env.capabilities?.reference?.referencePolicy();
    if (!policy || !tasks.length) {
      await env.close();
      return { reason: "no reference policy or no fixture tasks" };
    }
    return { env, tasks, policy };
  } catch (e) {
    return { reason: e.message.split("\n")[0] };
  }
}

function cycle(base, n, tag) {
  return Array.from({ length: n }, (_, i) => ({
    ...base[i % base.length],
    id: `${base[i % base.length].id}~${tag}${i}`,
  }));
}

async function main() {
  const subjects = [];
  for (const name of Object.keys(MIX)) {
    const got = await loadEnvModule(name);
    if (got.reason) {
      log(`env ${name} left out of the mix: ${got.reason}`);
      continue;
    }
    subjects.push({ name, ...got });
  }
  if (!subjects.length) throw new Error("no env could be loaded");
  const weight = subjects.reduce((a, s) => a + MIX[s.name], 0);

  // baseline: math rollouts in-process, no HTTP
  const math = subjects.find((s) => s.name === "math") ?? subjects[0];
  const nBase = Math.min(1000, TOTAL);
  const t0 = performance.now();
  await runMany(math.env, cycle(math.tasks, nBase, "b"), math.policy, {
    concurrency: CONCURRENCY,
    keepMessages: false,
  });
  const baseRate = nBase / ((performance.now() - t0) / 1000);
  log(`baseline: ${nBase} ${math.name} rollouts in-process at ${baseRate.toFixed(0)}/s`);

  const servers = [];
  try {
    for (const s of subjects) {
      const srv = await serve(s.name);
      log(`benchmax serve ${s.name}: ${srv.url} (pid ${srv.pid})`);
      srv.remote = await connectRemoteEnv([srv.url], { token: TOKEN, timeoutMs: 60_000 });
      servers.push({ ...s, ...srv });
    }
    const outcomes = { completed: 0, truncated: 0, env_error: 0, infra_error: 0 };
    const errors = [];
    const phase = async (n, tag) => {
      await Promise.all(
        servers.map(async (s) => {
          const k = Math.max(1, Math.round((n * MIX[s.name]) / weight));
          const { results } = await runMany(s.remote, cycle(s.tasks, k, tag), s.policy, {
            concurrency: CONCURRENCY,
            keepMessages: false,
          });
          for (const r of results) {
            outcomes[r.outcome]++;
            if (r.error && errors.length < 5) errors.push(`${s.name} ${r.taskId}: ${r.error}`);
          }
        }),
      );
    };
    await phase(WARMUP, "w");
    const before = Object.fromEntries(servers.map((s) => [s.name, procStats(s.pid)]));
    log(`after warm-up (${WARMUP} rollouts): ${JSON.stringify(before)}`);
    const t1 = performance.now();
    await phase(TOTAL - WARMUP, "m");
    const secs = (performance.now() - t1) / 1000;
    const after = Object.fromEntries(servers.map((s) => [s.name, procStats(s.pid)]));
    log(`after ${TOTAL} rollouts: ${JSON.stringify(after)}`);
    if (errors.length) log(`errors (first 5): ${errors.join(" | ")}`);
    const active = {};
    for (const s of servers) {
      const h = await fetch(`${s.url}/health`).then((r) => r.json());
      active[s.name] = h.activeRollouts;
      await s.remote.close();
    }

    const done = Object.values(outcomes).reduce((a, b) => a + b, 0);
    const rate = (done - WARMUP) / secs;
    const figures = [
      {
        id: "soak.rollouts",
        label: `rollouts through benchmax serve (${servers.map((s) => s.name).join(", ")})`,
        value: done,
        unit: "rollouts",
        goal: `>= ${TOTAL}`,
        pass: done >= TOTAL * 0.99,
        note: JSON.stringify(outcomes),
      },
      {
        id: "soak.failed_rollouts",
        label: "env_error + infra_error rollouts",
        value: outcomes.env_error + outcomes.infra_error,
        unit: "rollouts",
        goal: "0",
        pass: outcomes.env_error + outcomes.infra_error === 0,
        ...(errors.length ? { note: errors[0].slice(0, 200) } : {}),
      },
      {
        id: "soak.throughput",
        label: "rollouts per second over HTTP after warm-up (all servers)",
        value: rate,
        unit: "rollouts/s",
        baseline: { label: `${math.name} rollouts in-process, no HTTP`, value: baseRate },
        ratio: rate / baseRate,
      },
    ];
    for (const s of servers) {
      const b = before[s.name];
      const a = after[s.name];
      const growth = ((a.rss - b.rss) / b.rss) * 100;
      figures.push(
        {
          id: `soak.${s.name}.rss_growth`,
          label: `${s.name} server RSS growth after warm-up`,
          value: growth,
          unit: "%",
          goal: "< 5",
          pass: growth < 5,
          baseline: { label: "RSS after warm-up (MB)", value: b.rss / 2 ** 20 },
          note: `RSS ${(b.rss / 2 ** 20).toFixed(1)} → ${(a.rss / 2 ** 20).toFixed(1)} MB`,
        },
        {
          id: `soak.${s.name}.leaks`,
          label: `${s.name} server: leaked workspaces + live rollouts + new child processes`,
          value: a.workspaces + (active[s.name] ?? 0) + Math.max(0, a.children - b.children),
          unit: "count",
          goal: "0",
          pass: a.workspaces + (active[s.name] ?? 0) + Math.max(0, a.children - b.children) === 0,
        },
        {
          id: `soak.${s.name}.fd_growth`,
          label: `${s.name} server open file descriptors, growth after warm-up`,
          value: a.fds - b.fds,
          unit: "fds",
          goal: `<= ${CONCURRENCY} (client keep-alive sockets)`,
          pass: a.fds - b.fds <= CONCURRENCY,
          note: `${b.fds} → ${a.fds}`,
        },
      );
    }
    console.log(JSON.stringify({ area: "soak", figures }));
  } finally {
    for (const s of servers) {
      s.proc.kill("SIGTERM");
      await new Promise((r) => {
        const t = setTimeout(() => {
          s.proc.kill("SIGKILL");
          r();
        }, 10_000);
        s.proc.once("exit", () => {
          clearTimeout(t);
          r();
        });
      });
    }
    for (const s of subjects) await s.env.close();
  }
}

main().catch((e) => {
  console.error(`soak: ${e.stack ?? e.message}`);
  process.exit(1);
});
