import { EnvError } from "@benchmax/core";
import type { CorpusDoc } from "./corpus.js";
import type { ContextParagraph, WikiTask } from "./dataset.js";
import { OfflineBackend } from "./offline-backend.js";

/** A row's paragraphs as corpus documents: the title, and the sentences joined as the dataset gives them. */
export function contextDocs(context: ContextParagraph[]): CorpusDoc[] {
  return context.map((p) => ({ title: p.title, text: p.sentences.join("").trim() }));
}

/**
 * The distractor setting's search space for one task: BM25 over the task's own paragraphs only (HotpotQA's ten
 * gold + distractor paragraphs, MuSiQue's twenty), so no Wikipedia dump or network is needed.
 */
export function distractorBackend(task: WikiTask): OfflineBackend {
  const context = task.meta.context;
  if (!context?.length) {
    throw new EnvError(
      `wikipedia: task "${task.id}" has no context paragraphs, so it cannot run in the distractor setting ` +
        "(use rows with context — HotpotQA, 2WikiMultihopQA, MuSiQue — or setting=fullwiki)",
    );
  }
  return new OfflineBackend(contextDocs(context), { commonTermDocs: 0 });
}
