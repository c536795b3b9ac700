#!/usr/bin/env node
// Issue 26: `benchmax rescore` of a 10,000-rollout excel run against re-running the same rollouts with the reference
// policy, same run, same machine.
//
// 1. Re-run (the baseline): the reference policy on a sample of the fixture tasks, G rollouts each, through runMany
//    into a run dir that keeps the final-state artifacts (what `benchmax eval` does). Its time per rollout is
//    extrapolated to the 10,000 rollouts (re-running all 10,000 would take most of an hour here).
// 2. The 10,000-rollout run: the sample's result lines repeated (distinct rollout ids, the same tasks) to 10,000, each
//    naming the artifacts its task's rollouts stored. This is what a 10,000-rollout eval of the reference policy
//    writes: its rollouts of one task end in the same workbook (the sample's G > 1 checks it: the run dir holds one
//    copy per task, not one per rollout).
// 3. Rescore all 10,000 (core's rescoreRunDir, what `benchmax rescore` runs): stored workbooks restored, the reward
//    computed once per distinct (task, conversation, final state) and given to the rollouts that share it.
// Also reported (no goal): rescore with --no-dedup on the sample, per rollout, beside the re-run per rollout: what a
// run of all-distinct rollouts gains (the reward itself is most of an excel rollout's cost).
//
// BENCH_SMOKE=1 (or BENCH_RESCORE_ROLLOUTS / BENCH_RESCORE_TASKS) makes a smaller run for the CI smoke.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { datasetHash, RunDir, rescoreRunDir, runMany } from "@benchmax/core";
import excel from "@benchmax/env-excel";

const log = (...a) => console.error("[rescore]", ...a);
const SMOKE = process.env.BENCH_SMOKE === "1";
const ROLLOUTS = Number(process.env.BENCH_RESCORE_ROLLOUTS ?? (SMOKE ? 2000 : 10000));
const TASKS = Number(process.env.BENCH_RESCORE_TASKS ?? (SMOKE ? 4 : 8));
const GROUP = 2;

const root = mkdtempSync(join(tmpdir(), "benchmax-bench-rescore-"));
const env = await excel.createEnv({});
try {
  const all = await env.capabilities.tasks.loadTasks();
  const tasks = all.slice(0, TASKS);
  const identity = (n, policy) => ({
    env: env.name,
    dataset: "fixtures",
    datasetHash: datasetHash(tasks),
    tasks: tasks.length,
    group: n / tasks.length,
    expectedRollouts: n,
    completed: true,
    policy,
    config: { maxTurns: 10, toolFormat: "hermes", split: null, envOptions: {}, limit: TASKS },
  });

  // 1. the baseline: re-running rollouts with the reference policy (sequential, like the rescore below)
  const sample = RunDir.create(join(root, "sample"));
  sample.writeIdentity(identity(tasks.length * GROUP, "reference"));
  const policy = env.capabilities.reference.referencePolicy();
  // warm-up: worker pools, module caches
  await runMany(env, tasks.slice(0, 1), policy, { concurrency: 1 });
  let t0 = performance.now();
  const run = await runMany(env, tasks, policy, {
    group: GROUP,
    concurrency: 1,
    resultsPath: sample.resultsPath,
    artifacts: sample,
  });
  const rerunMs = performance.now() - t0;
  const rows = sample.results();
  const perRerun = rerunMs / rows.length;
  const passed = rows.filter((r) => r.reward === 1).length;
  const stored = readdirSync(sample.artifactsDir).length;
  log(`re-run: ${rows.length} rollouts in ${rerunMs.toFixed(0)} ms (${perRerun.toFixed(1)} ms each), ${passed} passed`);
  log(`artifacts stored: ${stored} for ${rows.length} rollouts of ${tasks.length} tasks`);
  if (passed !== rows.length) throw new Error(`the reference policy failed ${rows.length - passed} rollouts`);
  if (run.aggregate.firstError) throw new Error(run.aggregate.firstError);

  // 2. the 10,000-rollout run dir: the sample's lines repeated with distinct rollout ids
  const big = RunDir.create(join(root, "big"));
  big.writeIdentity(identity(ROLLOUTS, "reference"));
  for (const f of readdirSync(sample.artifactsDir)) {
    await big.put(readFileSync(join(sample.artifactsDir, f)));
  }
  const lines = [];
  for (let i = 0; i < ROLLOUTS; i++) {
    const r = rows[i % rows.length];
    const k = Math.floor(i / rows.length);
    lines.push(
      JSON.stringify({ ...r, rolloutId: `${r.taskId}#${k * GROUP + r.sample}`, sample: k * GROUP + r.sample }),
    );
  }
  writeFileSync(big.resultsPath, `${lines.join("\n")}\n`);

  // 3. rescore the 10,000
  t0 = performance.now();
  const res = await rescoreRunDir(env, big.dir, tasks, { out: join(root, "big-new"), concurrency: 4 });
  const rescoreMs = performance.now() - t0;
  log(
    `rescore: ${res.rescored} rollouts in ${rescoreMs.toFixed(0)} ms, ${res.computed} rewards computed, ${res.changed} changed`,
  );
  if (res.rescored !== ROLLOUTS || res.changed !== 0) throw new Error(`rescore: ${JSON.stringify(res)}`);

  // per distinct rollout: rescore of the sample with --no-dedup
  t0 = performance.now();
  const nd = await rescoreRunDir(env, sample.dir, tasks, {
    out: join(root, "sample-new"),
    concurrency: 1,
    dedup: false,
  });
  const perRescoreNoDedup = (performance.now() - t0) / nd.rescored;
  if (nd.changed !== 0) throw new Error(`rescore --no-dedup changed ${nd.changed} rewards`);
  log(`rescore --no-dedup: ${perRescoreNoDedup.toFixed(1)} ms per rollout`);

  const rerunExtrapolated = perRerun * ROLLOUTS;
  const ratio = rerunExtrapolated / rescoreMs;
  console.log(
    JSON.stringify({
      area: "rescore",
      figures: [
        {
          id: "rescore.speedup_vs_rerun",
          label: `rescore of a ${ROLLOUTS}-rollout excel run (${tasks.length} fixture tasks; ${res.computed} distinct final states scored, the rest share them) vs re-running the same rollouts with the reference policy (re-run measured on ${rows.length} rollouts, ${perRerun.toFixed(0)} ms each, extrapolated per rollout)`,
          value: ratio,
          unit: "x",
          goal: ">= 20",
          pass: ratio >= 20,
          baseline: { label: `re-run of ${ROLLOUTS} rollouts, extrapolated (ms)`, value: rerunExtrapolated },
        },
        {
          id: "rescore.rescore_ms",
          label: `rescore of ${ROLLOUTS} excel rollouts (ms, concurrency 4)`,
          value: rescoreMs,
          unit: "ms",
        },
        {
          id: "rescore.per_distinct_rollout_ratio",
          label:
            "re-run ÷ rescore per rollout when every rollout is distinct (rescore --no-dedup on the sample; the reward is most of an excel rollout's cost)",
          value: perRerun / perRescoreNoDedup,
          unit: "x",
          baseline: { label: "re-run per rollout (ms)", value: perRerun },
        },
        {
          id: "rescore.artifacts_per_rollout",
          label: `artifacts stored per rollout (content-addressed; ${tasks.length} tasks × ${GROUP} rollouts, 2 artifacts a task)`,
          value: stored / rows.length,
          unit: "files",
        },
      ],
    }),
  );
} finally {
  await env.close();
  rmSync(root, { recursive: true, force: true });
}
