import type { LlmJudge } from "@benchmax/core";

/**
 * The optional LLM answer parsing CRMArena-Pro runs before exact_match: a model extracts the answer items from the
 * agent's reply (Ids, months, states, BANT factors or an opportunity stage, by task category), and the sorted items
 * must equal the sorted gold list. The instructions here are written for this package, after the original's
 * structure; the original sends them as a system message, this sends one user message through core's LlmJudge.
 */

interface Entity {
  kind: string;
  what: string;
  extra?: string;
  examples: Array<[string, string[]]>;
}

const IDS: Entity = {
  kind: "IDs",
  what: "Salesforce record IDs (Case, Account, Contact, User, Product IDs and the like)",
  examples: [
    ["The case you want is 500Wt00000DEF12IAG.", ["500Wt00000DEF12IAG"]],
    ["No records match those criteria.", ["None"]],
  ],
};

const BY_TASK: Record<string, Entity> = {
  best_region_identification: {
    kind: "states",
    what: "US states, written as two-letter codes",
    extra: "Write each state as its two-letter code (e.g. NY, CA).",
    examples: [
      ["Texas and Florida were fastest.", ["TX", "FL"]],
      ["No records match those criteria.", ["None"]],
    ],
  },
  monthly_trend_analysis: {
    kind: "months",
    what: "month names",
    examples: [
      ["Cases peaked in March.", ["March"]],
      ["No records match those criteria.", ["None"]],
    ],
  },
  lead_qualification: {
    kind: "BANT factors",
    what: "BANT factors: Budget, Authority, Need, Timeline",
    extra: "When the reply names both met and unmet factors, extract only the unmet ones.",
    examples: [
      ["The lead has budget and need but no timeline.", ["Timeline"]],
      ["No records match those criteria.", ["None"]],
    ],
  },
  wrong_stage_rectification: {
    kind: "opportunity stages",
    what: "the opportunity stage the reply says the opportunity should be in",
    extra: "Extract exactly one stage.",
    examples: [
      ["It should move back to Discovery.", ["Discovery"]],
      ["No records match those criteria.", ["None"]],
    ],
  },
};

/** The extraction prompt for a task category (IDs for categories without their own). */
export function answerParsePrompt(taskName: string | undefined, reply: string): string {
  const e = (taskName && BY_TASK[taskName]) || IDS;
  const examples = e.examples
    .map(
      ([input, out], i) => `Example ${i + 1}:\nReply: ${input}\nOutput: ${JSON.stringify({ extracted_answers: out })}`,
    )
    .join("\n\n");
  return `You extract answers from an AI agent's final reply.

Extract every one of the ${e.kind} in the reply: ${e.what}. If the reply contains none, output ["None"].${e.extra ? `\n${e.extra}` : ""}
Output only a JSON object {"extracted_answers": [...]} with no explanation.

${examples}

Reply: ${reply}
Output:`;
}

/** Read the extracted items from the parser model's reply: the JSON object, else a bracketed list, else the text. */
export function parseExtracted(reply: string): string[] {
  const text = reply.trim();
  const json = /\{[\s\S]*\}/.exec(text);
  if (json) {
    try {
      const v = JSON.parse(json[0]) as { extracted_answers?: unknown };
      if (Array.isArray(v.extracted_answers)) {
        const items = v.extracted_answers.map((x) => (x === null ? "None" : String(x)));
        return items.length ? items : ["None"];
      }
    } catch {
      /* fall through to the heuristics */
    }
  }
  const list = /\[([\s\S]*?)\]/.exec(text);
  if (list) {
    const inner = list[1]!.trim();
    if (/^none$/i.test(inner)) return ["None"];
    const items = inner
      .split(",")
      .map((s) => s.trim().replace(/^["']|["']$/g, ""))
      .filter(Boolean);
    if (items.length) return items;
  }
  const bare = text.replace(/^["']|["']$/g, "").trim();
  return !bare || /^none$/i.test(bare) ? ["None"] : [bare];
}

/**
 * exact_match with LLM parsing, as the original scores it: a single gold item equal to the stripped reply scores 1
 * at once; otherwise the parser model extracts the items and their sorted list must equal the sorted gold list
 * (gold `[null]` is "None"). A failing parser call throws (an infra error, never a 0).
 */
export async function llmExactMatch(
  answer: string,
  gold: ReadonlyArray<unknown>,
  taskName: string | undefined,
  parser: LlmJudge,
): Promise<{ score: number; parsed: string[] }> {
  const goldItems = gold.length === 0 || gold[0] === null ? ["None"] : gold.map((g) => String(g));
  const stripped = answer.trim().replace(/^["']+|["']+$/g, "");
  if (goldItems.length === 1 && stripped === goldItems[0]) return { score: 1, parsed: [stripped] };
  const parsed = parseExtracted(await parser.complete(answerParsePrompt(taskName, answer)));
  const a = [...parsed].sort();
  const b = [...goldItems].sort();
  return { score: a.length === b.length && a.every((x, i) => x === b[i]) ? 1 : 0, parsed };
}
