import { createHash } from "node:crypto";
import { basename, resolve } from "node:path";
import type { RunSummary } from "../summary.js";
import type { Task } from "../types.js";

/**
 * What a run was: written by `benchmax eval` into summary.json (`run`) and run.json, and read by the regression
 * gate so that it only compares like with like.
 */
export interface RunIdentity {
  env: string;
  /** "fixtures", or the dataset path as given (shown to the user only; identity is `datasetHash`). */
  dataset: string;
  /** sha256 of the run's tasks (ids and content, in order), independent of where the dataset lies. */
  datasetHash: string;
  /** Tasks in the run (after --limit). */
  tasks: number;
  group: number;
  /** tasks × group. */
  expectedRollouts: number;
  /** Every expected rollout finished (false for an interrupted or killed run). */
  completed: boolean;
  policy: string;
  /** The policy reads the gold answer. */
  oracle?: boolean;
  /** Run-shaping settings that change scores: max turns, tool format, env options, --limit, … */
  config: Record<string, unknown>;
  /** The run dir this one re-scored (`benchmax rescore`). */
  rescoredFrom?: string;
}

/** A run dir's summary.json: the core summary plus the run identity. */
export type RunDirSummary = RunSummary & { run?: RunIdentity };

/** JSON with sorted keys and undefined dropped: the same value always gives the same text. */
export function stableJson(x: unknown): string {
  if (x === undefined) return "null";
  if (x === null || typeof x !== "object") return JSON.stringify(x);
  if (Array.isArray(x)) return `[${x.map(stableJson).join(",")}]`;
  const o = x as Record<string, unknown>;
  return `{${Object.keys(o)
    .sort()
    .filter((k) => o[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`)
    .join(",")}}`;
}

/** sha256 over the tasks' ids, prompts and gold, in order: the dataset's identity wherever it lies. */
export function datasetHash(tasks: Task[]): string {
  const h = createHash("sha256");
  for (const t of tasks) {
    h.update(stableJson({ id: t.id, prompt: t.prompt, messages: t.messages, groundTruth: t.groundTruth }));
    h.update("\n");
  }
  return h.digest("hex");
}

/**
 * Task ids that fall back to `file:line` carry the dataset's path; keep only its base name so that the same dataset
 * in another checkout (or given by another path) yields the same ids, and a resume finds what it already did.
 */
export function normalizeTaskIds<T extends Task>(tasks: T[], dataset: string | undefined): T[] {
  if (!dataset) return tasks;
  const prefixes = [...new Set([resolve(dataset), dataset])].sort((a, b) => b.length - a.length);
  const base = basename(dataset);
  return tasks.map((t) => {
    for (const p of prefixes) {
      if (t.id.startsWith(p) && /^[:[/]/.test(t.id.slice(p.length))) {
        return { ...t, id: `${base}${t.id.slice(p.length)}` };
      }
    }
    return t;
  });
}

/** Why a resume into a run dir would mix two different runs (env, dataset, policy, group size or config). */
export function resumeMismatches(prev: RunIdentity, next: RunIdentity): string[] {
  const out: string[] = [];
  if (prev.env !== next.env) out.push(`env ${prev.env} → ${next.env}`);
  if (prev.datasetHash !== next.datasetHash) {
    out.push(`dataset ${prev.dataset} → ${next.dataset} (the tasks differ)`);
  }
  if (prev.policy !== next.policy) out.push(`policy ${prev.policy} → ${next.policy}`);
  if (prev.group !== next.group) out.push(`group ${prev.group} → ${next.group}`);
  const keys = new Set([...Object.keys(prev.config ?? {}), ...Object.keys(next.config ?? {})]);
  for (const k of [...keys].sort()) {
    const a = stableJson(prev.config?.[k]);
    const b = stableJson(next.config?.[k]);
    if (a !== b) out.push(`${k} ${a} → ${b}`);
  }
  return out;
}
