#!/usr/bin/env node
// bench-timeout-s: 240
/**
 * SkyRL / cookbook bridge benchmarks (issue 15), Python → `benchmax serve` over loopback:
 * 1. shim step overhead: `BenchmaxTextEnv.step` (the thin client: one POST /v1/rollouts/<id>/step, the server's
 *    episode engine parses the reply and runs a no-op tool) at 64 concurrent episodes, against a raw keep-alive
 *    http.client POST of the same request measured in the same run;
 * 2. group set-up through fork: the cookbook adapter's `make_envs` setup (1 create + fork to 15) vs 16 creates, on
 *    the excel env with a 100 KB workbook (bench/excel.mjs measures env.fork in process; this is the same question
 *    over the wire, as a trainer sees it).
 * Progress goes to stderr; one JSON line to stdout (bench/README.md). Needs python3 ($BENCHMAX_PYTHON).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os, { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { defineEnv, tool } from "@benchmax/core";
import { serveEnv } from "@benchmax/server";
import { z } from "zod";

const log = (...a) => console.error("[bench:skyrl]", ...a);
const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const shimPath = join(root, "packages", "skyrl", "python");
const python = process.env.BENCHMAX_PYTHON ?? "python3";
const EPISODES = Number(process.env.BENCH_EPISODES ?? 64);
const STEPS = Number(process.env.BENCH_STEPS ?? 20);
const GAP_MS = Number(process.env.BENCH_GAP_MS ?? 100);
const tmp = mkdtempSync(join(tmpdir(), "bench-skyrl-"));
const figures = [];

/** Run a Python driver asynchronously (the env server lives in this process: never block its event loop). */
function runPython(code, args) {
  const file = join(tmp, `bench-${Math.random().toString(36).slice(2)}.py`);
  writeFileSync(file, code);
  return new Promise((resolvePy, reject) => {
    const p = spawn(python, [file, ...args], {
      env: { ...process.env, PYTHONPATH: shimPath, PYTHONDONTWRITEBYTECODE: "1" },
    });
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    const timer = setTimeout(() => p.kill("SIGKILL"), 200_000);
    p.on("close", (code) => {
      clearTimeout(timer);
      if (code !== 0) return reject(new Error(`python failed (${code}): ${err.slice(-2000)}`));
      resolvePy(JSON.parse(out.trim().split("\n").pop()));
    });
  });
}

// The Python driver. EPISODES episodes are open at once, each on its own thread (as SkyRL's env workers run
// env.step); between steps each waits a "generation" gap (uniform 0.5×–1.5× GAP_MS: the model samples between env
// steps). Each step is, in random order, once a BenchmaxTextEnv.step and once the same POST sent with a bare
// http.client keep-alive connection (the baseline), on the same rollout: both see the same load. GAP_MS=0 drops
// the gap (every episode steps back to back: queueing included).
const STEP_PY = String.raw`
import http.client, json, random, sys, threading, time
from benchmax_skyrl import BenchmaxTextEnv
url, token, episodes, steps, gap_ms = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
ACTION = '<tool_call>\n{"name": "noop", "arguments": {"x": 1}}\n</tool_call>'
host, port = url.split("//")[1].split(":")
lat = {"raw": [], "shim": []}
lock = threading.Lock()
start = threading.Barrier(episodes)
def episode(i):
    env = BenchmaxTextEnv({"endpoints": url, "token": token, "retries": 0}, {"max_turns": 2 * steps + 5, "extra_info": {"task_id": "t"}})
    env.init([{"role": "user", "content": "x"}])
    conn = http.client.HTTPConnection(host, int(port))
    path = "/v1/rollouts/%s/step" % env.rollout.rollout_id
    headers = {"authorization": "Bearer " + token, "x-rollout-token": env.rollout.token, "content-type": "application/json", "accept": "application/json"}
    body = json.dumps({"action": {"type": "message", "content": ACTION}}).encode()
    rnd = random.Random(i)
    mine = {"raw": [], "shim": []}
    start.wait()
    for _ in range(steps):
        for mode in rnd.sample(["raw", "shim"], 2):
            if gap_ms > 0:
                time.sleep(gap_ms * (0.5 + rnd.random()) / 1000)
            t0 = time.perf_counter()
            if mode == "raw":
                conn.request("POST", path, body=body, headers=headers)
                res = conn.getresponse(); data = res.read()
                assert res.status == 200, data
            else:
                out = env.step(ACTION)
                assert out["done"] is False and out["observations"], out
            mine[mode].append((time.perf_counter() - t0) * 1000)
    conn.close()
    env.close()
    with lock:
        for k in mine: lat[k].extend(mine[k])
threads = [threading.Thread(target=episode, args=(i,)) for i in range(episodes)]
t0 = time.perf_counter()
for t in threads: t.start()
for t in threads: t.join()
wall = time.perf_counter() - t0
out = {}
for k, v in lat.items():
    v.sort()
    q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
    out[k] = {"n": len(v), "p50": q(0.5), "p99": q(0.99), "mean": sum(v) / len(v)}
out["rate"] = (len(lat["raw"]) + len(lat["shim"])) / wall
print(json.dumps(out))
`;

const FORK_PY = `
import json, sys, time
from benchmax_skyrl import BenchmaxClient
from benchmax_skyrl.cookbook import BenchmaxEnvGroupBuilder
url, token, rounds, G = sys.argv[1], sys.argv[2], int(sys.argv[3]), 16
c = BenchmaxClient(url, token=token)
b = BenchmaxEnvGroupBuilder(url, [{"role": "user", "content": "x"}], None, task_id="big", group_size=G, token=token)
for _ in range(3):  # warm-up
    for r in b._setup(): b.client().release(r)
inits, forks = [], []
for _ in range(rounds):
    t0 = time.perf_counter(); rs = [c.create_rollout("big") for _ in range(G)]; inits.append(time.perf_counter() - t0)
    for r in rs: c.release(r)
    t0 = time.perf_counter(); rs = b._setup(); forks.append(time.perf_counter() - t0)
    assert len(rs) == G
    for r in rs: b.client().release(r)
ratios = sorted(f / i for f, i in zip(forks, inits))
med = lambda v: sorted(v)[len(v) // 2]
print(json.dumps({"inits_ms": med(inits) * 1000, "forks_ms": med(forks) * 1000, "ratio": ratios[len(ratios) // 2]}))
`;

const probe = spawnSync(python, ["--version"], { encoding: "utf8" });
if (probe.status !== 0) throw new Error(`${python} is not installed: the SkyRL shim benchmark needs Python 3`);

// 1. step overhead ---------------------------------------------------------------------------------------------
{
  const env = defineEnv({
    name: "noop",
    systemPrompt: "",
    tools: [tool({ name: "noop", description: "no-op", parameters: z.object({ x: z.number() }), execute: () => "ok" })],
    reward: () => ({ r: 1 }),
    loadTasks: async () => [{ id: "t", prompt: "x", groundTruth: null }],
  });
  const server = await serveEnv(env, { port: 0, token: "bench-token", maxRollouts: 4096 });
  try {
    const args = (gap, steps = STEPS) => [server.url, "bench-token", String(EPISODES), String(steps), String(gap)];
    await runPython(STEP_PY, args(GAP_MS, 3)); // warm-up
    const m = await runPython(STEP_PY, args(GAP_MS));
    const sat = await runPython(STEP_PY, args(0));
    const load = os.loadavg()[0].toFixed(1);
    const fmt = (x) => `p50 ${x.p50.toFixed(3)} ms, p99 ${x.p99.toFixed(3)} ms`;
    log(`${EPISODES} episodes, ${GAP_MS} ms gap: shim ${fmt(m.shim)}; raw POST ${fmt(m.raw)} (${m.shim.n} steps each)`);
    log(
      `back to back: shim ${fmt(sat.shim)}; raw ${fmt(sat.raw)}; ${sat.rate.toFixed(0)} steps/s; load ${load} on ${os.cpus().length} CPUs`,
    );
    const note = `${EPISODES} episodes open at once, one thread each, a ${GAP_MS} ms (±50%) generation gap before each step; no-op tool; loopback; shim and raw steps interleaved on the same rollouts; overhead over raw: p50 ${(m.shim.p50 - m.raw.p50).toFixed(3)} ms; 1-min load average ${load} on ${os.cpus().length} CPUs`;
    const base = (x) => ({
      label: "raw http.client keep-alive POST of the same step, same run and load",
      value: Number(x.toFixed(3)),
    });
    figures.push(
      {
        id: "skyrl.shim_step_p50_ms",
        label: `shim step (Python → env server → reply), p50 at ${EPISODES} concurrent episodes`,
        value: Number(m.shim.p50.toFixed(3)),
        unit: "ms",
        goal: "<= 1",
        pass: m.shim.p50 <= 1,
        baseline: base(m.raw.p50),
        ratio: Number((m.shim.p50 / m.raw.p50).toFixed(3)),
        note,
      },
      {
        id: "skyrl.shim_step_p99_ms",
        label: `shim step (Python → env server → reply), p99 at ${EPISODES} concurrent episodes`,
        value: Number(m.shim.p99.toFixed(3)),
        unit: "ms",
        goal: "<= 5",
        pass: m.shim.p99 <= 5,
        baseline: base(m.raw.p99),
        ratio: Number((m.shim.p99 / m.raw.p99).toFixed(3)),
        note,
      },
      {
        id: "skyrl.shim_step_saturated_p50_ms",
        label: `shim step p50 with all ${EPISODES} episodes stepping back to back (no generation gap: queueing included)`,
        value: Number(sat.shim.p50.toFixed(3)),
        unit: "ms",
        baseline: base(sat.raw.p50),
        ratio: Number((sat.shim.p50 / sat.raw.p50).toFixed(3)),
        note: `${sat.rate.toFixed(0)} steps/s in all; p99 shim ${sat.shim.p99.toFixed(2)} ms vs raw ${sat.raw.p99.toFixed(2)} ms`,
      },
    );
  } finally {
    await server.close();
  }
}

// 2. group set-up through fork on excel ----------------------------------------------------------------------------
{
  const { default: excel } = await import("@benchmax/env-excel");
  const pkgDir = dirname(dirname(fileURLToPath(import.meta.resolve("@benchmax/env-excel"))));
  const ExcelJS = createRequire(join(pkgDir, "package.json"))("exceljs");
  const wb = new ExcelJS.Workbook();
  const ws = wb.addWorksheet("Data");
  ws.addRow(["id", "name", "region", "amount"]);
  for (let i = 1; i <= 2600; i++) ws.addRow([i, `Customer ${i}`, ["North", "South"][i % 2], (i * 37.13) % 9973]);
  const input = join(tmp, "big_input.xlsx");
  const buf = Buffer.from(await wb.xlsx.writeBuffer());
  writeFileSync(input, buf);
  writeFileSync(join(tmp, "big_answer.xlsx"), buf);
  const env = excel.createEnv({});
  const task = env.capabilities.tasks.parseTask(
    {
      id: "big",
      prompt: "x",
      ground_truth: { answer_position: "Data!A1:D2601", cases: [{ input, answer: join(tmp, "big_answer.xlsx") }] },
    },
    join(tmp, "rows.jsonl:1"),
  );
  const server = await serveEnv(env, { port: 0, token: "bench-token", tasks: [task], maxRollouts: 4096 });
  try {
    const r = await runPython(FORK_PY, [server.url, "bench-token", "31"]);
    const ratio = r.ratio; // the median of the per-round ratios (both set-ups run back to back in each round)
    log(
      `group of 16 over the wire: fork ${r.forks_ms.toFixed(2)} ms vs 16 creates ${r.inits_ms.toFixed(2)} ms (${ratio.toFixed(3)})`,
    );
    figures.push({
      id: "skyrl.group16_setup_ms",
      label: "cookbook group set-up for G=16 on excel (1 create + fork to 15, Python over loopback)",
      value: Number(r.forks_ms.toFixed(3)),
      unit: "ms",
      goal: "<= 0.25x of 16 creates",
      pass: ratio <= 0.25,
      baseline: { label: "16 creates (init each)", value: Number(r.inits_ms.toFixed(3)) },
      ratio: Number(ratio.toFixed(3)),
      note: `medians over 31 rounds; ${Math.round(buf.length / 1024)} KB workbook; the in-process env.fork figure is excel.fork16_ms`,
    });
  } finally {
    await server.close();
    await env.close?.();
  }
}

rmSync(tmp, { recursive: true, force: true });
process.stdout.write(`${JSON.stringify({ area: "skyrl", figures })}\n`);
