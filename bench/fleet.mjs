#!/usr/bin/env node
// The seed's fleet under faults (issue 36): nodes simulated as network namespaces (iproute2, veth pairs), each with
// N `benchmax serve math` servers on its own address, driven by training steps as SkyRL's generator and the tinker
// cookbook's group rollout call the Python adapters (bench/fleet-driver.py: P prompts × group G per step). A fault
// schedule runs inside the run: SIGKILL a whole node (spot preemption), restart its servers on the same addresses,
// SIGSTOP a node (a hang) and SIGCONT it, SIGTERM a node (a drain), and `tc netem` delay/loss on a node where the
// kernel has netem. Every reward the trainer got is re-checked in-process against @benchmax/env-math.
//
// BENCH_FLEET_SHAPE=small: 3 nodes × 2 servers, 8 steps of 8 × 4 (the CI shape, run by packages/reliability's
// fleet test). Default: 5 nodes × 20 servers, 20 steps of 64 × 8. BENCH_FLEET_NODES / _PER_NODE / _STEPS / _PROMPTS /
// _GROUP override one figure. SKYRL_GYM_DIR=<SkyRL checkout>/skyrl-gym runs SkyRL's own skyrl_gym registry.
// Needs root for namespaces; without them the nodes are 127.0.0.x addresses on this host (said in the figures).
// bench-timeout-s: 900
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createHosts, netnsUnavailable, removeHosts, sh } from "../scripts/netns.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const log = (...a) => console.error("[fleet]", ...a);
const small = process.env.BENCH_FLEET_SHAPE === "small";
const num = (k, d) => Number(process.env[`BENCH_FLEET_${k}`] ?? d);
const NODES = num("NODES", small ? 3 : 5);
const PER_NODE = num("PER_NODE", small ? 2 : 20);
const STEPS = num("STEPS", small ? 8 : 20);
const PROMPTS = num("PROMPTS", small ? 8 : 64);
const GROUP = num("GROUP", small ? 4 : 8);
const TOKEN = "fleet-bench-token";
const GRACE_S = 5;
const IDLE_S = 20;
const PYTHON =
  process.env.BENCHMAX_PYTHON ?? (spawnSync("/usr/bin/python3", ["-V"]).status === 0 ? "/usr/bin/python3" : "python3");
const cli = join(root, "packages", "cli", "bin", "benchmax.js");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- nodes ---------------------------------------------------------------------------------------------------
const tag = String(process.pid % 100_000);
const base = 100 + (process.pid % 40) * 3;
const nsReason = netnsUnavailable(`bmf${tag}p`);
if (nsReason) log(`network namespaces unavailable (${nsReason}): nodes are 127.0.x.y addresses on this host`);
const nodes = Array.from({ length: NODES }, (_, k) => ({
  k,
  ns: nsReason ? undefined : `bmf${tag}n${k}`,
  hostIf: `bmfh${tag}${k}`,
  nsIf: `bmfn${tag}${k}`,
  addr: nsReason ? `127.0.${base % 250}.${10 + k}` : `10.214.${(base + k) % 250}.2`,
  hostAddr: `10.214.${(base + k) % 250}.1`,
  servers: [],
}));
const createNodes = () => nsReason || createHosts(nodes);
const removeNodes = () => nsReason || removeHosts(nodes);

const serveHelp = sh([process.execPath, cli, "serve", "--help"]).out;
const hasDrainFlag = serveHelp.includes("--drain-grace");

/** One `benchmax serve <env>` (math by default) in the node's namespace; resolves once it listens. */
function startServer(node, j, envName = "math", basePort = 18000) {
  const port = basePort + j;
  const args = [cli, "serve", envName, "--host", node.addr, "--port", String(port), "--token", TOKEN];
  // a rollout nobody holds any more is expired after 20 s idle (the server's own backstop; default 10 min)
  args.push("--max-rollouts", "4096", "--idle-timeout", String(IDLE_S));
  if (envName === "excel") args.push("--data-root", join(root, "envs", "excel"));
  if (hasDrainFlag) args.push("--drain-grace", String(GRACE_S));
  const [cmd, ...pre] = node.ns ? ["ip", "netns", "exec", node.ns, process.execPath] : [process.execPath];
  const proc = spawn(cmd, [...pre, ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, BENCHMAX_INSTANCE_ID: `n${node.k}s${j}` },
  });
  let err = "";
  proc.stderr.on("data", (d) => {
    err = (err + d).slice(-4000);
  });
  const s = { node, j, port, url: `http://${node.addr}:${port}`, proc, exit: undefined };
  proc.once("exit", (code, sig) => {
    s.exit = { code, sig };
  });
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`server ${s.url} did not start: ${err}`)), 120_000);
    proc.stdout.on("data", (d) => {
      if (String(d).includes("serving")) {
        clearTimeout(t);
        resolve(s);
      }
    });
    proc.once("exit", () => reject(new Error(`server ${s.url} exited: ${err}`)));
  });
}
async function startNode(node) {
  node.servers = [];
  for (let j = 0; j < PER_NODE; j += 10) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(10, PER_NODE - j) }, (_, i) => startServer(node, j + i)),
    );
    node.servers.push(...batch);
  }
}
const signalNode = (node, sig) => {
  for (const s of node.servers) if (s.exit === undefined) s.proc.kill(sig);
};
const waitExit = (s) => (s.exit ? Promise.resolve() : new Promise((r) => s.proc.once("exit", r)));
async function getJson(url, path) {
  try {
    const r = await fetch(url + path, {
      headers: { authorization: `Bearer ${TOKEN}`, accept: "application/json" },
      signal: AbortSignal.timeout(3000),
    });
    return { status: r.status, body: await r.json() };
  } catch (e) {
    return { status: 0, error: String(e) };
  }
}

// ---- excel ---------------------------------------------------------------------------------------------------
const EXCEL_PER_NODE = num("EXCEL_PER_NODE", small ? 1 : 4);
const EXCEL_ROLLOUTS = num("EXCEL_ROLLOUTS", small ? 24 : 120);

/**
 * `benchmax serve excel` × EXCEL_PER_NODE on every node, driven through the TypeScript RoutedEnv (connectRemoteEnv)
 * by the excel reference policy; node 1's excel servers are SIGKILLed a third of the way in. Every reward is compared
 * with the same task's reward in-process; migrations are timed by RoutedEnv's onMigration events.
 */
async function excelFleet() {
  const { runMany } = await import("@benchmax/core");
  const { connectRemoteEnv } = await import("@benchmax/server");
  const { default: mod } = await import("@benchmax/env-excel");
  const local = await mod.createEnv({});
  const base = await local.capabilities.tasks.loadTasks();
  const policy = local.capabilities.reference.referencePolicy();
  const expected = new Map();
  for (const r of (await runMany(local, base, policy, { concurrency: 4, keepMessages: false })).results) {
    expected.set(r.taskId, r.reward);
  }
  await local.close();
  const servers = [];
  for (const node of nodes) {
    for (let j = 0; j < EXCEL_PER_NODE; j++) servers.push(await startServer(node, j, "excel", 19000));
  }
  log(`excel: ${servers.length} servers up; ${EXCEL_ROLLOUTS} rollouts through RoutedEnv`);
  const migrations = [];
  const routed = await connectRemoteEnv(
    servers.map((x) => x.url),
    {
      token: TOKEN,
      timeoutMs: 120_000,
      probeAfterMs: 2000,
      probeTimeoutMs: 2000,
      onMigration: (e) => migrations.push(e),
    },
  );
  // each fixture task as a group (its ids unchanged: the env finds a task's files by its id)
  const group = Math.max(1, Math.ceil(EXCEL_ROLLOUTS / base.length));
  const victim = nodes[1 % NODES];
  let killed = false;
  const total = group * base.length;
  const { results } = await runMany(routed, base, policy, {
    group,
    concurrency: 16,
    keepMessages: false,
    onEvent: (e) => {
      if (e.type === "rollout" && !killed && e.done >= Math.floor(total / 3)) {
        killed = true;
        for (const sv of servers) if (sv.node === victim && sv.exit === undefined) sv.proc.kill("SIGKILL");
        mark("excel_kill", { node: victim.k });
      }
    },
  });
  log(`excel: RoutedEnv stats ${JSON.stringify(routed.stats)}`);
  await routed.close?.();
  for (const sv of servers) if (sv.exit === undefined) sv.proc.kill("SIGKILL");
  const wrong = results.filter((r) => r.outcome !== "infra_error" && r.reward !== expected.get(r.taskId));
  const failed = results.filter((r) => r.outcome === "infra_error" || r.outcome === "env_error");
  const ok = migrations
    .filter((m) => m.ok)
    .map((m) => m.ms)
    .sort((a, b) => a - b);
  const p99 = ok.length ? ok[Math.min(ok.length - 1, Math.floor(0.99 * ok.length))] : 0;
  return [
    {
      id: "fleet.excel_failed_rollouts",
      label: `excel rollouts that ended infra_error or env_error (${results.length} through RoutedEnv over ${servers.length} servers, node ${victim.k}'s SIGKILLed)`,
      value: failed.length,
      unit: "rollouts",
      goal: "== 0",
      pass: failed.length === 0,
      ...(failed.length
        ? {
            note: failed
              .slice(0, 3)
              .map((r) => `${r.taskId}: ${r.error}`)
              .join("; "),
          }
        : {}),
    },
    {
      id: "fleet.excel_wrong_rewards",
      label: "excel rewards that differ from the same task's reward in-process",
      value: wrong.length,
      unit: "rewards",
      goal: "== 0",
      pass: wrong.length === 0,
      ...(wrong.length
        ? {
            note: wrong
              .slice(0, 3)
              .map((r) => `${r.taskId}: ${r.reward} vs ${expected.get(r.taskId)} (${r.outcome})`)
              .join("; "),
          }
        : {}),
    },
    {
      id: "fleet.excel_migration_p99_ms",
      label: `excel migration time p99 (rebuilt by replaying the rollout's tool calls; ${ok.length} migrations, ${migrations.length - ok.length} failed)`,
      value: p99,
      unit: "ms",
      goal: "<= 5000",
      pass: ok.length > 0 && p99 <= 5000,
    },
  ];
}

// ---- the run -------------------------------------------------------------------------------------------------
const stepAt = (f) => Math.max(1, Math.floor(STEPS * f));
const FAULTS = {
  kill: stepAt(0.25), // SIGKILL node 1 mid-step
  restart: stepAt(0.4), // node 1's servers again, same addresses
  stop: stepAt(0.55), // SIGSTOP node 2 mid-step
  cont: stepAt(0.7), // SIGCONT node 2
  drain: stepAt(0.85), // SIGTERM node 3 (NODES > 3), else node 0, mid-step
};
const victims = {
  kill: nodes[1 % NODES],
  stop: nodes[2 % NODES],
  drain: nodes[NODES > 3 ? 3 : 0],
  netem: nodes[4 % NODES],
};
const events = [];
const mark = (what, extra = {}) => {
  const e = { what, t: Date.now() / 1000, ...extra };
  events.push(e);
  log(what, JSON.stringify(extra));
  return e;
};

let netemNote = "not tried";
function tryNetem() {
  if (nsReason) {
    netemNote = `skipped: ${nsReason}`;
    return;
  }
  const n = victims.netem;
  const r = sh([
    "ip",
    "netns",
    "exec",
    n.ns,
    "tc",
    "qdisc",
    "add",
    "dev",
    n.nsIf,
    "root",
    "netem",
    "delay",
    "200ms",
    "loss",
    "5%",
  ]);
  netemNote = r.ok ? `200 ms delay and 5 % loss on node ${n.k}` : `skipped: tc netem unavailable here (${r.out})`;
  if (r.ok) mark("netem", { node: n.k });
}

const work = mkdtempSync(join(tmpdir(), "benchmax-fleet-"));
const outFile = join(work, "samples.jsonl");
let result;
try {
  createNodes();
  if (process.env.BENCH_FLEET_EXCEL_ONLY) {
    // the excel part alone (a quicker look at it)
    result = { area: "fleet", figures: await excelFleet() };
    throw Object.assign(new Error("excel only"), { done: true });
  }
  const t0 = Date.now();
  log(`starting ${NODES} nodes × ${PER_NODE} servers${nsReason ? " (no namespaces)" : " (network namespaces)"}…`);
  for (const n of nodes) await startNode(n);
  log(`${NODES * PER_NODE} servers up in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  tryNetem();
  const endpoints = nodes.flatMap((n) => n.servers.map((s) => s.url));
  const driverArgs = [
    join(root, "bench", "fleet-driver.py"),
    "--endpoints",
    endpoints.join(","),
    "--token",
    TOKEN,
    "--steps",
    String(STEPS),
    "--prompts",
    String(PROMPTS),
    "--group",
    String(GROUP),
    "--out",
    outFile,
  ];
  if (process.env.SKYRL_GYM_DIR) driverArgs.push("--skyrl-gym", process.env.SKYRL_GYM_DIR);
  driverArgs.push("--pause-steps", [FAULTS.kill, FAULTS.stop, FAULTS.drain].join(","));
  const driver = spawn(PYTHON, driverArgs, {
    stdio: ["pipe", "pipe", "pipe"],
    env: { ...process.env, PYTHONUNBUFFERED: "1" },
  });
  let driverErr = "";
  driver.stderr.on("data", (d) => {
    driverErr = (driverErr + d).slice(-20000);
  });
  const steps = [];
  let ready;
  let done;
  let rotation;
  const pending = [];
  for await (const line of createInterface({ input: driver.stdout })) {
    let ev;
    try {
      ev = JSON.parse(line);
    } catch {
      continue;
    }
    if (ev.event === "ready") ready = ev;
    if (ev.event === "done") done = ev;
    if (ev.event === "done") log("driver done", JSON.stringify(ev));
    if (ev.event === "step_end") {
      steps.push(ev);
      log(
        `step ${ev.step} (${ev.trainer}): ${ev.samples} samples in ${ev.seconds.toFixed(2)} s${ev.failed ? ` FAILED: ${ev.error}` : ""}`,
      );
    }
    if (ev.event === "step_start" && ev.step === FAULTS.restart) {
      pending.push(
        (async () => {
          await startNode(victims.kill);
          const back = mark("restart", { node: victims.kill.k });
          // back in rotation: the first rollout a client creates on the restarted servers
          for (;;) {
            let created = 0;
            for (const sv of victims.kill.servers)
              created += (await getJson(sv.url, "/metrics")).body?.rolloutsCreated ?? 0;
            if (created > 0) {
              rotation = Date.now() / 1000 - back.t;
              mark("back_in_rotation", { seconds: rotation });
              return;
            }
            if (Date.now() / 1000 - back.t > 120) return;
            await sleep(100);
          }
        })(),
      );
    }
    if (ev.event === "step_start" && ev.step === FAULTS.cont) {
      signalNode(victims.stop, "SIGCONT");
      mark("cont", { node: victims.stop.k });
    }
    if (ev.event !== "mid_step") continue;
    // the driver waits on its stdin: the fault lands while the step's rollouts are live
    if (ev.step === FAULTS.kill) {
      signalNode(victims.kill, "SIGKILL");
      await Promise.all(victims.kill.servers.map(waitExit));
      mark("kill", { node: victims.kill.k });
    }
    if (ev.step === FAULTS.stop) {
      signalNode(victims.stop, "SIGSTOP");
      mark("stop", { node: victims.stop.k });
    }
    if (ev.step === FAULTS.drain) {
      signalNode(victims.drain, "SIGTERM");
      mark("drain", { node: victims.drain.k });
      pending.push(
        (async () => {
          await Promise.all(victims.drain.servers.map(waitExit));
          mark("drained", {
            node: victims.drain.k,
            exits: victims.drain.servers.map((x) => x.exit?.code ?? x.exit?.sig),
          });
        })(),
      );
    }
    driver.stdin.write("go\n");
  }
  const driverCode = await new Promise((r) => (driver.exitCode !== null ? r(driver.exitCode) : driver.once("exit", r)));
  await Promise.race([Promise.all(pending), sleep(30_000)]);
  if (driverCode !== 0 || !ready) throw new Error(`fleet driver exited ${driverCode}: ${driverErr.slice(-3000)}`);

  // ---- leaks: live rollouts left on every server still up ------------------------------------------------------
  signalNode(victims.stop, "SIGCONT");
  let leaked = 0;
  const upServers = nodes.flatMap((n) => n.servers).filter((s) => s.exit === undefined);
  const leakedBy = {};
  for (const sv of upServers) {
    const n = (await getJson(sv.url, "/health")).body?.activeRollouts ?? 0;
    leaked += n;
    if (n) leakedBy[`node ${sv.node.k}`] = (leakedBy[`node ${sv.node.k}`] ?? 0) + n;
  }
  if (leaked) log("left live:", JSON.stringify(leakedBy));
  // what no client holds is the server's to expire: wait for its idle sweep (one idle timeout and a bit)
  let afterSweep = leaked;
  for (let waited = 0; afterSweep > 0 && waited < (IDLE_S + 10) * 1000; waited += 1000) {
    await sleep(1000);
    afterSweep = 0;
    for (const sv of upServers) afterSweep += (await getJson(sv.url, "/health")).body?.activeRollouts ?? 0;
  }
  // rollouts orphaned on the stopped node are released by the client when it can reach it again, or expire there

  // ---- every reward re-checked in-process --------------------------------------------------------------------
  const samples = readFileSync(outFile, "utf8")
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
  const { default: mathModule } = await import("@benchmax/env-math");
  const { combineRewards } = await import("@benchmax/core");
  const env = await mathModule.createEnv({});
  const tasks = new Map((await env.capabilities.tasks.loadTasks()).map((t) => [t.id, t]));
  const weights = env.capabilities?.reward?.weights ?? {};
  let wrong = 0;
  let checked = 0;
  const wrongExamples = [];
  for (const [i, s] of samples.entries()) {
    if (s.lost) continue;
    const task = tasks.get(s.task_id);
    const id = `recheck-${i}`;
    await env.init(id, task);
    const parts = await env.computeReward(id, s.messages, task);
    await env.release(id);
    const total = combineRewards(parts, weights);
    checked++;
    if (Math.abs(total - s.reward) > 1e-9) {
      wrong++;
      if (wrongExamples.length < 3) wrongExamples.push({ task: s.task_id, got: s.reward, inProcess: total });
    }
  }
  await env.close();

  // ---- excel: a smaller fleet, rollouts migrating with their workbook state ------------------------------------
  const excel = EXCEL_PER_NODE > 0 ? await excelFleet() : undefined;

  // ---- figures ---------------------------------------------------------------------------------------------
  const failedSteps = steps.filter((s) => s.failed).length;
  const migrated = samples.filter((s) => s.migrations > 0).length;
  const lost = samples.filter((s) => s.lost).length;
  const migrationS = samples.flatMap((s) => s.migration_s ?? []).sort((a, b) => a - b);
  const pct = (q) =>
    migrationS.length ? migrationS[Math.min(migrationS.length - 1, Math.floor(q * migrationS.length))] : 0;
  const kill = events.find((e) => e.what === "kill");
  const ends = samples.map((s) => s.t_end);
  const rate = (a, b) => ends.filter((t) => t >= a && t < b).length / Math.max(1e-9, b - a);
  const window = 10;
  const before = kill ? rate(kill.t - window, kill.t) : 0;
  const after = kill ? rate(kill.t, kill.t + window) : 0;
  const drained = events.find((e) => e.what === "drained");
  const expected = STEPS * PROMPTS * GROUP;
  const shape = `${NODES} nodes × ${PER_NODE} servers (${nsReason ? `127.0.x.y addresses: ${nsReason}` : "network namespaces"}), ${STEPS} steps of ${PROMPTS} prompts × ${GROUP}; trainers ${ready.trainers.join(", ")}${ready.real_skyrl ? " (SkyRL's own skyrl_gym)" : ""}`;
  const figures = [
    {
      id: "fleet.failed_steps",
      label: "training steps that failed",
      value: failedSteps,
      unit: "steps",
      goal: "== 0",
      pass: failedSteps === 0,
      note: shape,
    },
    {
      id: "fleet.samples",
      label: "samples the trainer got back (every one it asked for)",
      value: samples.length,
      unit: "samples",
      goal: `== ${expected}`,
      pass: samples.length === expected,
    },
    {
      id: "fleet.migrated_samples",
      label: "samples whose rollout migrated off a lost server",
      value: migrated,
      unit: "samples",
    },
    {
      id: "fleet.lost_samples",
      label: "samples lost (not migrated; ended through the trainer's failure path and counted)",
      value: lost,
      unit: "samples",
    },
    {
      id: "fleet.wrong_rewards",
      label: `rewards that differ from an in-process re-check (${checked} checked)`,
      value: wrong,
      unit: "rewards",
      goal: "== 0",
      pass: wrong === 0,
      ...(wrongExamples.length ? { note: JSON.stringify(wrongExamples) } : {}),
    },
    {
      id: "fleet.throughput_after_loss",
      label: `samples/s in the ${window} s after SIGKILL of node ${victims.kill.k}, against the ${window} s before`,
      value: after,
      unit: "samples/s",
      goal: ">= 0.75 × before",
      pass: kill !== undefined && after >= 0.75 * before,
      baseline: { label: `samples/s in the ${window} s before`, value: before },
      ratio: before > 0 ? after / before : 0,
    },
    {
      id: "fleet.migration_p99_s",
      label: `migration time p99 (from the failure seen to the rollout rebuilt; ${migrationS.length} migrations, p50 ${pct(0.5).toFixed(3)} s)`,
      value: pct(0.99),
      unit: "s",
      goal: "<= 1",
      pass: pct(0.99) <= 1,
    },
    {
      id: "fleet.back_in_rotation_s",
      label: `a restarted node back in rotation (first rollout created on it after its servers listen)`,
      value: rotation ?? -1,
      unit: "s",
      goal: "<= 10",
      pass: rotation !== undefined && rotation <= 10,
    },
    {
      id: "fleet.live_after_run",
      label:
        "live rollouts on the servers right after the run (a create a hung server answered after its client gave up)",
      value: leaked,
      unit: "rollouts",
    },
    {
      id: "fleet.leaked_rollouts",
      label: `live rollouts left on the servers at the end (after the servers' ${IDLE_S} s idle expiry)`,
      value: afterSweep,
      unit: "rollouts",
      goal: "== 0",
      pass: afterSweep === 0,
      note: `${done?.orphans_left ?? "?"} rollouts left behind on servers that hung or refused were freed by the client once they answered again (${done?.orphans_freed ?? "?"} at the end of the run)`,
    },
    {
      id: "fleet.drain_exits",
      label: `servers of the drained node that exited 0 (drain grace ${GRACE_S} s${hasDrainFlag ? "" : "; serve has no --drain-grace flag yet"})`,
      value: drained ? drained.exits.filter((c) => c === 0).length : 0,
      unit: "servers",
      goal: `== ${PER_NODE}`,
      pass: drained?.exits.every((c) => c === 0) === true,
      note: `faults: ${events.map((e) => `${e.what}${e.node !== undefined ? ` node ${e.node}` : ""}`).join(", ")}; netem: ${netemNote}`,
    },
  ];
  if (excel) figures.push(...excel);
  result = { area: "fleet", figures };
} catch (e) {
  if (!e.done) throw e;
} finally {
  for (const n of nodes) {
    signalNode(n, "SIGCONT");
    signalNode(n, "SIGKILL");
  }
  await sleep(200);
  removeNodes();
  rmSync(work, { recursive: true, force: true });
}
console.log(JSON.stringify(result));
