import type { WikiBackend } from "./backend.js";
import type { WikiTask } from "./dataset.js";
import { titleKey } from "./offline-backend.js";

/** How many supporting titles came back in the top k for the raw question, over a set of tasks. */
export interface RecallAtK {
  k: number;
  /** Supporting titles found in the top k, summed over tasks. */
  titlesFound: number;
  /** Tasks whose every supporting title is in the top k. */
  tasksComplete: number;
}

export interface RankingReport {
  /** Tasks that name supporting titles (the others are left out). */
  tasks: number;
  /** Supporting titles over those tasks. */
  titles: number;
  recall: RecallAtK[];
}

/**
 * Retrieval quality of a search backend on a dataset: for each task's raw question, does each supporting title
 * (HotpotQA `supporting_facts`, MuSiQue `is_supporting`) come back in the top k? `backendFor` gives the backend a task
 * searches (one shared corpus in the fullwiki setting, the task's own paragraphs in the distractor setting).
 */
export async function supportingTitleRecall(
  tasks: WikiTask[],
  backendFor: (task: WikiTask) => WikiBackend | Promise<WikiBackend>,
  ks: number[] = [5, 10],
): Promise<RankingReport> {
  const maxK = Math.max(...ks);
  const recall = ks.map((k) => ({ k, titlesFound: 0, tasksComplete: 0 }));
  let counted = 0;
  let titles = 0;
  for (const task of tasks) {
    const want = [...new Set((task.meta.supportingTitles ?? []).map(titleKey))];
    if (want.length === 0) continue;
    counted++;
    titles += want.length;
    const backend = await backendFor(task);
    const hits = (await backend.search(task.prompt, maxK)).map((h) => titleKey(h.title));
    for (const r of recall) {
      const top = new Set(hits.slice(0, r.k));
      const found = want.filter((t) => top.has(t)).length;
      r.titlesFound += found;
      if (found === want.length) r.tasksComplete++;
    }
  }
  return { tasks: counted, titles, recall };
}
