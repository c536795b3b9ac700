import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Message, RolloutResult } from "@benchmax/core";
import { scriptJson } from "./html-escape.js";
import { rolloutIdOf } from "./load-run.js";

/** What the viewer shows for one rollout, beyond its row in the index: the conversation and the reward detail. */
export interface Transcript {
  rolloutId: string;
  messages: Message[];
  rewards?: Record<string, number>;
  truncatedBy?: string;
  usage?: unknown;
  attempt?: number;
  error?: string;
  metadata?: Record<string, unknown>;
  /** The env's explanation: the extracted answer beside the gold (reports are harness side). */
  explain?: { extracted?: string; gold?: string; diff?: string[] };
  /** The task's metadata fields (split, level, type…). */
  taskMeta?: Record<string, string | number | boolean>;
}

/** Where a rollout's transcript lives: chunk number and position inside it. */
export type TranscriptRef = [chunk: number, pos: number];

export interface TranscriptStoreOptions {
  /** Flush a chunk once its JSON reaches this many bytes (default 1 MiB). */
  chunkBytes?: number;
  /** Longest text kept per message; longer content is cut with a note (default 100,000 characters). */
  maxMessageChars?: number;
}

/** The name of a chunk file inside the sidecar folder. */
export const chunkFileName = (i: number): string => `chunk-${String(i).padStart(4, "0")}.js`;
const CHUNK_FILE = /^chunk-\d{4,}\.js$/;

/** The global function a chunk file calls when loaded with a <script> element (file:// pages cannot fetch). */
export const CHUNK_CALLBACK = "benchmaxTranscriptChunk";

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}\n… [${text.length - max} more characters cut by the report]` : text;
}

function capMessage(m: Message, max: number): Message {
  if (typeof m.content === "string")
    return m.content.length > max ? ({ ...m, content: cut(m.content, max) } as Message) : m;
  if (Array.isArray(m.content)) {
    return {
      ...m,
      content: m.content.map((p) =>
        p.type === "text"
          ? { ...p, text: cut(p.text, max) }
          : { type: "image_url", image_url: { url: p.image_url.url.startsWith("data:") ? "data:…" : p.image_url.url } },
      ),
    } as Message;
  }
  return m;
}

/** The transcript of a rollout result, with oversized message texts cut. */
export function transcriptOf(r: RolloutResult, maxMessageChars = 100_000): Transcript {
  const t: Transcript = {
    rolloutId: rolloutIdOf(r),
    messages: Array.isArray(r.messages) ? r.messages.map((m) => capMessage(m, maxMessageChars)) : [],
  };
  if (r.rewards) t.rewards = r.rewards;
  if (r.truncatedBy) t.truncatedBy = r.truncatedBy;
  if (r.usage) t.usage = r.usage;
  if (typeof r.attempt === "number") t.attempt = r.attempt;
  if (r.error) t.error = r.error;
  if (r.metadata) t.metadata = r.metadata;
  if (r.explain) t.explain = r.explain;
  if (r.taskMeta) t.taskMeta = r.taskMeta;
  return t;
}

/**
 * Collects transcripts into chunks of about `chunkBytes` of JSON each. The chunks end up either inlined in the page
 * (small runs: one file to attach anywhere) or as sidecar files the page loads on demand.
 */
export class TranscriptStore {
  readonly chunks: string[][] = [];
  private current: string[] = [];
  private currentBytes = 0;
  totalBytes = 0;
  private readonly chunkBytes: number;
  private readonly maxMessageChars: number;

  constructor(options: TranscriptStoreOptions = {}) {
    this.chunkBytes = options.chunkBytes ?? 1 << 20;
    this.maxMessageChars = options.maxMessageChars ?? 100_000;
  }

  /** Add a rollout; returns where its transcript is. */
  add(r: RolloutResult): TranscriptRef {
    if (this.currentBytes >= this.chunkBytes) this.flush();
    const json = scriptJson(transcriptOf(r, this.maxMessageChars));
    const ref: TranscriptRef = [this.chunks.length, this.current.length];
    this.current.push(json);
    this.currentBytes += json.length + 1;
    this.totalBytes += json.length + 1;
    return ref;
  }

  /** Close the open chunk (call once, after the last add). */
  finish(): void {
    this.flush();
  }

  private flush(): void {
    if (this.current.length === 0) return;
    this.chunks.push(this.current);
    this.current = [];
    this.currentBytes = 0;
  }

  /** One chunk as a JSON array text. */
  chunkJson(i: number): string {
    return `[${this.chunks[i]!.join(",")}]`;
  }

  /**
   * Write the chunks as `<dir>/chunk-NNNN.js`, each calling `benchmaxTranscriptChunk(reportId, i, [...])`: loadable
   * by a <script> element from a file:// page and by fetch from a served one. Chunk files left by an earlier report
   * in `dir` are removed first, so a stale chunk is never read.
   */
  writeSidecar(dir: string, reportId: string): string[] {
    clearSidecar(dir);
    mkdirSync(dir, { recursive: true });
    return this.chunks.map((_, i) => {
      const file = join(dir, chunkFileName(i));
      writeFileSync(file, `${CHUNK_CALLBACK}(${JSON.stringify(reportId)},${i},${this.chunkJson(i)});\n`);
      return file;
    });
  }
}

/** Remove the chunk files of an earlier report from `dir` (and `dir` itself when that leaves it empty). */
export function clearSidecar(dir: string): void {
  if (!existsSync(dir)) return;
  for (const f of readdirSync(dir)) if (CHUNK_FILE.test(f)) rmSync(join(dir, f));
  if (readdirSync(dir).length === 0) rmSync(dir, { recursive: true });
}
