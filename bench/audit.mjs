#!/usr/bin/env node
// bench-timeout-s: 600
// Benchmark of `benchmax audit` (@benchmax/audit; build it and the envs first): the whole audit of each catalog env
// over its fixtures (the tasks its audit.json picks, every attack, in process, over HTTP and over MCP), against the goal
// of at most 60 s per env on this machine. The audit's own profile (episode seconds summed per transport and per
// attack; episodes run 4 at a time) goes to stderr and into each figure's `profile`. Baseline, same run: the env's reference policy over the same tasks, in process
// (one rollout a task) — the ratio says how many reference passes one audit costs. Also reports the findings left
// (0 for a passing env).
// Prints progress to stderr and one JSON line to stdout.
import { loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { runRollout } from "@benchmax/core";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
// the audit package's build (the root package does not list it; the envs resolve from the root as the other benches do)
const { auditEnv, formatAuditReport, loadAuditConfig, pickTasks } = await import(
  pathToFileURL(resolve(root, "packages/audit/dist/index.js")).href
);
const log = (s) => process.stderr.write(`[audit] ${s}\n`);
const figures = [];
const round = (x, d = 2) => Math.round(x * 10 ** d) / 10 ** d;

// BENCH_AUDIT_ENVS=excel,math runs only those
const names = (process.env.BENCH_AUDIT_ENVS ?? "math,wikipedia,crm,excel").split(",").filter(Boolean);
for (const name of names) {
  const mod = (await import(`@benchmax/env-${name}`)).default;
  const env = await mod.createEnv({});
  try {
    const config = loadAuditConfig(resolve(root, "envs", name));
    const tasks = await env.capabilities.tasks.loadTasks();
    const picked = pickTasks(tasks, config.maxTasks ?? 8);
    let t0 = performance.now();
    const policy = env.capabilities?.reference?.referencePolicy();
    if (policy) for (const task of picked) await runRollout(env, task, policy, { maxTurns: 10 });
    const refS = (performance.now() - t0) / 1000;
    t0 = performance.now();
    const loadBefore = loadavg()[0];
    const report = await auditEnv(env, { tasks, config, envSpec: name });
    const s = (performance.now() - t0) / 1000;
    // the machine's 1-minute load average before and after: on a shared 2-core machine it decides the seconds
    const load = [round(loadBefore, 1), round(loadavg()[0], 1)];
    const left = report.findings.filter((f) => !f.allowed).length;
    if (left) log(formatAuditReport(report));
    log(
      `${name}: ${report.episodes} episodes on ${report.tasks} tasks in ${s.toFixed(1)} s; reference ${refS.toFixed(2)} s; ${left} findings; load ${load.join(" → ")}`,
    );
    const secs = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, round(v / 1000, 1)]));
    const profile = { byTransport: secs(report.timings.byTransport), byAttack: secs(report.timings.byAttack) };
    log(`${name} profile (episode seconds, summed): ${JSON.stringify(profile)}`);
    figures.push({
      id: `audit.${name}.seconds`,
      label: `benchmax audit ${name} over its fixtures (${report.tasks} tasks, ${report.episodes} adversarial episodes, ${report.transports.join(" + ")})`,
      value: round(s),
      unit: "s",
      goal: "≤ 60 s",
      pass: s <= 60,
      load,
      profile,
      ...(policy
        ? {
            baseline: { label: "the reference policy over the same tasks, in process", value: round(refS, 3) },
            ratio: round(s / Math.max(refS, 1e-3), 1),
          }
        : {}),
    });
    figures.push({
      id: `audit.${name}.findings`,
      label: `findings left by benchmax audit ${name} (accepted ones with a reason in audit.json not counted)`,
      value: left,
      unit: "findings",
      goal: "0",
      pass: left === 0,
    });
  } finally {
    await env.close();
  }
}

process.stdout.write(`${JSON.stringify({ area: "audit", figures })}\n`);
