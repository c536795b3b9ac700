import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import {
  DatasetError,
  isPlainRow,
  type LoadTasksOptions,
  loadTasksFromFile,
  parsePlainRow,
  parseWithSchema,
  type Task,
} from "@benchmax/core";
import { z } from "zod";
import { fixturesDir } from "./paths.js";

/** The dataset shapes a row can come in. */
export type DatasetShape = "hotpotqa" | "2wikimultihopqa" | "musique" | "bamboogle" | "flashrag" | "plain";

/** A question task: `groundTruth` holds every accepted answer (aliases included). */
export interface WikiTask extends Task<string[]> {
  prompt: string;
  meta: {
    shape: DatasetShape;
    /** The titles of the supporting articles, where the row names them (never shown to the model). */
    supportingTitles?: string[];
    /**
     * The row's own paragraphs (HotpotQA / 2Wiki `context`, MuSiQue `paragraphs`): the search space of the
     * distractor setting. Sentences are kept as given (HotpotQA's carry their leading spaces).
     */
    context?: ContextParagraph[];
    /** Which layout the row came in: the original JSON, or the Hugging Face datasets layout. */
    layout?: "original" | "hf";
    [key: string]: unknown;
  };
}

/** One paragraph of a row's context: an article title and its sentences. */
export interface ContextParagraph {
  title: string;
  sentences: string[];
}

const contextSchema = z.array(z.tuple([z.string(), z.array(z.string())]));
const supportingFactsSchema = z.array(z.tuple([z.string(), z.number().int()]));

/** The Hugging Face layout's column-wise context: `{title: [..], sentences: [[..]]}` of equal length. */
const hfContextSchema = z
  .object({ title: z.array(z.string()), sentences: z.array(z.array(z.string())) })
  .refine((c) => c.title.length === c.sentences.length, {
    message: "context.title and context.sentences must have the same length",
  });
const hfSupportingFactsSchema = z
  .object({ title: z.array(z.string()), sent_id: z.array(z.number().int()) })
  .refine((f) => f.title.length === f.sent_id.length, {
    message: "supporting_facts.title and supporting_facts.sent_id must have the same length",
  });

/** HotpotQA as the Hugging Face `hotpot_qa` dataset distributes it (distractor / fullwiki configs). */
export const hotpotHfRowSchema = z
  .object({
    /** Many derived copies drop it: then the task id is derived from the row's content (`hotpot-<16 hex>`). */
    id: z.string().min(1).optional(),
    question: z.string().min(1),
    answer: z.string(),
    type: z.string().optional(),
    level: z.string().optional(),
    supporting_facts: hfSupportingFactsSchema.optional(),
    context: hfContextSchema.optional(),
  })
  .passthrough();

/** HotpotQA (hotpot_dev_distractor_v1.json / fullwiki rows with an answer). */
export const hotpotRowSchema = z
  .object({
    _id: z.string().min(1),
    question: z.string().min(1),
    answer: z.string(),
    type: z.string().optional(),
    level: z.string().optional(),
    supporting_facts: supportingFactsSchema.optional(),
    context: contextSchema.optional(),
  })
  .passthrough();

/** 2WikiMultihopQA: HotpotQA's fields plus `evidences` triples. */
export const twoWikiRowSchema = hotpotRowSchema.extend({
  evidences: z.array(z.array(z.string())),
});

/** MuSiQue (musique_ans_v1.0_*.jsonl / musique_full). */
export const musiqueRowSchema = z
  .object({
    id: z.string().min(1),
    question: z.string().min(1),
    answer: z.string(),
    answer_aliases: z.array(z.string()).optional(),
    answerable: z.boolean().optional(),
    paragraphs: z
      .array(
        z
          .object({ idx: z.number().int(), title: z.string(), paragraph_text: z.string(), is_supporting: z.boolean() })
          .passthrough(),
      )
      .optional(),
    question_decomposition: z
      .array(z.object({ id: z.number().int(), question: z.string(), answer: z.string() }).passthrough())
      .optional(),
  })
  .passthrough();

/** Bamboogle: `{Question, Answer}`. */
export const bamboogleRowSchema = z.object({ Question: z.string().min(1), Answer: z.string().min(1) }).passthrough();

/** FlashRAG's unified format: `{id, question, golden_answers, metadata?}`. */
export const flashragRowSchema = z
  .object({
    id: z.union([z.string(), z.number()]),
    question: z.string().min(1),
    golden_answers: z.array(z.string()).min(1),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .passthrough();

/** Which shape a raw row is in (undefined when none fits). */
export function detectShape(row: unknown): DatasetShape | undefined {
  if (!row || typeof row !== "object" || Array.isArray(row)) return undefined;
  const r = row as Record<string, unknown>;
  if (isPlainRow(r)) return "plain";
  if ("Question" in r || "Answer" in r) return "bamboogle";
  if ("golden_answers" in r) return "flashrag";
  if ("_id" in r && "evidences" in r) return "2wikimultihopqa";
  if ("_id" in r) return "hotpotqa";
  if (isHfHotpot(r)) return "hotpotqa";
  if ("answer_aliases" in r || "question_decomposition" in r || "paragraphs" in r || "answerable" in r)
    return "musique";
  return undefined;
}

/** The Hugging Face layout: `id` (not `_id`; some copies have none) and column-wise `context` / `supporting_facts`. */
function isHfHotpot(r: Record<string, unknown>): boolean {
  const columnWise = (v: unknown) => !!v && typeof v === "object" && !Array.isArray(v) && "title" in v;
  return "question" in r && "answer" in r && (columnWise(r.context) || columnWise(r.supporting_facts));
}

/** A stable id from a row's content: 64 bits of sha256, so 100,000s of rows do not collide. */
function contentId(prefix: string, parts: unknown[]): string {
  return `${prefix}-${createHash("sha256").update(JSON.stringify(parts)).digest("hex").slice(0, 16)}`;
}

function hash(s: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}

function goldList(value: unknown, where: string | undefined, field: string): string[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length === 0) throw new DatasetError("needs at least one answer", where, field);
  return list.map((v, i) => {
    if (typeof v === "string") return v;
    if (typeof v === "number" || typeof v === "boolean") return String(v);
    throw new DatasetError(
      `answers must be strings, got ${JSON.stringify(v)}`,
      where,
      Array.isArray(value) ? `${field}.${i}` : field,
    );
  });
}

/**
 * Convert one raw row in any accepted shape into a task: HotpotQA, 2WikiMultihopQA, MuSiQue, Bamboogle, FlashRAG,
 * or a plain `{prompt, ground_truth}` / `{messages, ground_truth}` row. Throws DatasetError naming where and the field.
 */
export function parseWikiTask(row: unknown, where?: string): WikiTask {
  const shape = detectShape(row);
  switch (shape) {
    case "hotpotqa":
    case "2wikimultihopqa": {
      if (shape === "hotpotqa" && isHfHotpot(row as Record<string, unknown>)) {
        const r = parseWithSchema(hotpotHfRowSchema, row, where);
        const supportingTitles = r.supporting_facts ? unique(r.supporting_facts.title) : undefined;
        const context = r.context?.title.map((title, i) => ({ title, sentences: r.context!.sentences[i]! }));
        return {
          id: r.id ?? contentId("hotpot", [r.question, r.answer, r.context?.title ?? null]),
          prompt: r.question,
          groundTruth: [r.answer],
          meta: {
            shape,
            layout: "hf",
            type: r.type,
            level: r.level,
            ...(supportingTitles ? { supportingTitles } : {}),
            ...(context ? { context } : {}),
          },
        };
      }
      const r = parseWithSchema(shape === "hotpotqa" ? hotpotRowSchema : twoWikiRowSchema, row, where);
      const supportingTitles = r.supporting_facts ? unique(r.supporting_facts.map(([t]) => t)) : undefined;
      const context = r.context?.map(([title, sentences]) => ({ title, sentences }));
      return {
        id: r._id,
        prompt: r.question,
        groundTruth: [r.answer],
        meta: {
          shape,
          layout: "original",
          type: r.type,
          level: r.level,
          ...(supportingTitles ? { supportingTitles } : {}),
          ...(context ? { context } : {}),
        },
      };
    }
    case "musique": {
      const r = parseWithSchema(musiqueRowSchema, row, where);
      const supportingTitles = r.paragraphs?.filter((p) => p.is_supporting).map((p) => p.title);
      const context = r.paragraphs?.map((p) => ({ title: p.title, sentences: [p.paragraph_text] }));
      return {
        id: r.id,
        prompt: r.question,
        groundTruth: unique([r.answer, ...(r.answer_aliases ?? [])]),
        meta: {
          shape,
          answerable: r.answerable ?? true,
          ...(supportingTitles ? { supportingTitles: unique(supportingTitles) } : {}),
          ...(context ? { context } : {}),
        },
      };
    }
    case "bamboogle": {
      const r = parseWithSchema(bamboogleRowSchema, row, where);
      return { id: `bamboogle-${hash(r.Question)}`, prompt: r.Question, groundTruth: [r.Answer], meta: { shape } };
    }
    case "flashrag": {
      const r = parseWithSchema(flashragRowSchema, row, where);
      return {
        id: String(r.id),
        prompt: r.question,
        groundTruth: unique(r.golden_answers),
        meta: { shape, ...(r.metadata ?? {}) },
      };
    }
    case "plain": {
      const t = parsePlainRow(row, where);
      const prompt =
        t.prompt ??
        [...(t.messages ?? [])].reverse().find((m) => m.role === "user" && typeof m.content === "string")?.content;
      if (typeof prompt !== "string")
        throw new DatasetError("a messages row needs a user message with text", where, "messages");
      return {
        id: t.id,
        prompt,
        ...(t.messages ? { messages: t.messages } : {}),
        groundTruth: goldList(t.groundTruth, where, "ground_truth"),
        meta: { ...(t.meta ?? {}), shape: "plain" },
      } as WikiTask;
    }
    default:
      throw new DatasetError(
        "unrecognised row: expected HotpotQA {_id, question, answer} (or the Hugging Face layout {id, question, answer, " +
          "context: {title, sentences}}), 2WikiMultihopQA {_id, question, answer, evidences}, " +
          "MuSiQue {id, question, answer, answer_aliases}, Bamboogle {Question, Answer}, FlashRAG {id, question, golden_answers} " +
          "or a plain {prompt, ground_truth} row",
        where,
        "(row)",
      );
  }
}

/** The fixture files, one per dataset shape. */
export const FIXTURE_FILES: Record<DatasetShape, string> = {
  hotpotqa: "hotpotqa.json",
  "2wikimultihopqa": "2wikimultihopqa.json",
  musique: "musique.jsonl",
  bamboogle: "bamboogle.json",
  flashrag: "flashrag.jsonl",
  plain: "plain.jsonl",
};

/**
 * Load tasks: the embedded fixtures when `source` is undefined (`split` picks one shape's file, e.g. "musique"),
 * else a dataset file (.json / .jsonl) or a folder of them.
 */
export async function loadWikiTasks(source?: string, options: LoadTasksOptions = {}): Promise<WikiTask[]> {
  let files: string[];
  if (source === undefined) {
    if (options.split !== undefined && !(options.split in FIXTURE_FILES)) {
      throw new DatasetError(
        `unknown split "${options.split}"; one of ${Object.keys(FIXTURE_FILES).join(", ")}`,
        undefined,
        "split",
      );
    }
    const shapes = options.split ? [options.split as DatasetShape] : (Object.keys(FIXTURE_FILES) as DatasetShape[]);
    files = shapes.map((s) => join(fixturesDir, FIXTURE_FILES[s]));
  } else {
    files = [source];
    try {
      const entries = await readdir(source);
      files = entries
        .filter((f) => /\.(jsonl?|JSONL?)$/.test(f))
        .sort()
        .map((f) => join(source, f));
    } catch {
      // not a folder: a file
    }
  }
  const out: WikiTask[] = [];
  for (const f of files) {
    const left = options.limit !== undefined ? options.limit - out.length : undefined;
    if (left !== undefined && left <= 0) break;
    out.push(...(await loadTasksFromFile(f, parseWikiTask, { limit: left })));
  }
  return out;
}
