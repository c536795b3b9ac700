#!/usr/bin/env node
// Core benchmarks (issue 3): tool-call dispatch overhead, `benchmax eval math` over 1,000 rollouts end to end,
// and 100,000 concurrent math rollouts alive in one process. Prints one JSON line on stdout (bench/README.md).
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { defineEnv, Episode, extractToolCalls, runMany, runRollout, tool } from "@benchmax/core";
import { z } from "zod";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const log = (...a) => console.error("[core]", ...a);
const figures = [];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// 1. Tool-call overhead through the runner's dispatch: a reply with K no-op calls vs a reply with none.
async function dispatchOverhead() {
  const noop = tool({ name: "noop", description: "does nothing", parameters: z.object({}), execute: () => "" });
  const env = defineEnv({ name: "noop", systemPrompt: "", tools: [noop], reward: () => ({ r: 1 }) });
  const K = 2000;
  const calls = Array.from({ length: K }, (_, i) => ({
    id: `c${i}`,
    type: "function",
    function: { name: "noop", arguments: "{}" },
  }));
  const withCalls = { role: "assistant", content: null, tool_calls: calls };
  const policy = (msg) => ({
    name: "fixed",
    act: async ({ turn }) => ({ message: turn === 0 ? msg : { role: "assistant", content: "done" } }),
  });
  const task = { id: "t", prompt: "x", groundTruth: null };
  const withP = policy(withCalls);
  const withoutP = policy({ role: "assistant", content: "done" });
  for (let i = 0; i < 20; i++) {
    await runRollout(env, task, withP, { toolFormat: "openai", rolloutId: `w${i}` });
    await runRollout(env, task, withoutP, { toolFormat: "openai", rolloutId: `x${i}` });
  }
  const per = [];
  for (let i = 0; i < 60; i++) {
    let t = performance.now();
    await runRollout(env, task, withP, { toolFormat: "openai", rolloutId: `a${i}` });
    const a = performance.now() - t;
    t = performance.now();
    await runRollout(env, task, withoutP, { toolFormat: "openai", rolloutId: `b${i}` });
    const b = performance.now() - t;
    per.push(((a - b) / K) * 1000);
  }
  // same-run baseline: the bare tool function called directly
  let t = performance.now();
  const N = 200_000;
  for (let i = 0; i < N; i++) noop.execute({}, { state: {}, rolloutId: "r", signal: undefined });
  const direct = ((performance.now() - t) / N) * 1000;
  // and the parser alone
  t = performance.now();
  for (let i = 0; i < 20; i++) extractToolCalls(withCalls, "openai", 0);
  const parse = ((performance.now() - t) / (20 * K)) * 1000;
  const value = median(per);
  figures.push({
    id: "core.tool_call_overhead_us",
    label: "in-process tool-call overhead through the runner's dispatch (no-op tool), median",
    value: +value.toFixed(2),
    unit: "µs",
    goal: "<= 20",
    pass: value <= 20,
    baseline: { label: "bare no-op function call", value: +direct.toFixed(3) },
    ratio: +(value / Math.max(direct, 1e-3)).toFixed(1),
    note: `tool-call parsing alone ${parse.toFixed(2)} µs/call`,
  });
  log(`dispatch overhead ${value.toFixed(2)} µs/call (parse ${parse.toFixed(2)} µs)`);

  // the same through the engine a transport drives: Episode.start → step(reply with K calls) vs step(plain reply)
  const episodeOnce = async (msg, id) => {
    const ep = await Episode.start(env, task, { toolFormat: "openai", rolloutId: id });
    await ep.step(msg);
    if (!ep.done) await ep.step({ role: "assistant", content: "done" });
    await ep.close();
  };
  const done = { role: "assistant", content: "done" };
  for (let i = 0; i < 20; i++) {
    await episodeOnce(withCalls, `ew${i}`);
    await episodeOnce(done, `ex${i}`);
  }
  const perEp = [];
  for (let i = 0; i < 60; i++) {
    let t0 = performance.now();
    await episodeOnce(withCalls, `ea${i}`);
    const a = performance.now() - t0;
    t0 = performance.now();
    await episodeOnce(done, `eb${i}`);
    const b = performance.now() - t0;
    perEp.push(((a - b) / K) * 1000);
  }
  const ev = median(perEp);
  figures.push({
    id: "core.episode_step_overhead_us",
    label: "in-process tool-call overhead through Episode.step (the engine transports drive), no-op tool, median",
    value: +ev.toFixed(2),
    unit: "µs",
    goal: "<= 20",
    pass: ev <= 20,
    baseline: { label: "bare no-op function call", value: +direct.toFixed(3) },
    ratio: +(ev / Math.max(direct, 1e-3)).toFixed(1),
  });
  log(`Episode.step overhead ${ev.toFixed(2)} µs/call`);
}

// 2. `benchmax eval math` over 1,000 rollouts, end to end (process start included).
function evalMath() {
  const dir = mkdtempSync(join(tmpdir(), "bmx-bench-"));
  const data = join(dir, "arith1000.jsonl");
  const rows = [];
  for (let i = 0; i < 1000; i++) {
    const a = (i * 37) % 997;
    const b = ((i * 91) % 89) + 1;
    const op = ["+", "-", "*", "/"][i % 4];
    const exact = op === "+" ? a + b : op === "-" ? a - b : op === "*" ? a * b : a / b;
    rows.push(JSON.stringify({ task: `${a} ${op} ${b}`, answer: String(+exact.toFixed(6)) }));
  }
  writeFileSync(data, `${rows.join("\n")}\n`);
  const bin = join(root, "packages/cli/bin/benchmax.js");
  const t0 = performance.now();
  const base = spawnSync(process.execPath, [bin, "--version"], { cwd: root, encoding: "utf8" });
  const startup = performance.now() - t0;
  if (base.status !== 0) throw new Error(`benchmax --version failed: ${base.stderr}`);
  const t1 = performance.now();
  const r = spawnSync(
    process.execPath,
    [
      bin,
      "eval",
      "math",
      "--dataset",
      data,
      "--allow-oracle",
      "--out",
      join(dir, "run"),
      "--concurrency",
      "64",
      "--json",
      "--quiet",
    ],
    { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 },
  );
  const secs = (performance.now() - t1) / 1000;
  if (r.status !== 0) throw new Error(`eval math failed: ${r.stderr.slice(0, 500)}`);
  const s = JSON.parse(r.stdout);
  figures.push({
    id: "core.eval_math_1000_s",
    label: "`benchmax eval math` over 1,000 rollouts, reference policy, end to end",
    value: +secs.toFixed(2),
    unit: "s",
    goal: "<= 5",
    pass: secs <= 5 && s.n === 1000 && s.outcomes.completed === 1000,
    baseline: { label: "`benchmax --version` (process start)", value: +(startup / 1000).toFixed(2) },
    ratio: +(secs / (startup / 1000)).toFixed(1),
    note: `n=${s.n}, completed=${s.outcomes.completed}, mean reward ${s.reward.mean}`,
  });
  log(`eval math 1000: ${secs.toFixed(2)} s (startup ${(startup / 1000).toFixed(2)} s), reward ${s.reward.mean}`);
}

// 3. 100,000 concurrent math rollouts alive (initialised, mid-episode), RSS per rollout.
async function concurrentRollouts() {
  const math = (await import("@benchmax/env-math")).default;
  const env = await math.createEnv();
  const N = Number(process.env.BENCH_ROLLOUTS ?? 100_000);
  const tasks = Array.from({ length: N }, (_, i) => ({
    id: `c${i}`,
    prompt: `${i} + 1`,
    groundTruth: { kind: "arithmetic", answer: String(i + 1) },
  }));
  let release;
  const gate = new Promise((r) => (release = r));
  let parked = 0;
  let allParked;
  const allIn = new Promise((r) => (allParked = r));
  const policy = {
    name: "parked",
    async act({ turn, task }) {
      if (turn === 0) {
        return {
          message: {
            role: "assistant",
            content: `<tool_call>\n{"name": "calculator", "arguments": {"expression": "${task.prompt}"}}\n</tool_call>`,
          },
        };
      }
      if (++parked === N) allParked();
      await gate;
      return { message: { role: "assistant", content: `<answer>${task.groundTruth.answer}</answer>` } };
    },
  };
  global.gc?.();
  await new Promise((r) => setTimeout(r, 50));
  const rss0 = process.memoryUsage().rss;
  const heap0 = process.memoryUsage().heapUsed;
  const run = runMany(env, tasks, policy, { concurrency: N, keepMessages: false });
  await allIn;
  global.gc?.();
  const rss1 = process.memoryUsage().rss;
  const heap1 = process.memoryUsage().heapUsed;
  release();
  const { results } = await run;
  const perRss = (rss1 - rss0) / N;
  const perHeap = (heap1 - heap0) / N;
  const ok = results.filter((r) => r.outcome === "completed").length;
  figures.push({
    id: "core.concurrent_rollouts_rss_bytes",
    label: `${N.toLocaleString("en")} concurrent math rollouts alive in one process (mid-episode): RSS per rollout`,
    value: Math.round(perRss),
    unit: "B",
    goal: "< 8192",
    pass: perRss < 8192 && ok === N,
    note: `heap per rollout ${Math.round(perHeap)} B; ${ok}/${N} completed after release`,
  });
  log(`${N} concurrent: ${Math.round(perRss)} B RSS / rollout, ${Math.round(perHeap)} B heap; completed ${ok}`);
  await env.close();
}

// 4. Two V8 costs of Node 20 that the hot paths avoid (each measured beside its replacement in the same run):
// an object literal that starts with a spread and then adds properties (`{ ...a, x, y }`) pays for every added
// property, where `Object.assign({}, a, { x, y })` does not; and a long-lived (old-generation) Map with an insert and a
// delete per operation, where a slot array with a free list does not.
function v8Costs() {
  const N = 200_000;
  const cpuNs = (f) => {
    const c0 = process.cpuUsage();
    f();
    const c = process.cpuUsage(c0);
    return ((c.user + c.system) * 1000) / N;
  };
  const base = { observations: [], tools: [], done: true, outcome: "completed" };
  let sink;
  const spread = () => {
    for (let i = 0; i < N; i++) sink = { ...base, reward: i, passed: true, from: 1, origin: "reset" };
  };
  const assign = () => {
    for (let i = 0; i < N; i++) sink = Object.assign({}, base, { reward: i, passed: true, from: 1, origin: "reset" });
  };
  const keys = Array.from({ length: 1024 }, (_, i) => `r_${i.toString(36).padStart(16, "0")}`);
  const map = new Map();
  const slots = [];
  const free = [];
  const mapChurn = () => {
    for (let i = 0; i < N; i++) {
      const k = keys[i & 1023];
      map.set(k, i);
      map.delete(k);
    }
  };
  const slotChurn = () => {
    for (let i = 0; i < N; i++) {
      const at = free.pop() ?? slots.length;
      slots[at] = { i };
      slots[at] = undefined;
      free.push(at);
    }
  };
  // promote the containers to the old generation, as a server's are
  for (let i = 0; i < 3; i++) new Array(4e6).fill(i);
  const rounds = { spread: [], assign: [], mapChurn: [], slotChurn: [] };
  for (let r = 0; r < 7; r++) {
    rounds.spread.push(cpuNs(spread));
    rounds.assign.push(cpuNs(assign));
    rounds.mapChurn.push(cpuNs(mapChurn));
    rounds.slotChurn.push(cpuNs(slotChurn));
  }
  void sink;
  const m = Object.fromEntries(Object.entries(rounds).map(([k, v]) => [k, median(v)]));
  figures.push({
    id: "core.v8_spread_first_literal_ns",
    label: "{ ...a, 4 more properties } (ns per object) against Object.assign({}, a, {4 properties}), same run",
    value: Math.round(m.spread),
    unit: "ns",
    baseline: { label: "Object.assign({}, a, { ... })", value: Math.round(m.assign) },
    ratio: Math.round((m.spread / m.assign) * 10) / 10,
    note: `Node ${process.version}; the hot paths use the baseline's form`,
  });
  figures.push({
    id: "core.v8_old_map_churn_ns",
    label: "long-lived Map: one set and one delete (ns) against a slot array with a free list, same run",
    value: Math.round(m.mapChurn),
    unit: "ns",
    baseline: { label: "slot array + free list", value: Math.round(m.slotChurn) },
    ratio: Math.round((m.mapChurn / m.slotChurn) * 10) / 10,
    note: `Node ${process.version}; the server's final states and MCP requests in flight use the baseline's form`,
  });
  log(
    `spread-first literal ${m.spread.toFixed(0)} ns vs Object.assign ${m.assign.toFixed(0)} ns; old Map churn ${m.mapChurn.toFixed(0)} ns vs slots ${m.slotChurn.toFixed(0)} ns`,
  );
}

const steps = [
  ["v8", v8Costs],
  ["dispatch", dispatchOverhead],
  ["eval", evalMath],
  ["concurrent", concurrentRollouts],
];
for (const [name, fn] of steps) {
  try {
    await fn();
  } catch (e) {
    log(`${name} failed: ${e.message}`);
    figures.push({
      id: `core.${name}`,
      label: `${name} benchmark`,
      value: null,
      unit: "",
      pass: false,
      note: `failed: ${e.message}`,
    });
  }
}
process.stdout.write(`${JSON.stringify({ area: "core", figures })}\n`);
