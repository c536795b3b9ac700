#!/usr/bin/env node
// Benchmark of @benchmax/env-wikipedia (build it first: cd envs/wikipedia && npx tsup).
//  1. offline: BM25 (minisearch) over a generated 100k-article corpus — index build time, heap, search p50/p95,
//     against a brute-force scan baseline measured in the same run;
//  2. live: ≥ 50 concurrent reference rollouts through the live backend against a local MediaWiki look-alike —
//     the concurrency cap held, cache hit rate, throughput; baseline: the same run without the response cache.
// Prints progress to stderr and one JSON line to stdout.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { runMany, seededRandom } from "@benchmax/core";
import {
  contextDocs,
  createWikipediaEnv,
  distractorBackend,
  FIXTURE_CORPUS,
  LiveBackend,
  loadCorpus,
  loadWikiTasks,
  OfflineBackend,
  startMockMediaWiki,
  supportingTitleRecall,
} from "@benchmax/env-wikipedia";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc");
const log = (s) => process.stderr.write(`[wikipedia] ${s}\n`);
const figures = [];
const round = (x, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

// ---------- a deterministic synthetic corpus ----------
const rand = seededRandom(7);
const SYL = (
  "ka lo mi ra ven tor bel dun esk hal is jor kel lun mir nor ol pel quar ros salt tib um van wex yar zel bra cin " +
  "dros em far gil ath bor cal dre fen gor hes ith"
).split(" ");
// three syllables of 42: a 74k-word space, so most names are rare words, as on Wikipedia
const syl = () => SYL[Math.floor(rand() * SYL.length)];
const word = () => syl() + syl() + syl();
const VOCAB = Array.from({ length: 30_000 }, word);
const COMMON = (
  "river city company founded born university mountain award capital country people known later built north south " +
  "century population language town village district region province lake valley sea island coast bridge church " +
  "school college railway station road war battle army king queen family son daughter father mother wife husband " +
  "year years first second third new old large small early late"
).split(" ");
// Zipf (s = 1) over the vocabulary: rank r drawn with probability ~ 1 / r
const zipf = () => VOCAB[Math.min(VOCAB.length - 1, Math.floor(VOCAB.length ** rand()) - 1)];
const cap = (w) => w[0].toUpperCase() + w.slice(1);
const KINDS = ["city", "river", "company", "person", "mountain", "university", "novel", "award"];

function generate(n) {
  const titles = new Set();
  const docs = [];
  while (docs.length < n) {
    const t = `${cap(word())} ${cap(word())}${rand() < 0.3 ? ` ${cap(word())}` : ""}`;
    if (titles.has(t)) continue;
    titles.add(t);
    docs.push({ title: t, text: "" });
  }
  for (const d of docs) {
    const kind = KINDS[Math.floor(rand() * KINDS.length)];
    const link = () => docs[Math.floor(rand() * docs.length)].title;
    const sentences = [`${d.title} is a ${kind} ${COMMON[Math.floor(rand() * COMMON.length)]} near ${link()}.`];
    for (let s = 0; s < 3; s++) {
      const words = Array.from({ length: 8 + Math.floor(rand() * 8) }, () =>
        rand() < 0.1 ? COMMON[Math.floor(rand() * COMMON.length)] : zipf(),
      );
      if (rand() < 0.5) words.push(`of ${link()}`);
      sentences.push(`${cap(words.join(" "))}.`);
    }
    d.text = sentences.join(" ");
  }
  return docs;
}

function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

// ---------- 1. offline ----------
const N = 100_000;
log(`generating ${N} articles…`);
let t0 = performance.now();
const docs = generate(N);
log(`generated in ${round((performance.now() - t0) / 1000, 1)} s`);
gc();
const heapBefore = process.memoryUsage().heapUsed;
t0 = performance.now();
const backend = new OfflineBackend(docs);
const buildMs = performance.now() - t0;
gc();
const heapMb = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20;
log(`index built in ${round(buildMs / 1000, 2)} s, +${round(heapMb, 0)} MB heap`);

const qr = seededRandom(99);
const pickDoc = () => docs[Math.floor(qr() * docs.length)];
const queries = [];
const kindNames = ["entity name", "entity + common word", "question-like", "distinctive body words"];
for (let i = 0; i < 400; i++) {
  const d = pickDoc();
  const kind = i % 4;
  if (kind === 0) queries.push(d.title);
  else if (kind === 1) queries.push(`${d.title} ${COMMON[i % COMMON.length]}`);
  else if (kind === 2)
    queries.push(`which ${KINDS[i % KINDS.length]} of the ${COMMON[(i * 7) % COMMON.length]} is near ${d.title}`);
  else {
    // two of the article's rarer body words, as someone remembering a phrase would type
    const words = d.text
      .toLowerCase()
      .split(/[^a-z]+/)
      .filter(Boolean);
    const rare = [...new Set(words)]
      .filter((w) => backend.docFreq(w) > 0)
      .sort((a, b) => backend.docFreq(a) - backend.docFreq(b))
      .slice(0, 2);
    queries.push(rare.join(" "));
  }
}
// the worst case, reported apart: queries made only of very common words
const commonOnly = Array.from(
  { length: 20 },
  (_, i) => `${COMMON[i % COMMON.length]} ${COMMON[(i * 5 + 3) % COMMON.length]} ${VOCAB[i]}`,
);
for (const q of queries.slice(0, 20)) backend.searchSync(q, 10); // warm-up
const times = [];
const byKind = [[], [], [], []];
let top1 = 0;
for (const [i, q] of queries.entries()) {
  const s = performance.now();
  const hits = backend.searchSync(q, 10);
  const ms = performance.now() - s;
  times.push(ms);
  byKind[i % 4].push(ms);
  if (i % 4 === 0 && hits[0]?.title === q) top1++;
}
const p50 = percentile(times, 50);
const p95 = percentile(times, 95);
log(`p50 by query kind: ${byKind.map((k, i) => `${kindNames[i]} ${round(percentile(k, 50))} ms`).join(", ")}`);
log(`search p50 ${round(p50)} ms, p95 ${round(p95)} ms; entity top-1 ${top1}/100`);
const commonTimes = commonOnly.map((q) => {
  const s = performance.now();
  backend.searchSync(q, 10);
  return performance.now() - s;
});
const commonP50 = percentile(commonTimes, 50);
log(`common-words-only queries p50 ${round(commonP50)} ms`);

// baseline: brute-force scan counting query-term hits in every document
const lower = docs.map((d) => `${d.title} ${d.text}`.toLowerCase());
const scanTimes = [];
for (const q of queries.slice(0, 12)) {
  const terms = q
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w.length > 2);
  const s = performance.now();
  const scores = [];
  for (let i = 0; i < lower.length; i++) {
    let sc = 0;
    for (const t of terms) if (lower[i].includes(t)) sc++;
    if (sc) scores.push([sc, i]);
  }
  scores.sort((a, b) => b[0] - a[0]);
  scanTimes.push(performance.now() - s);
}
const scanP50 = percentile(scanTimes, 50);
log(`baseline scan p50 ${round(scanP50)} ms`);

figures.push(
  {
    id: "wikipedia.offline_search_p50_ms",
    label: `offline BM25 search p50, ${N / 1000}k-article corpus (~50 words each), top 10 with snippets`,
    value: round(p50),
    unit: "ms",
    goal: "<= 2",
    pass: p50 <= 2,
    baseline: { label: "brute-force substring scan p50", value: round(scanP50) },
    ratio: round(p50 / scanP50, 4),
  },
  { id: "wikipedia.offline_search_p95_ms", label: "offline BM25 search p95", value: round(p95), unit: "ms" },
  {
    id: "wikipedia.offline_search_common_only_p50_ms",
    label: "offline search p50, worst case: queries of very common words only",
    value: round(commonP50),
    unit: "ms",
  },
  ...byKind.map((k, i) => ({
    id: `wikipedia.offline_search_p50_${["entity", "entity_common", "question", "body_words"][i]}_ms`,
    label: `offline search p50, ${kindNames[i]} queries`,
    value: round(percentile(k, 50)),
    unit: "ms",
  })),
  {
    id: "wikipedia.offline_index_build_s",
    label: `index build, ${N / 1000}k articles`,
    value: round(buildMs / 1000, 2),
    unit: "s",
  },
  { id: "wikipedia.offline_index_heap_mb", label: "heap used by corpus + index", value: round(heapMb, 0), unit: "MB" },
  {
    id: "wikipedia.offline_entity_top1",
    label: "entity-name queries with the entity ranked first",
    value: round(top1 / 100, 3),
    unit: "fraction",
  },
);

// ---------- 2. live ----------
const fixtureDocs = await loadCorpus(FIXTURE_CORPUS);
const CAP = 8;
async function liveRun({ cache, dir, reuse }) {
  const server = reuse ?? (await startMockMediaWiki({ docs: fixtureDocs, latencyMs: 15 }));
  const logBefore = server.log.length;
  const cacheDir = cache ? (dir ?? (await mkdtemp(join(tmpdir(), "bench-wiki-cache-")))) : undefined;
  const live = new LiveBackend({
    baseUrl: server.baseUrl,
    concurrency: CAP,
    ...(cache ? { cacheDir } : { memoryCacheSize: 0 }),
  });
  const env = await createWikipediaEnv({ backendInstance: live });
  const tasks = await env.capabilities.tasks.loadTasks();
  const s = performance.now();
  const { results } = await runMany(env, tasks, env.capabilities.reference.referencePolicy(), {
    group: 2,
    concurrency: 64,
    maxTurns: 12,
    retries: 0,
  });
  const ms = performance.now() - s;
  const out = {
    rollouts: results.length,
    ms: Math.round(ms),
    em: results.filter((r) => r.rewards?.exact_match === 1).length / results.length,
    outcomes: [...new Set(results.map((r) => r.outcome))],
    serverRequests: server.log.length - logBefore,
    serverMaxConcurrent: server.maxConcurrent,
    ...live.stats,
    hitRate: live.hitRate,
  };
  await env.close();
  if (!reuse) await server.close();
  return { ...out, cacheDir, server };
}
log("live: reference rollouts against a local MediaWiki (15 ms latency per request)…");
const server = await startMockMediaWiki({ docs: fixtureDocs, latencyMs: 15 });
const cached = await liveRun({ cache: true, reuse: server });
log(`live, cache on:  ${JSON.stringify({ ...cached, server: undefined })}`);
const uncached = await liveRun({ cache: false });
const warm = await liveRun({ cache: true, dir: cached.cacheDir, reuse: server });
await server.close();
log(`live, warm disk cache (fresh backend, same cacheDir): ${JSON.stringify({ ...warm, server: undefined })}`);
await rm(cached.cacheDir, { recursive: true, force: true });
log(`live, cache off: ${JSON.stringify({ ...uncached, server: undefined })}`);
const maxSeen = Math.max(cached.serverMaxConcurrent, uncached.serverMaxConcurrent);
figures.push(
  {
    id: "wikipedia.live_rollouts_per_s",
    label: `live backend: ${cached.rollouts} reference rollouts, 64 at once, <= ${CAP} requests in flight, cache on`,
    value: round(cached.rollouts / (cached.ms / 1000), 1),
    unit: "rollouts/s",
    baseline: { label: "same run, response cache off", value: round(uncached.rollouts / (uncached.ms / 1000), 1) },
    ratio: round(uncached.ms / cached.ms, 2),
    note: `exact_match ${cached.em} (cache off: ${uncached.em}); outcomes ${cached.outcomes.join(",")}`,
  },
  {
    id: "wikipedia.live_cache_hit_rate",
    label: "live backend: requests answered from the cache (memory, disk or an identical request in flight)",
    value: round(cached.hitRate, 3),
    unit: "fraction",
    note: `${cached.requests} backend requests, ${cached.httpRequests} over HTTP (cache off: ${uncached.httpRequests} HTTP of ${uncached.requests}, ${uncached.coalesced} coalesced)`,
  },
  {
    id: "wikipedia.live_warm_disk_cache_hit_rate",
    label: "live backend: the same run again on a fresh backend sharing the on-disk cache",
    value: round(warm.hitRate, 3),
    unit: "fraction",
    note: `${warm.diskHits} disk hits, ${warm.serverRequests} HTTP requests, exact_match ${warm.em}`,
  },
  {
    id: "wikipedia.live_max_in_flight",
    label: `live backend: most requests the local wiki saw at once (cap ${CAP})`,
    value: maxSeen,
    unit: "requests",
    goal: `<= ${CAP}`,
    pass: maxSeen <= CAP,
  },
);

// ---------- distractor setting: per-task search set-up, and ranking of the supporting titles ----------
{
  // HotpotQA-sized contexts: 10 paragraphs of 4-6 sentences of ~22 words (real dev rows: 10 paragraphs, ~40 sentences)
  const words = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}`);
  const sentence = () => Array.from({ length: 22 }, () => words[Math.floor(rand() * words.length)]).join(" ");
  const synth = Array.from({ length: 2000 }, (_, i) => ({
    id: `d${i}`,
    prompt: sentence(),
    groundTruth: ["x"],
    meta: {
      shape: "hotpotqa",
      context: Array.from({ length: 10 }, (_, j) => ({
        title: `Article ${i}-${j}`,
        sentences: Array.from({ length: 4 + (j % 3) }, () => ` ${sentence()}.`),
      })),
    },
  }));
  for (const t of synth.slice(0, 50)) distractorBackend(t); // warm-up
  const times = [];
  for (const t of synth) {
    const t0 = performance.now();
    distractorBackend(t);
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  const p50 = times[Math.floor(times.length / 2)];
  const p99 = times[Math.floor(times.length * 0.99)];
  // baseline: indexing the same paragraphs as one shared corpus, per task (what a fullwiki corpus of them costs)
  const allDocs = synth.flatMap((t) => contextDocs(t.meta.context));
  const t0 = performance.now();
  new OfflineBackend(allDocs);
  const sharedPerTask = (performance.now() - t0) / synth.length;
  log(
    `distractor set-up p50 ${p50.toFixed(3)} ms, p99 ${p99.toFixed(3)} ms; shared index ${sharedPerTask.toFixed(3)} ms/task`,
  );
  figures.push({
    id: "wikipedia.distractor_setup_ms",
    label: "distractor setting: search set-up per task (BM25 over its 10 paragraphs), p50",
    value: round(p50, 3),
    unit: "ms",
    goal: "<= 1",
    pass: p50 <= 1,
    baseline: {
      label: "same run, the same paragraphs indexed as one shared corpus, per task",
      value: round(sharedPerTask, 3),
    },
    ratio: round(p50 / sharedPerTask, 2),
    note: `p99 ${round(p99, 3)} ms over ${synth.length} tasks`,
  });

  // ranking on the fixture rows with context (HotpotQA, 2Wiki, MuSiQue): fullwiki over the fixture corpus, over a
  // corpus built from the rows' own contexts, and the distractor setting
  const tasks = (await loadWikiTasks()).filter((t) => t.meta.context?.length && t.meta.supportingTitles?.length);
  const seen = new Set();
  const ctxDocs = tasks
    .flatMap((t) => contextDocs(t.meta.context))
    .filter((d) => !seen.has(d.title) && seen.add(d.title));
  const fixtureCorpus = await OfflineBackend.fromPath(FIXTURE_CORPUS);
  const ctxCorpus = new OfflineBackend(ctxDocs);
  const runs = [
    ["fixture corpus (173 articles)", () => fixtureCorpus],
    [`corpus built from the contexts (${ctxDocs.length} paragraphs)`, () => ctxCorpus],
    ["distractor setting (each task's own paragraphs)", distractorBackend],
  ];
  for (const [label, backendFor] of runs) {
    const r = await supportingTitleRecall(tasks, backendFor, [5, 10]);
    const [at5, at10] = r.recall;
    log(`ranking, ${label}: top5 ${at5.titlesFound}/${r.titles}, top10 ${at10.titlesFound}/${r.titles}`);
    figures.push({
      id: `wikipedia.support_recall_top5.${label.split(" ")[0]}`,
      label: `supporting titles in the top 5 / top 10 for the raw question — ${label}`,
      value: round(at5.titlesFound / r.titles, 3),
      unit: "fraction (top 5)",
      note: `top 5: ${at5.titlesFound} of ${r.titles} titles (${at5.tasksComplete} of ${r.tasks} tasks complete); top 10: ${at10.titlesFound} of ${r.titles} (${at10.tasksComplete} tasks)`,
    });
  }
}

process.stdout.write(`${JSON.stringify({ area: "wikipedia", figures })}\n`);
