import type { Chunk } from "./chunk.js";

/**
 * JSON Schema of a reply that is a list of `pairs`, each an object of the given string fields (name → description),
 * every field required and no other allowed, as OpenAI's strict structured outputs want.
 */
function pairsSchema<const F extends Record<string, string>>(fields: F) {
  const properties = Object.fromEntries(
    Object.entries(fields).map(([name, description]) => [name, { type: "string", description }]),
  ) as { [K in keyof F]: { type: "string"; description: F[K] } };
  return {
    type: "object",
    properties: {
      pairs: {
        type: "array",
        items: {
          type: "object",
          properties,
          required: Object.keys(fields) as Array<keyof F & string>,
          additionalProperties: false,
        },
      },
    },
    required: ["pairs"],
    additionalProperties: false,
  } as const;
}

const SHORT_ANSWER = "a short answer: an entity, number, date or short phrase";

/** JSON Schema of a single-hop answer: pairs, each with a verbatim quote from the passage. */
export const SINGLE_HOP_SCHEMA = pairsSchema({
  question: "a question a reader can answer from the passage alone",
  answer: SHORT_ANSWER,
  evidence: "a sentence copied verbatim from the passage that contains the answer",
});

/** JSON Schema of a multi-hop answer: one quote from each passage. */
export const MULTI_HOP_SCHEMA = pairsSchema({
  question: "a question that needs facts from both passages",
  answer: SHORT_ANSWER,
  evidence_1: "a sentence copied verbatim from passage 1",
  evidence_2: "a sentence copied verbatim from passage 2",
});

export const QA_SYSTEM_PROMPT = [
  "You write question-answer pairs for training a search agent.",
  "Every answer is short (an entity, a number, a date or a short phrase) and is stated in the passage.",
  "For every pair, copy the sentence that states the answer verbatim into the evidence field: do not paraphrase it.",
  "A question must make sense on its own, without the passage: never write 'in the passage' or 'according to the text'.",
  "Do not put the answer in the question. Reply with JSON only.",
].join("\n");

function passage(c: Chunk, n?: number): string {
  const attr = n === undefined ? "" : ` n="${n}"`;
  return `<passage${attr} title="${c.title.replace(/"/g, "'")}">\n${c.text}\n</passage>`;
}

export function singleHopPrompt(c: Chunk, k: number): string {
  return `Write ${k} different question-answer pair${k === 1 ? "" : "s"} about this passage.\n\n${passage(c)}`;
}

export function multiHopPrompt(a: Chunk, b: Chunk, k: number): string {
  return [
    `Write ${k} different two-hop question${k === 1 ? "" : "s"}: answering one needs a fact from passage 1 and a fact from passage 2`,
    `(for example, the question names something described in passage 1 and asks about it using passage 2). Quote the sentence`,
    "used from passage 1 in evidence_1 and the sentence used from passage 2 in evidence_2.",
    "",
    passage(a, 1),
    "",
    passage(b, 2),
  ].join("\n");
}
