import { DatasetError, isPlainRow, parsePlainRow, parseWithSchema, type Task } from "@benchmax/core";
import { z } from "zod";
import type { RewardMetric } from "./reward.js";

/** A CRMArena-Pro task record, loaded unchanged. */
export const crmArenaRecordSchema = z
  .object({
    idx: z.union([z.number(), z.string()]),
    answer: z.array(z.union([z.string(), z.number(), z.boolean(), z.null()])),
    task: z.string(),
    persona: z.string().optional(),
    metadata: z
      .object({ required: z.string().nullish(), optional: z.string().nullish(), today: z.string().optional() })
      .passthrough()
      .optional(),
    reward_metric: z.enum(["exact_match", "fuzzy_match", "privacy_rejection"]),
    query: z.string().min(1),
  })
  .passthrough();

export type CrmArenaRecord = z.infer<typeof crmArenaRecordSchema>;

export interface CrmGroundTruth {
  answer: Array<string | number | boolean | null>;
  reward_metric: RewardMetric;
}

export type CrmTask = Task<CrmGroundTruth>;

/**
 * The user prompt of a record, as the original benchmax CRM env builds it: persona, the task line, the required
 * metadata, then the query. CRMArena-Pro's `task` is usually a category name (`handle_time`); a bare identifier like
 * that is left out of the prompt, an instruction sentence is kept.
 */
export function recordPrompt(r: CrmArenaRecord): string {
  const parts = [r.persona, /\s/.test(r.task.trim()) ? r.task : undefined, r.metadata?.required, r.query];
  return parts.filter((p): p is string => typeof p === "string" && p.trim().length > 0).join("\n");
}

const TODAY_RE = /today(?:'s|’s)?(?:\s+date)?(?:\s+is)?\s*[:：=]?\s*(\d{4}-\d{2}-\d{2})/i;

/**
 * A record's own "today": CRMArena-Pro states it in the task context (`metadata.required`, e.g. "- Today's date:
 * 2023-01-16"), CRMArena in `metadata.today`. Undefined when the record states none (the org's date applies).
 */
export function recordToday(r: { metadata?: Record<string, unknown> | null; query?: unknown }): string | undefined {
  const md = r.metadata ?? {};
  if (typeof md.today === "string" && /^\d{4}-\d{2}-\d{2}/.test(md.today)) return md.today.slice(0, 10);
  for (const text of [md.required, md.optional, r.query]) {
    if (typeof text !== "string") continue;
    const m = TODAY_RE.exec(text);
    if (m && !Number.isNaN(Date.parse(`${m[1]}T00:00:00Z`))) return m[1];
  }
  return undefined;
}

function asAnswerList(v: unknown, where?: string): Array<string | number | boolean | null> {
  if (Array.isArray(v)) return v as Array<string | number | boolean | null>;
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return [v];
  throw new DatasetError("ground_truth must be a string, number, null or a list of them", where, "ground_truth");
}

/** Parse a CRMArena-Pro record or a plain {prompt, ground_truth[, reward_metric]} row into a task. */
export function parseCrmTask(row: unknown, where?: string): CrmTask {
  if (isPlainRow(row)) {
    const t = parsePlainRow(row, where);
    const metric = (row as { reward_metric?: unknown }).reward_metric ?? "exact_match";
    if (metric !== "exact_match" && metric !== "fuzzy_match" && metric !== "privacy_rejection") {
      throw new DatasetError(
        "reward_metric must be exact_match, fuzzy_match or privacy_rejection",
        where,
        "reward_metric",
      );
    }
    return { ...t, groundTruth: { answer: asAnswerList(t.groundTruth, where), reward_metric: metric } };
  }
  const r = parseWithSchema(crmArenaRecordSchema, row, where);
  return {
    id: `crm-${r.idx}`,
    prompt: recordPrompt(r),
    groundTruth: { answer: r.answer, reward_metric: r.reward_metric },
    meta: { idx: r.idx, task: r.task, reward_metric: r.reward_metric, today: recordToday(r) },
  };
}
