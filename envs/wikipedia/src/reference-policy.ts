import { readFileSync } from "node:fs";
import { join } from "node:path";
import { lastToolResults, type Policy, scriptedPolicy } from "@benchmax/core";
import type { WikiTask } from "./dataset.js";
import { normalizeAnswer } from "./hotpot-eval.js";
import { fixturesDir } from "./paths.js";

/** One hop: what to search for and which article to read next. */
export interface Hop {
  query: string;
  title: string;
}

/** The hop chain of a fixture question (fixtures/chains.json, keyed by question text). Policy-side only. */
export interface Chain {
  reads: Hop[];
  answer: string;
}

let fixtureChains: Record<string, Chain> | undefined;
function chains(): Record<string, Chain> {
  fixtureChains ??= JSON.parse(readFileSync(join(fixturesDir, "chains.json"), "utf8")) as Record<string, Chain>;
  return fixtureChains;
}

/** The hops for a task: the fixture chain, else the row's supporting titles, else one search for the question. */
export function planFor(task: WikiTask): { hops: Hop[]; answer: string; known: boolean } {
  const c = chains()[task.prompt];
  if (c) return { hops: c.reads, answer: c.answer, known: true };
  const titles = task.meta.supportingTitles ?? [];
  const hops = titles.length ? titles.map((t) => ({ query: t, title: t })) : [{ query: task.prompt, title: "" }];
  return { hops, answer: task.groundTruth[0] ?? "", known: false };
}

/** The titles listed in a search_wikipedia result. */
function resultTitles(out: string): string[] {
  return [...out.matchAll(/^\d+\. (.+)$/gm)].map((m) => m[1]!.trim());
}

const SEARCH_LIMIT = 10;

/**
 * The reference policy — an oracle (`oracle: true`): it knows each fixture's hop chain and answer, and elsewhere
 * reads the row's supporting titles and gold answer, so the CLI runs it only on the fixtures unless told otherwise.
 * For each hop it searches, checks the expected article is among the results, reads it,
 * and finally answers. On fixture questions it also checks that the articles it read state the answer, so a
 * broken fixture fails loudly (→ infra_error of the policy) instead of scoring 0.
 * Turn 2k searches hop k, turn 2k+1 reads it; after the last hop it answers.
 */
export function wikiReferencePolicy(): Policy {
  return scriptedPolicy<WikiTask>(
    "wikipedia-reference",
    ({ task, turn, messages }) => {
      const plan = planFor(task);
      const hop = Math.floor(turn / 2);
      const last = lastToolResults(messages);
      if (turn > 0 && last.length === 0) throw new Error(`turn ${turn}: expected a tool result`);
      if (turn % 2 === 1) {
        const h = plan.hops[hop]!;
        const titles = resultTitles(last[0] ?? "");
        if (h.title && !titles.includes(h.title)) {
          if (plan.known)
            throw new Error(`hop ${hop + 1}: "${h.title}" not in the results for "${h.query}": ${titles.join(" | ")}`);
        }
        const title = h.title && titles.includes(h.title) ? h.title : (titles[0] ?? h.title);
        if (!title) return { answer: `<answer>${plan.answer}</answer>` };
        return { calls: [{ name: "get_wikipedia_article", arguments: { title } }] };
      }
      if (hop < plan.hops.length) {
        return {
          calls: [{ name: "search_wikipedia", arguments: { query: plan.hops[hop]!.query, limit: SEARCH_LIMIT } }],
        };
      }
      if (plan.known && !["yes", "no"].includes(normalizeAnswer(plan.answer))) {
        const read = messages
          .filter((m) => m.role === "tool")
          .map((m) => (typeof m.content === "string" ? m.content : ""))
          .join("\n");
        if (!read.includes(plan.answer)) throw new Error(`the articles read never state the answer "${plan.answer}"`);
      }
      return { answer: `The answer is <answer>${plan.answer}</answer>` };
    },
    { oracle: true },
  );
}
