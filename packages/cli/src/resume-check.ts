import { combineRewards, OUTCOMES, readResults, rolloutIdOf, type Task, UsageError } from "@benchmax/core";

/**
 * Check every row of a results.jsonl a resume would keep, against the run it continues: each row is a rollout of
 * one of the run's tasks (its id and sample within the group), with a known outcome, finite components, and a reward
 * that is what the env's weights make of those components. A row that fails (a row from another task or run, a
 * hand-edited reward) refuses the resume: its numbers would enter the summary unseen.
 */
export function checkResumeRows(
  resultsPath: string,
  tasks: Task[],
  group: number,
  weights: Record<string, number>,
): void {
  const expected = new Map<string, string>();
  for (const t of tasks) for (let k = 0; k < group; k++) expected.set(rolloutIdOf(t.id, k), t.id);
  const rows = readResults(resultsPath);
  const bad = (i: number, why: string) =>
    new UsageError(
      `--resume: ${resultsPath} row ${i + 1}: ${why}; it is not a rollout of this run (restore the file, or start afresh with --force)`,
    );
  rows.forEach((r, i) => {
    const taskId = expected.get(r.rolloutId);
    if (taskId === undefined) throw bad(i, `rollout "${r.rolloutId}" is not one of this run's tasks × group ${group}`);
    if (r.taskId !== taskId) throw bad(i, `rollout "${r.rolloutId}" names task "${r.taskId}"`);
    if (!OUTCOMES.includes(r.outcome)) throw bad(i, `unknown outcome "${String(r.outcome)}"`);
    if (r.reward === undefined && r.rewards === undefined) return;
    if (r.outcome === "env_error" || r.outcome === "infra_error")
      throw bad(i, `an ${r.outcome} rollout carries a reward`);
    if (typeof r.reward !== "number" || !Number.isFinite(r.reward))
      throw bad(i, `reward ${String(r.reward)} is not a finite number`);
    const comps = r.rewards ?? {};
    for (const [k, v] of Object.entries(comps)) {
      if (typeof v !== "number" || !Number.isFinite(v))
        throw bad(i, `reward component ${k} = ${String(v)} is not finite`);
    }
    let want: number;
    try {
      want = combineRewards(comps, weights);
    } catch (e) {
      throw bad(i, (e as Error).message);
    }
    if (Math.abs(want - r.reward) > 1e-9 * Math.max(1, Math.abs(want))) {
      throw bad(i, `reward ${r.reward} is not what the env's weights make of its components (${want})`);
    }
  });
}
