/**
 * The scoring workers shared fairly (issue 41, item 5): a test double of the compare worker that holds its thread for
 * the time a job names (without using a CPU), standing for a model-written answer cell that keeps a worker busy for
 * ~95 s per case. Jobs are taken round-robin by rollout, long jobs do not hold the pool, and a rollout's cases are
 * capped in worker time together; a victim's scoring stays within twice its time alone.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ComparePool, type WorkerBudget, WorkerTimeoutError, workerBudget } from "./compare-pool.js";

const dir = mkdtempSync(join(tmpdir(), "compare-fair-"));
const script = join(dir, "hold-worker.mjs");
// answerPosition "hold:<ms>": the job holds its worker that long (Atomics.wait: no CPU), then passes
writeFileSync(
  script,
  `import { parentPort } from "node:worker_threads";
parentPort.on("message", (m) => {
  const ms = Number(String(m.answerPosition).split(":")[1]);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
  parentPort.postMessage({ id: m.id, result: { pass: true, held: ms } });
});
`,
);
const pools: ComparePool[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
  rmSync(dir, { recursive: true, force: true });
});

function pool(size: number, opts: { jobTimeoutMs?: number; longJobMs?: number } = {}): ComparePool {
  const p = new ComparePool(pathToFileURL(script), size, opts);
  pools.push(p);
  return p;
}

const GOLD = Buffer.from("g");
const hold = (p: ComparePool, ms: number, owner?: WorkerBudget) => p.compare(GOLD, undefined, `hold:${ms}`, {}, owner);

/** A rollout's scoring: its cases one after another, as scoreRollout runs them. */
async function rollout(p: ComparePool, cases: number[], owner = workerBudget()): Promise<number> {
  const t0 = performance.now();
  for (const ms of cases) await hold(p, ms, owner);
  return performance.now() - t0;
}

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const end = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("compare pool fairness", () => {
  it("two rollouts holding both workers for minutes do not hold a victim: it scores within 2× its time alone", async () => {
    const p = pool(2, { longJobMs: 300 });
    const victim = [400, 400, 400];
    await rollout(p, [1]); // the first worker's start is nobody's time
    const alone = await rollout(p, victim);
    // two hostile rollouts, three cases of 60 s each: every worker of the pool is held
    const hostile = [0, 1].map(() => rollout(p, [60_000, 60_000, 60_000], workerBudget(90_000)).catch((e) => e));
    await until("both workers held by long jobs", () => p.stats().long >= 2);
    const together = await rollout(p, victim);
    console.info(
      `[env-excel] compare pool: victim ${together.toFixed(0)} ms with two hostile rollouts vs ${alone.toFixed(0)} ms alone`,
    );
    expect(together).toBeLessThan(2 * alone);
    // the hostile rollouts keep one worker each (one job at a time while others wait), never their next cases too
    expect(p.stats().running).toBe(2);
    await p.close();
    await Promise.all(hostile);
  }, 60_000);

  it("jobs are taken round-robin by rollout, not first-come by case", async () => {
    const p = pool(1, { longJobMs: 60_000 });
    const done: string[] = [];
    const a = workerBudget();
    const b = workerBudget();
    const jobs = [
      ...[1, 2, 3].map((k) => hold(p, 150, a).then(() => done.push(`a${k}`))),
      hold(p, 150, b).then(() => done.push("b1")),
    ];
    await Promise.all(jobs);
    expect(done).toEqual(["a1", "b1", "a2", "a3"]);
  }, 30_000);

  it("a rollout's cases share one worker-time budget: past it the case fails, and its next cases fail at once", async () => {
    const p = pool(2, { longJobMs: 300 });
    const owner = workerBudget(1500);
    const t0 = performance.now();
    const first = await hold(p, 30_000, owner).catch((e) => e);
    expect(first).toBeInstanceOf(WorkerTimeoutError);
    expect(String(first.message)).toMatch(/ran past what was left of this rollout's worker time \(1500 ms/);
    expect(performance.now() - t0).toBeLessThan(10_000);
    const second = await hold(p, 10, owner).catch((e) => e);
    expect(second).toBeInstanceOf(WorkerTimeoutError);
    expect(String(second.message)).toMatch(/used its worker time \(1500 ms for all its cases\)/);
    // another rollout is served as usual
    await expect(hold(p, 10)).resolves.toMatchObject({ pass: true });
  }, 30_000);
});
