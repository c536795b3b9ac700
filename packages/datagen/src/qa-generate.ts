import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { appendFile, mkdir, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { InfraError, jsonlLines, UsageError } from "@benchmax/core";
import OpenAI from "openai";
import { z } from "zod";
import { type Chunk, type ChunkOptions, chunkCorpus } from "./chunk.js";
import { loadCorpus } from "./corpus.js";
import { answerInSpan, normalizeAnswer, questionKey, spanOccursIn } from "./grounding.js";
import {
  MULTI_HOP_SCHEMA,
  multiHopPrompt,
  QA_SYSTEM_PROMPT,
  SINGLE_HOP_SCHEMA,
  singleHopPrompt,
} from "./qa-prompts.js";
import { stableFraction } from "./stable-split.js";

/** A generated row in the FlashRAG shape (`{id, question, golden_answers, metadata}`). */
export interface QaRow {
  id: string;
  question: string;
  golden_answers: string[];
  metadata: {
    hops: 1 | 2;
    /** The work unit (chunk hashes) the row came from; resume keys on it. */
    unit: string;
    chunk_ids: string[];
    titles: string[];
    evidence: string[];
    model: string;
  };
}

export interface QaDropCounts {
  /** A quoted evidence span that does not occur in its chunk. */
  ungrounded: number;
  /** The answer is not in the quoted evidence. */
  answer_not_in_evidence: number;
  /** The answer is given away by the question. */
  answer_in_question: number;
  duplicate: number;
  /** The reply was not JSON of the schema (or a refusal). */
  malformed: number;
}

export interface QaStats {
  chunks: number;
  /** Work units: chunks (single-hop) or chunk pairs (multi-hop). */
  units: number;
  /** Units done before this run (resumed). */
  resumedUnits: number;
  /** Units done in this run. */
  doneUnits: number;
  requests: number;
  /** Pairs the model proposed. */
  proposed: number;
  /** Rows written in this run. */
  accepted: number;
  /** Rows already in the output file. */
  existing: number;
  dropped: QaDropCounts;
  /** True when the corpus ran out of units before reaching n. */
  exhausted: boolean;
}

export interface QaProgress {
  rows: number;
  target: number;
  unitsDone: number;
  units: number;
}

export interface GenerateQaOptions {
  corpus: string;
  out: string;
  /** Rows wanted in the output file (rows already there count). */
  n: number;
  model: string;
  baseURL?: string;
  apiKey?: string;
  /** Two-hop questions over pairs of linked chunks from different documents. */
  multiHop?: boolean;
  /** Requests in flight at once. Default 4. */
  concurrency?: number;
  /** Pairs asked for per unit. Default 2. */
  perChunk?: number;
  chunking?: ChunkOptions;
  /** Salt of the unit order (a stable shuffle of the corpus). */
  seed?: string;
  temperature?: number;
  /** Retries of a failed request inside the openai SDK. Default 2. */
  maxRetries?: number;
  timeoutMs?: number;
  /** Start over instead of resuming from the rows already in `out`. */
  fresh?: boolean;
  /** An OpenAI client to use instead of one built from model/baseURL/apiKey. */
  client?: OpenAI;
  onProgress?(p: QaProgress): void;
}

interface Unit {
  key: string;
  chunks: Chunk[];
}

const singleReply = z.object({
  pairs: z.array(z.object({ question: z.string(), answer: z.string(), evidence: z.string() })),
});
const multiReply = z.object({
  pairs: z.array(
    z.object({ question: z.string(), answer: z.string(), evidence_1: z.string(), evidence_2: z.string() }),
  ),
});

const WORD = /\b[A-Z][\p{L}\p{N}'-]{2,}\b/gu;

/** Pairs of chunks from different documents for two-hop questions: chunk A mentions B's title, else shares names. */
export function linkChunks(chunks: Chunk[]): Array<[Chunk, Chunk]> {
  const firstOfDoc = new Map<string, Chunk>();
  for (const c of chunks) if (!firstOfDoc.has(c.docId)) firstOfDoc.set(c.docId, c);
  const docs = [...firstOfDoc.values()];
  const names = new Map(chunks.map((c) => [c, new Set(c.text.match(WORD) ?? [])]));
  const pairs: Array<[Chunk, Chunk]> = [];
  for (const a of chunks) {
    let best: Chunk | undefined = docs.find(
      (b) => b.docId !== a.docId && b.title.length >= 3 && a.text.includes(b.title),
    );
    if (!best) {
      let bestScore = 1;
      const na = names.get(a)!;
      for (const b of docs) {
        if (b.docId === a.docId) continue;
        let score = 0;
        for (const w of names.get(b)!) if (na.has(w)) score++;
        if (score > bestScore) {
          bestScore = score;
          best = b;
        }
      }
    }
    if (best) pairs.push([a, best]);
  }
  return pairs;
}

function rowId(question: string): string {
  return `qa-${createHash("sha256").update(questionKey(question)).digest("hex").slice(0, 12)}`;
}

function progressPath(out: string): string {
  return `${out}.progress.jsonl`;
}

/** Rows already in `out` (a torn last line from a crash is dropped and the file rewritten). */
function readExisting(out: string): QaRow[] {
  if (!existsSync(out)) return [];
  const rows: QaRow[] = [];
  let torn = false;
  for (const l of jsonlLines(readFileSync(out, "utf8"))) {
    if (!l.error) rows.push(l.value as QaRow);
    else if (l.last) torn = true;
    else throw new UsageError(`${out}:${l.line}: not a generated row (${l.error.message}); pass --fresh to start over`);
  }
  // keep what was whole (a sync rewrite, once, at start after a crash)
  if (torn) writeFileSync(out, rows.map((r) => `${JSON.stringify(r)}\n`).join(""));
  return rows;
}

function readDoneUnits(out: string): Set<string> {
  const p = progressPath(out);
  const done = new Set<string>();
  if (!existsSync(p)) return done;
  for (const l of jsonlLines(readFileSync(p, "utf8"))) {
    // a torn progress line (an error): that unit is redone, its rows are de-duplicated
    const u = l.value as { unit?: unknown } | null | undefined;
    if (typeof u?.unit === "string") done.add(u.unit);
  }
  return done;
}

function endpointError(e: unknown, stats: QaStats, out: string): InfraError {
  const msg = e instanceof Error ? e.message : String(e);
  const rows = stats.existing + stats.accepted;
  return new InfraError(
    `QA generation stopped: the model endpoint failed (${msg}). ${rows} rows are saved in ${out}; re-run the same command to resume.`,
    { cause: e },
  );
}

/**
 * Generate grounded question/answer rows from a corpus through an OpenAI-compatible endpoint (structured output).
 * Appends rows to `out` unit by unit and records finished units in `<out>.progress.jsonl`, so a re-run resumes
 * where it stopped without duplicates. Pairs whose quoted evidence is not in the chunk are dropped and counted.
 */
export async function generateQa(options: GenerateQaOptions): Promise<QaStats> {
  if (!Number.isInteger(options.n) || options.n < 1)
    throw new UsageError(`--n must be a positive integer, got ${options.n}`);
  if (!options.model && !options.client) throw new UsageError("a model is needed (--model)");
  const perChunk = options.perChunk ?? 2;
  const docs = await loadCorpus(options.corpus);
  const chunks = chunkCorpus(docs, options.chunking);
  const seed = options.seed ?? "";
  let units: Unit[] = options.multiHop
    ? linkChunks(chunks).map(([a, b]) => ({ key: `${a.hash}+${b.hash}`, chunks: [a, b] }))
    : chunks.map((c) => ({ key: c.hash, chunks: [c] }));
  units = [...new Map(units.map((u) => [u.key, u] as const)).values()];
  units.sort((a, b) => stableFraction(a.key, seed) - stableFraction(b.key, seed));
  if (units.length === 0) {
    throw new UsageError(
      options.multiHop
        ? `corpus ${options.corpus}: no two documents are linked (by a title mention or shared names), so no two-hop questions can be made`
        : `corpus ${options.corpus} has no chunks`,
    );
  }

  await mkdir(dirname(options.out), { recursive: true });
  if (options.fresh) {
    await writeFile(options.out, "");
    await writeFile(progressPath(options.out), "");
  }
  const existing = readExisting(options.out);
  const done = readDoneUnits(options.out);
  for (const r of existing) if (r.metadata?.unit) done.add(r.metadata.unit);
  const seenQuestions = new Set(existing.map((r) => questionKey(r.question)));

  const stats: QaStats = {
    chunks: chunks.length,
    units: units.length,
    resumedUnits: units.filter((u) => done.has(u.key)).length,
    doneUnits: 0,
    requests: 0,
    proposed: 0,
    accepted: 0,
    existing: existing.length,
    dropped: { ungrounded: 0, answer_not_in_evidence: 0, answer_in_question: 0, duplicate: 0, malformed: 0 },
    exhausted: false,
  };
  const target = options.n;
  const rows = () => stats.existing + stats.accepted;
  const report = () =>
    options.onProgress?.({
      rows: rows(),
      target,
      unitsDone: stats.resumedUnits + stats.doneUnits,
      units: units.length,
    });
  report();
  if (rows() >= target) return stats;

  const client =
    options.client ??
    new OpenAI({
      apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? "sk-none",
      baseURL: options.baseURL ?? process.env.OPENAI_BASE_URL,
      maxRetries: options.maxRetries ?? 2,
      timeout: options.timeoutMs ?? 120_000,
    });
  const model = options.model;

  // file appends are chained so units finishing together never interleave
  let writes: Promise<void> = Promise.resolve();
  const runUnit = async (unit: Unit): Promise<void> => {
    const multi = unit.chunks.length === 2;
    const want = Math.min(perChunk, Math.max(1, target - rows()));
    let content: string | null | undefined;
    stats.requests++;
    try {
      const res = await client.chat.completions.create({
        model,
        messages: [
          { role: "system", content: QA_SYSTEM_PROMPT },
          {
            role: "user",
            content: multi
              ? multiHopPrompt(unit.chunks[0]!, unit.chunks[1]!, want)
              : singleHopPrompt(unit.chunks[0]!, want),
          },
        ],
        response_format: {
          type: "json_schema",
          json_schema: {
            name: multi ? "multi_hop_qa_pairs" : "qa_pairs",
            strict: true,
            schema: (multi ? MULTI_HOP_SCHEMA : SINGLE_HOP_SCHEMA) as unknown as Record<string, unknown>,
          },
        },
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
      });
      const msg = res.choices?.[0]?.message;
      content = msg?.refusal ? null : msg?.content;
    } catch (e) {
      throw endpointError(e, stats, options.out);
    }
    const candidates: Array<{ question: string; answer: string; evidence: string[] }> = [];
    try {
      const json = JSON.parse(content ?? "");
      if (multi) {
        for (const p of multiReply.parse(json).pairs) {
          candidates.push({ question: p.question, answer: p.answer, evidence: [p.evidence_1, p.evidence_2] });
        }
      } else {
        for (const p of singleReply.parse(json).pairs) {
          candidates.push({ question: p.question, answer: p.answer, evidence: [p.evidence] });
        }
      }
    } catch {
      stats.dropped.malformed++;
    }
    const accepted: QaRow[] = [];
    for (const c of candidates) {
      stats.proposed++;
      const question = c.question.trim();
      const answer = c.answer.trim();
      if (!question || !answer) {
        stats.dropped.malformed++;
        continue;
      }
      if (!c.evidence.every((span, i) => spanOccursIn(span, unit.chunks[i]!.text))) {
        stats.dropped.ungrounded++;
        continue;
      }
      if (!c.evidence.some((span) => answerInSpan(answer, span))) {
        stats.dropped.answer_not_in_evidence++;
        continue;
      }
      if (` ${normalizeAnswer(question)} `.includes(` ${normalizeAnswer(answer)} `)) {
        stats.dropped.answer_in_question++;
        continue;
      }
      const key = questionKey(question);
      if (seenQuestions.has(key)) {
        stats.dropped.duplicate++;
        continue;
      }
      if (rows() + accepted.length >= target) break;
      seenQuestions.add(key);
      accepted.push({
        id: rowId(question),
        question,
        golden_answers: [answer],
        metadata: {
          hops: multi ? 2 : 1,
          unit: unit.key,
          chunk_ids: unit.chunks.map((x) => x.id),
          titles: unit.chunks.map((x) => x.title),
          evidence: c.evidence.map((e) => e.trim()),
          model,
        },
      });
    }
    // counted at once (synchronously), so concurrent units never overshoot n
    stats.accepted += accepted.length;
    // rows first, then the unit's progress line: a crash in between redoes the unit, and de-dup drops its repeats
    const write = async () => {
      if (accepted.length) await appendFile(options.out, accepted.map((r) => `${JSON.stringify(r)}\n`).join(""));
      await appendFile(progressPath(options.out), `${JSON.stringify({ unit: unit.key, accepted: accepted.length })}\n`);
    };
    writes = writes.then(write);
    await writes;
    stats.doneUnits++;
    done.add(unit.key);
    report();
  };

  // a small pool of workers over the units; the first endpoint failure stops new requests, in-flight ones finish
  const todo = units.filter((u) => !done.has(u.key));
  let next = 0;
  let failed: unknown;
  const worker = async () => {
    while (!failed && rows() < target && next < todo.length) {
      const unit = todo[next++]!;
      try {
        await runUnit(unit);
      } catch (e) {
        failed ??= e;
      }
    }
  };
  const concurrency = Math.max(1, options.concurrency ?? 4);
  await Promise.all(Array.from({ length: Math.min(concurrency, todo.length) }, worker));
  if (failed) throw failed;
  stats.exhausted = rows() < target;
  return stats;
}
