#!/usr/bin/env node
// Issue 25: the cost of `serve --record` plus the Prometheus metrics on whole-episode throughput. The same no-op env
// is served twice, in two child processes — once plain, once with `record: DIR` — and one load generator drives whole
// episodes through the rollout API the SkyRL shim uses (create tagged with a trainer step → three tool calls → reward
// with the conversation → release) on both, alternating rounds (A B, B A, …) so drift hits both alike. From the
// recorded server's warm-up to the end, what watches it in production runs too: a Prometheus scraper reading /metrics
// every second (15x the usual scrape rate) and a `benchmax watch URL` follower on its rollout feed (SSE, from the
// recorder's series: since=series). The recorder keeps the dashboard's series and watch-series.json. Prints one
// JSON line on stdout: episodes/s of each and the ratio recorded / plain (goal ≥ 0.95), and each server process's CPU
// time per episode (process.cpuUsage, read over IPC around each round) and its ratio (goal ≤ 1.05): on a machine
// other jobs load, the CPU figure moves less than the rates do.
import { fork } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const log = (...a) => console.error("[record]", ...a);
const self = fileURLToPath(import.meta.url);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
// warm-up: until each server ran this many episodes (the JIT needs a count, not a time: on a loaded machine 4 s can
// be a hundred episodes), or for WARMUP_MS at most
const WARMUP_EPISODES = Number(process.env.BENCH_WARMUP_EPISODES ?? 6000);
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 25_000);
const MEASURE_MS = Number(process.env.BENCH_MEASURE_MS ?? 1500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const PAIRED_ROUNDS = Number(process.env.BENCH_PAIRED_ROUNDS ?? 8);
// the CPU figure is read from the side-by-side rounds
if (!(PAIRED_ROUNDS >= 1))
  throw new Error(`BENCH_PAIRED_ROUNDS must be 1 or more (got ${process.env.BENCH_PAIRED_ROUNDS})`);
const TOKEN = "bench-token";
const SCRAPE_MS = Number(process.env.BENCH_SCRAPE_MS ?? 1000);
// BENCH_RECORD_PARTS=1: where the recorded server's time per rollout goes, timed in place in the recorded server (one
// call in 64 of each part, times 64; every write): the line's encoding (PendingLines.add), the series, the run's
// aggregates and the batch writes. Off by default: each wrapper adds a call to the measured server.
const PARTS = process.env.BENCH_RECORD_PARTS === "1";

async function child(recordDir) {
  const { serveEnv } = await import("@benchmax/server");
  const live = new Set();
  const result = { content: "ok", isError: false };
  const env = {
    name: "noop",
    systemPrompt: "",
    listTools: () => [{ name: "noop", description: "no-op", parameters: { type: "object" } }],
    init: async (id) => void live.add(id),
    runTool: async (id) => {
      if (!live.has(id)) throw new Error("unknown rollout");
      return result;
    },
    computeReward: async () => ({ r: 1 }),
    release: async (id) => void live.delete(id),
    close: async () => {},
    capabilities: {
      reward: { weights: { r: 1 } },
      tasks: { loadTasks: async () => [{ id: "t", prompt: "Say ok", groundTruth: "ok", meta: { split: "train" } }] },
      explain: { explainReward: () => ({ extracted: "ok", gold: "ok" }) },
    },
  };
  const s = await serveEnv(env, { port: 0, token: TOKEN, ...(recordDir ? { record: recordDir } : {}) });
  // the time the recorder spends on the dashboard's series (their update as each rollout is added, and their
  // checkpoint): summed here, so its share of the recorded server's CPU per episode is read in the same run. Every
  // checkpoint is timed; one update in 64 (times 64), so the clock reads cost the measured server next to nothing.
  // With BENCH_RECORD_PARTS=1, the recorder's other parts are timed the same way (see `PARTS`).
  const rec = s.recorder;
  const timed = {};
  if (rec) {
    timeEvery("series", rec.keeper, "add", 64);
    timeEvery("seriesSave", rec.keeper, "save", 1);
    if (PARTS) {
      // private members of RolloutRecorder, read here only: the line's encoding, the run's aggregates, and each
      // batch's write (the file, then the feed's events to the follower)
      timeEvery("encode", rec.pending, "add", 64);
      timeEvery("aggregates", rec.agg, "add", 64);
      timeEvery("write", rec, "write", 1);
    }
  }
  /**
   * Time one call of `obj[method]` in `every` (counted `every` times) into `timed[name]`: the sum (ms) and each timed
   * call (µs). A plain two-argument wrapper: the generic `(...args) => f(...args)` over a bound method this replaces (a
   * rest array and a spread call per call), timed from outside in place, added about 1.1 µs to the median series
   * update (0.85 µs without it).
   */
  function timeEvery(name, obj, method, every) {
    const f = obj[method];
    const t = (timed[name] = { ms: 0, calls: [] });
    let k = 0;
    obj[method] = function (a, b) {
      if (++k % every !== 0) return f.call(this, a, b);
      const t0 = performance.now();
      try {
        return f.call(this, a, b);
      } finally {
        const d = performance.now() - t0;
        t.ms += every * d;
        if (t.calls.length < 100_000) t.calls.push(1000 * d);
      }
    };
  }
  process.send?.({ port: s.port });
  process.on("message", async (m) => {
    if (m === "cpu") {
      // what the server has written is part of the round's cost: wait for the recorder's queue before reading
      await s.recorder?.flush();
      const u = process.cpuUsage();
      process.send?.({ cpu: u.user + u.system });
    } else if (m === "close") {
      await s.close();
      process.send?.({
        closed: true,
        written: s.recorder?.written ?? 0,
        dropped: s.recorder?.dropped ?? 0,
        // the dashboard's series kept as rollouts are written, and their checkpoint (watch-series.json)
        seriesSaves: s.recorder?.keeper.saves ?? 0,
        seriesSaveMs: s.recorder?.keeper.lastSaveMs ?? 0,
        seriesMs: (timed.series?.ms ?? 0) + (timed.seriesSave?.ms ?? 0),
        parts: Object.fromEntries(
          Object.entries(timed).map(([k, v]) => {
            const xs = v.calls.sort((x, y) => x - y);
            return [k, { ms: v.ms, p50: xs[xs.length >> 1] ?? 0 }];
          }),
        ),
      });
    }
  });
}

function post(agent, port, path, body, headers = {}) {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: "127.0.0.1",
        port,
        path,
        method: "POST",
        headers: {
          authorization: `Bearer ${TOKEN}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(text),
          ...headers,
        },
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const out = Buffer.concat(chunks).toString("utf8");
          if (res.statusCode >= 400) reject(new Error(`${path}: ${res.statusCode} ${out}`));
          else resolve(JSON.parse(out));
        });
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

const MESSAGES = [
  { role: "user", content: "Say ok" },
  { role: "assistant", content: '<tool_call>{"name":"noop","arguments":{"x":1}}</tool_call>' },
  { role: "tool", tool_call_id: "c0", content: "ok" },
  { role: "assistant", content: "<answer>ok</answer>" },
];

async function episode(agent, port, step) {
  const c = await post(agent, port, "/v1/rollouts", { taskId: "t", metadata: { global_step: step } });
  const h = { "x-rollout-token": c.token };
  for (let i = 0; i < 3; i++)
    await post(agent, port, `/v1/rollouts/${c.rolloutId}/call`, { name: "noop", arguments: { x: i } }, h);
  await post(agent, port, `/v1/rollouts/${c.rolloutId}/reward`, { messages: MESSAGES }, h);
  await post(agent, port, `/v1/rollouts/${c.rolloutId}/release`, {}, h);
}

/** The server process's CPU time so far (user + system, µs), once its recorder has written what it queued. */
function cpuOf(c) {
  return new Promise((resolve) => {
    const on = (m) => {
      if (typeof m?.cpu !== "number") return;
      c.off("message", on);
      resolve(m.cpu);
    };
    c.on("message", on);
    c.send("cpu");
  });
}

/**
 * One round on `server`: `CONCURRENCY` clients each running episodes back to back for `ms` (or until `maxEpisodes`
 * ran). Returns the
 * episodes/s and the server process's CPU µs per episode (less sensitive to other jobs on the machine than a rate).
 */
async function load(server, ms, step, maxEpisodes = Number.POSITIVE_INFINITY) {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const cpu0 = await cpuOf(server.c);
  let n = 0;
  const end = performance.now() + ms;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end && n < maxEpisodes) {
        await episode(agent, server.port, step);
        n++;
      }
    }),
  );
  const rate = n / ((performance.now() - t0) / 1000);
  agent.destroy();
  const cpu1 = await cpuOf(server.c);
  return { rate, cpuPerEpisode: (cpu1 - cpu0) / n };
}

/**
 * What watches a recording server while it is measured: /metrics scraped every `SCRAPE_MS`, and the rollout feed
 * followed. Returns a stop function giving the scrape count and the feed events received.
 */
function watchers(port) {
  let scrapes = 0;
  let events = 0;
  const ac = new AbortController();
  const base = `http://127.0.0.1:${port}`;
  const auth = { authorization: `Bearer ${TOKEN}` };
  const timer = setInterval(() => {
    fetch(`${base}/metrics?format=prometheus`, { headers: auth, signal: ac.signal })
      .then((r) => r.text())
      .then(
        () => scrapes++,
        () => {},
      );
  }, SCRAPE_MS);
  const feed = (async () => {
    try {
      const r = await fetch(`${base}/v1/record/feed?since=series`, { headers: auth, signal: ac.signal });
      if (!r.ok) return;
      const dec = new TextDecoder();
      for await (const chunk of r.body) {
        const text = dec.decode(chunk, { stream: true });
        for (let i = text.indexOf("event: rollout"); i >= 0; i = text.indexOf("event: rollout", i + 1)) events++;
      }
    } catch {
      /* aborted at the end of the round */
    }
  })();
  return async () => {
    clearInterval(timer);
    ac.abort();
    await feed;
    return { scrapes, events };
  };
}

async function start(recordDir) {
  const c = fork(self, ["--child", recordDir ?? ""], { stdio: ["ignore", "ignore", "inherit", "ipc"] });
  const [{ port }] = await new Promise((res, rej) => {
    c.once("message", (m) => res([m]));
    c.once("exit", (code) => rej(new Error(`the server process exited (${code}) before it listened`)));
  });
  return { c, port };
}

async function stop(c) {
  const done = new Promise((res) => c.on("message", (m) => m?.closed && res(m)));
  c.send("close");
  const m = await done;
  c.kill();
  return m;
}

async function main() {
  const loadAtStart = loadavg()[0].toFixed(1);
  const dir = mkdtempSync(join(tmpdir(), "bench-record-"));
  const plain = await start(undefined);
  const recorded = await start(join(dir, "run"));
  try {
    // what watches the recorded server runs from its warm-up to the end (as it would in production), so the
    // first fetch in this process (undici loading, JIT) is not charged to the first measured round
    const stopWatchers = watchers(recorded.port);
    await load(plain, WARMUP_MS, 0, WARMUP_EPISODES);
    await load(recorded, WARMUP_MS, 0, WARMUP_EPISODES);
    const a = [];
    const b = [];
    for (let i = 0; i < ROUNDS; i++) {
      // A B, then B A: neither server always runs on the warmer or the colder half of a round
      if (i % 2 === 0) {
        a.push(await load(plain, MEASURE_MS, i));
        b.push(await load(recorded, MEASURE_MS, i));
      } else {
        b.push(await load(recorded, MEASURE_MS, i));
        a.push(await load(plain, MEASURE_MS, i));
      }
      const [x, y] = [a.at(-1), b.at(-1)];
      log(
        `round ${i}: plain ${x.rate.toFixed(0)}/s ${x.cpuPerEpisode.toFixed(0)} µs CPU/episode, --record ${y.rate.toFixed(0)}/s ${y.cpuPerEpisode.toFixed(0)} µs CPU/episode`,
      );
    }
    // side-by-side rounds for the CPU figure: both servers driven at once by the same clients' event loop, so they
    // run at the same moment under the same load from other jobs, and at about the same rate (CPU per episode grows
    // as the rate falls: fewer requests share each wake-up)
    const pa = [];
    const pb = [];
    for (let i = 0; i < PAIRED_ROUNDS; i++) {
      const [x, y] = await Promise.all([load(plain, MEASURE_MS, i), load(recorded, MEASURE_MS, i)]);
      pa.push(x);
      pb.push(y);
      log(
        `side by side ${i}: plain ${x.rate.toFixed(0)}/s ${x.cpuPerEpisode.toFixed(0)} µs CPU/episode, --record ${y.rate.toFixed(0)}/s ${y.cpuPerEpisode.toFixed(0)} µs CPU/episode`,
      );
    }
    const { scrapes, events } = await stopWatchers();
    const med = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];
    await stop(plain.c);
    const rec = await stop(recorded.c);
    const lines = readFileSync(join(dir, "run", "results.jsonl"), "utf8")
      .split("\n")
      .filter(Boolean).length;
    // each round's pair ran back to back: the median of the per-round ratios cancels the drift between rounds
    // (JIT warm-up, other jobs on the machine) that a ratio of the two medians keeps
    const ratio = med(b.map((x, i) => x.rate / a[i].rate));
    const cpuRatio = med(pb.map((x, i) => x.cpuPerEpisode / pa[i].cpuPerEpisode));
    const cpuRatioAlternating = med(b.map((x, i) => x.cpuPerEpisode / a[i].cpuPerEpisode));
    // the series' own time per recorded rollout, against the recorded server's CPU per episode (side by side)
    const seriesUs = (rec.seriesMs * 1000) / Math.max(1, rec.written);
    const seriesShare = seriesUs / med(pb.map((x) => x.cpuPerEpisode));
    // BENCH_RECORD_PARTS: each part's time per recorded rollout (its sampled sum over every rollout written), and the
    // median timed call (per rollout; for a write, per batch)
    const parts = PARTS
      ? `; in place, per rollout (median call in brackets): ${Object.entries(rec.parts)
          .map(
            ([k, v]) =>
              `${k} ${((v.ms * 1000) / Math.max(1, rec.written)).toFixed(2)} µs (${v.p50.toFixed(2)} µs${k === "write" ? " a batch" : k === "seriesSave" ? " a save" : ""})`,
          )
          .join(", ")}`
      : "";
    const load1 = `${loadAtStart} at the start, ${loadavg()[0].toFixed(1)} at the end (${cpus().length} CPUs)`;
    const how = `median of ${ROUNDS} alternating rounds of ${MEASURE_MS} ms, ${CONCURRENCY} clients, after ${WARMUP_EPISODES} warm-up episodes on each server (${WARMUP_MS} ms at most); ratio: median of the per-round ratios; load average ${load1}`;
    const note = `episodes/s: ${how}; ${lines} lines recorded (${rec.written} written, ${rec.dropped} dropped; the dashboard's series kept as they were written and saved to watch-series.json ${rec.seriesSaves} times, the last in ${rec.seriesSaveMs.toFixed(1)} ms: ${seriesUs.toFixed(1)} µs per rollout in all, ${(100 * seriesShare).toFixed(2)} % of the recorded server's CPU per episode); from its warm-up on, /metrics scraped ${scrapes} times and ${events} rollouts followed on the feed`;
    console.log(
      JSON.stringify({
        area: "record",
        figures: [
          {
            id: "record.episodes_per_s",
            label:
              "whole episodes/s with serve --record and Prometheus metrics (create, 3 tool calls, reward, release)",
            value: Number(med(b.map((x) => x.rate)).toFixed(1)),
            unit: "episodes/s",
            goal: ">= 0.95 x without --record",
            pass: ratio >= 0.95,
            baseline: {
              label: "the same server without --record",
              value: Number(med(a.map((x) => x.rate)).toFixed(1)),
            },
            ratio: Number(ratio.toFixed(3)),
            note,
          },
          {
            id: "record.server_cpu_us_per_episode",
            label:
              "server process CPU time (user + system) per whole episode with serve --record, metrics scraped and the feed followed",
            value: Number(med(pb.map((x) => x.cpuPerEpisode)).toFixed(1)),
            unit: "µs/episode",
            goal: "<= 1.05 x without --record",
            pass: cpuRatio <= 1.05,
            baseline: {
              label: "the same server without --record",
              value: Number(med(pa.map((x) => x.cpuPerEpisode)).toFixed(1)),
            },
            ratio: Number(cpuRatio.toFixed(3)),
            note: `process.cpuUsage() in each server process around each round, read once its recorder has written what it queued; median of ${PAIRED_ROUNDS} side-by-side rounds of ${MEASURE_MS} ms (both servers at once, ${CONCURRENCY} clients each); ratio: median of the per-round ratios (the alternating rounds above gave ${cpuRatioAlternating.toFixed(3)}); load average ${load1}${parts}`,
          },
        ],
      }),
    );
  } finally {
    plain.c.kill();
    recorded.c.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--child") await child(process.argv[3] || undefined);
else await main();
