import { createHash } from "node:crypto";
import { readdir, stat } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import {
  DatasetError,
  type LoadTasksOptions,
  parsePlainRow,
  parseWithSchema,
  readRows,
  type Task,
} from "@benchmax/core";
import { z } from "zod";
import { officialBoxedAnswer } from "./hendrycks.js";
import { parseNumericAnswer } from "./numbers.js";

/**
 * Rows the math env reads, detected by their fields:
 * - arithmetic (the arithmetic50 shape): `{task, answer}` — `answer` a number or a numeric string;
 * - Hendrycks MATH: `{problem, level, type, solution}` — the gold answer is the last `\boxed{…}` of `solution`, read
 *   as the official evaluation does; MATH-500 style rows (`{problem, solution, answer, subject, level, unique_id}`)
 *   are read the same way (`answer` is used only when there is no `solution`);
 * - PRM800K (openai/prm800k `data/phase{1,2}_{train,test}.jsonl`): `{labeler, timestamp, generation, …, question:
 *   {problem, ground_truth_solution, ground_truth_answer, pre_generated_steps?, pre_generated_answer?}, label}` —
 *   one task per distinct problem (the files hold many labelled solutions of each), gold `ground_truth_answer`;
 * - plain rows `{prompt | messages, ground_truth}`: a numeric ground truth is scored like arithmetic, any other
 *   string like MATH (a `\boxed{…}` in it is unwrapped first).
 */

export type MathGold = { kind: "arithmetic"; value: number; text: string } | { kind: "math"; answer: string };

export type MathTask = Task<MathGold>;

const idSchema = z.union([z.string().min(1), z.number()]);

export const arithmeticRowSchema = z
  .object({
    id: idSchema.optional(),
    task: z.string().min(1),
    answer: z.union([z.number(), z.string().min(1)]),
  })
  .passthrough();

export const mathRowSchema = z
  .object({
    id: idSchema.optional(),
    unique_id: idSchema.optional(),
    problem: z.string().min(1),
    level: z.union([z.string(), z.number()]).optional(),
    type: z.string().optional(),
    subject: z.string().optional(),
    solution: z.string().optional(),
    answer: z.union([z.string().min(1), z.number()]).optional(),
  })
  .passthrough()
  .refine((r) => r.solution !== undefined || r.answer !== undefined, {
    message: 'a MATH row needs "solution" (with a \\boxed{…} answer)',
    path: ["solution"],
  });

/** A PRM800K labelled-solution row: only `question` matters for a task. */
export const prm800kRowSchema = z
  .object({
    question: z
      .object({
        problem: z.string().min(1),
        ground_truth_solution: z.string().nullish(),
        ground_truth_answer: z.union([z.string().min(1), z.number()]).nullish(),
      })
      .passthrough()
      .refine((q) => (q.ground_truth_answer ?? null) !== null || (q.ground_truth_solution ?? null) !== null, {
        message: "a PRM800K row needs question.ground_truth_answer (or a ground_truth_solution with \\boxed{…})",
        path: ["ground_truth_answer"],
      }),
    label: z.unknown().optional(),
  })
  .passthrough();

export type RowKind = "arithmetic" | "math" | "prm800k" | "plain";

/** Which shape a raw row has; throws a DatasetError when it is none of them. */
export function detectRowKind(row: unknown, where?: string): RowKind {
  if (row === null || typeof row !== "object" || Array.isArray(row)) {
    throw new DatasetError(`a row must be a JSON object, got ${Array.isArray(row) ? "an array" : typeof row}`, where);
  }
  if ("ground_truth" in row) return "plain";
  if ("question" in row && "label" in row) return "prm800k";
  if ("problem" in row || "solution" in row) return "math";
  if ("task" in row || "answer" in row) return "arithmetic";
  if ("prompt" in row || "messages" in row) return "plain";
  throw new DatasetError(
    "unrecognised row: expected {task, answer} (arithmetic), {problem, level, type, solution} (MATH), " +
      "{question: {problem, ground_truth_answer}, label} (PRM800K) or {prompt, ground_truth}",
    where,
    "(row)",
  );
}

/**
 * 64 bits of sha256, as 16 hex digits: stable ids for rows that have none. (32 bits collided among 100,000 distinct
 * rows, which refused a valid dataset as holding duplicate ids.)
 */
export function stableHash(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

function idOf(given: unknown, fallback: string): string {
  return given !== undefined && given !== null && given !== "" ? String(given) : fallback;
}

/**
 * Parse one raw row into a task. Without `fallbackId`, a row without an id gets a stable content hash
 * (`arith-<hash>`, `math-<hash>`, `row-<hash>`).
 */
export function parseMathRow(row: unknown, where?: string, fallbackId?: string): MathTask {
  const kind = detectRowKind(row, where);
  if (kind === "arithmetic") {
    const r = parseWithSchema(arithmeticRowSchema, row, where);
    const text = String(r.answer);
    const value = typeof r.answer === "number" ? r.answer : parseNumericAnswer(r.answer);
    if (value === undefined || !Number.isFinite(value)) {
      throw new DatasetError(`not a number: ${JSON.stringify(r.answer)}`, where, "answer");
    }
    return {
      id: idOf(r.id, fallbackId ?? `arith-${stableHash(`${r.task}\u0000${text}`)}`),
      prompt: r.task,
      groundTruth: { kind: "arithmetic", value, text },
      meta: { dataset: "arithmetic" },
    };
  }
  if (kind === "math") {
    const r = parseWithSchema(mathRowSchema, row, where);
    let answer: string | null;
    if (r.solution !== undefined) {
      answer = officialBoxedAnswer(r.solution);
      if (answer === null) {
        throw new DatasetError(
          "no \\boxed{…} answer in the solution (the official evaluation reads the last \\boxed{…})",
          where,
          "solution",
        );
      }
    } else {
      answer = String(r.answer);
    }
    const meta: Record<string, unknown> = { dataset: "math" };
    if (r.level !== undefined) meta.level = r.level;
    const type = r.type ?? r.subject;
    if (type !== undefined) meta.type = type;
    return {
      id: idOf(r.id ?? r.unique_id, fallbackId ?? `math-${stableHash(r.problem)}`),
      prompt: r.problem,
      groundTruth: { kind: "math", answer },
      meta,
    };
  }
  if (kind === "prm800k") {
    const q = parseWithSchema(prm800kRowSchema, row, where).question;
    let answer: string | null =
      q.ground_truth_answer !== undefined && q.ground_truth_answer !== null ? String(q.ground_truth_answer) : null;
    if (answer === null && q.ground_truth_solution) answer = officialBoxedAnswer(q.ground_truth_solution);
    if (answer === null) {
      throw new DatasetError("no ground_truth_answer and no \\boxed{…} in ground_truth_solution", where, "question");
    }
    return {
      id: fallbackId ?? `prm800k-${stableHash(q.problem)}`,
      prompt: q.problem,
      groundTruth: { kind: "math", answer },
      meta: { dataset: "prm800k" },
    };
  }
  const plain = parsePlainRow(row, where, "row");
  const gt = plain.groundTruth;
  let groundTruth: MathGold;
  if (typeof gt === "number" && Number.isFinite(gt)) {
    groundTruth = { kind: "arithmetic", value: gt, text: String(gt) };
  } else if (typeof gt === "string" && gt.trim()) {
    const value = parseNumericAnswer(gt);
    if (value !== undefined) groundTruth = { kind: "arithmetic", value, text: gt.trim() };
    else groundTruth = { kind: "math", answer: gt.includes("\\boxed") ? (officialBoxedAnswer(gt) ?? gt) : gt.trim() };
  } else {
    throw new DatasetError(
      `must be a number or a non-empty string, got ${JSON.stringify(gt) ?? "undefined"}`,
      where,
      "ground_truth",
    );
  }
  const given = (row as { id?: unknown }).id;
  const content = plain.prompt ?? JSON.stringify(plain.messages);
  return {
    ...plain,
    id: idOf(given, fallbackId ?? `row-${stableHash(`${content}\u0000${JSON.stringify(gt)}`)}`),
    groundTruth,
    meta: { dataset: "plain", ...plain.meta },
  };
}

const PREFIX: Record<Exclude<RowKind, "prm800k">, string> = { arithmetic: "arith", math: "math", plain: "row" };

/** The fixture files shipped with the package. */
export const FIXTURES = {
  arithmetic: fileURLToPath(new URL("../fixtures/arithmetic.jsonl", import.meta.url)),
  math: fileURLToPath(new URL("../fixtures/math.jsonl", import.meta.url)),
} as const;

export type Subset = "all" | "arithmetic" | "math";

export function parseSubset(value: unknown, what = "subset"): Subset {
  if (value === undefined || value === null || value === "") return "all";
  if (value === "all" || value === "arithmetic" || value === "math") return value;
  throw new DatasetError(`${what} must be "all", "arithmetic" or "math", got ${JSON.stringify(value)}`);
}

/**
 * Rows of a file: ids are the row's own, else `<kind>-<n>` (n = 1-based row number in the file). PRM800K rows become
 * one task per distinct problem (`prm800k-<hash of the problem>`); its later rows must agree on the gold answer.
 */
async function loadFile(path: string): Promise<MathTask[]> {
  const rows = await readRows(path);
  const out: MathTask[] = [];
  const problems = new Map<string, string>();
  rows.forEach((r, k) => {
    const kind = detectRowKind(r.row, r.where);
    if (kind !== "prm800k") {
      out.push(parseMathRow(r.row, r.where, `${PREFIX[kind]}-${k + 1}`));
      return;
    }
    // PRM800K files hold many labelled solutions per problem: one task per distinct problem
    const t = parseMathRow(r.row, r.where);
    const answer = t.groundTruth.kind === "math" ? t.groundTruth.answer : t.groundTruth.text;
    const seen = problems.get(t.id);
    if (seen === undefined) {
      problems.set(t.id, answer);
      out.push(t);
    } else if (seen !== answer) {
      throw new DatasetError(
        `the same problem appears earlier with ground_truth_answer ${JSON.stringify(seen)}, here ${JSON.stringify(answer)}`,
        r.where,
        "question.ground_truth_answer",
      );
    }
  });
  return out;
}

/** A folder as the MATH release lays it out (`test/<type>/<n>.json`, one problem a file): ids are relative paths. */
async function loadFolder(dir: string): Promise<MathTask[]> {
  const entries = (await readdir(dir, { recursive: true }))
    .map(String)
    .filter((p) => p.endsWith(".json") || p.endsWith(".jsonl"))
    .sort();
  if (entries.length === 0) throw new DatasetError("no .json or .jsonl files in the folder", dir);
  const out: MathTask[] = [];
  for (const rel of entries) {
    const path = join(dir, rel);
    const rows = await readRows(path);
    const name = relative(dir, path).split(sep).join("/");
    rows.forEach((r, k) => {
      out.push(parseMathRow(r.row, r.where, rows.length === 1 ? name : `${name}:${k + 1}`));
    });
  }
  return out;
}

/**
 * Load tasks: the fixtures (both files) without a source, else a JSONL / JSON file or a folder of them. A `split` (or
 * `subset`) of "arithmetic" or "math" keeps only that kind of task.
 */
export async function loadMathTasks(
  source: string | undefined,
  options: LoadTasksOptions & { subset?: Subset } = {},
): Promise<MathTask[]> {
  let tasks: MathTask[];
  // a split (or the env's subset option) keeps one kind of task: "arithmetic" or "math"
  const subset = options.split !== undefined ? parseSubset(options.split, "split") : (options.subset ?? "all");
  if (source === undefined) {
    tasks = [];
    if (subset !== "math") tasks.push(...(await loadFile(FIXTURES.arithmetic)));
    if (subset !== "arithmetic") tasks.push(...(await loadFile(FIXTURES.math)));
  } else {
    let isDir = false;
    try {
      isDir = (await stat(source)).isDirectory();
    } catch (e) {
      throw new DatasetError(
        `cannot read dataset (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
        source,
      );
    }
    tasks = isDir ? await loadFolder(source) : await loadFile(source);
    if (subset !== "all") tasks = tasks.filter((t) => t.groundTruth.kind === subset);
  }
  const seen = new Map<string, number>();
  for (const t of tasks) {
    const n = seen.get(t.id);
    if (n !== undefined) throw new DatasetError(`duplicate task id "${t.id}"`, source ?? "fixtures", "id");
    seen.set(t.id, 1);
  }
  return options.limit !== undefined ? tasks.slice(0, options.limit) : tasks;
}
