import { createHash } from "node:crypto";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import type OpenAI from "openai";
import { EnvError, InfraError } from "./errors.js";
import { loadOpenAI, type OpenAIModule } from "./openai-sdk.js";
import type { RewardContext, RubricComponent } from "./rubric.js";
import type { Task } from "./types.js";

export interface JudgeOptions {
  model: string;
  baseURL?: string;
  apiKey?: string;
  /** Prompt template; `{{question}}`, `{{completion}}`, `{{ground_truth}}` and any `vars` are filled in. */
  template: string;
  /** Turn the judge's reply into a score; default: {"score": x} JSON, `score: x`, or yes/no. */
  parse?: (reply: string) => number;
  /** Divide parsed scores by this (e.g. 10 for a 0–10 scale). Default 1. */
  scale?: number;
  /** Cache replies: in memory (default), and in this JSONL file when given. */
  cacheFile?: string;
  maxRetries?: number;
  temperature?: number;
  timeoutMs?: number;
}

/** Default score parser: a JSON object with "score", `Score: x`, a bare number, or yes/no. NaN when none. */
export function parseJudgeScore(reply: string): number {
  const json = reply.match(/\{[^{}]*"score"\s*:\s*(-?\d+(?:\.\d+)?)[^{}]*\}/i);
  if (json) return Number(json[1]);
  const labelled = reply.match(/score\s*[:=]\s*(-?\d+(?:\.\d+)?)/i);
  if (labelled) return Number(labelled[1]);
  const trimmed = reply.trim();
  if (/^-?\d+(?:\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const yn = trimmed.match(/^\W*(yes|no)\b/i);
  if (yn) return yn[1]!.toLowerCase() === "yes" ? 1 : 0;
  return Number.NaN;
}

export function fillTemplate(template: string, vars: Record<string, unknown>): string {
  return template.replace(/\{\{\s*([A-Za-z0-9_]+)\s*\}\}/g, (m, k: string) => {
    if (!(k in vars)) return m;
    const v = vars[k];
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** An LLM judge through an OpenAI-compatible endpoint, with caching; endpoint failures are InfraError. */
export class LlmJudge {
  private client: Promise<{ api: OpenAI; mod: OpenAIModule }> | undefined;
  private readonly clientOptions: { apiKey: string; baseURL: string | undefined; maxRetries: number; timeout: number };
  private readonly cache = new Map<string, string>();
  calls = 0;
  hits = 0;

  constructor(readonly options: JudgeOptions) {
    const baseURL = options.baseURL ?? process.env.OPENAI_BASE_URL;
    const apiKey = options.apiKey ?? process.env.OPENAI_API_KEY ?? "sk-local";
    this.clientOptions = { apiKey, baseURL, maxRetries: 0, timeout: options.timeoutMs ?? 60_000 };
    if (options.cacheFile && existsSync(options.cacheFile)) {
      for (const line of readFileSync(options.cacheFile, "utf8").split("\n")) {
        if (!line.trim()) continue;
        try {
          const { key, reply } = JSON.parse(line) as { key: string; reply: string };
          this.cache.set(key, reply);
        } catch {
          /* a torn cache line is ignored */
        }
      }
    }
  }

  /** The judge's raw reply to a prompt (cached). */
  async complete(prompt: string): Promise<string> {
    const key = createHash("sha256").update(`${this.options.model}\n${prompt}`).digest("hex");
    const hit = this.cache.get(key);
    if (hit !== undefined) {
      this.hits++;
      return hit;
    }
    this.calls++;
    this.client ??= loadOpenAI().then((mod) => ({ mod, api: new mod.default(this.clientOptions) }));
    this.client.catch(() => {
      this.client = undefined;
    });
    const { api, mod } = await this.client;
    const retries = this.options.maxRetries ?? 3;
    let last = "";
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt) await sleep(300 * 2 ** (attempt - 1));
      try {
        const res = await api.chat.completions.create({
          model: this.options.model,
          messages: [{ role: "user", content: prompt }],
          temperature: this.options.temperature ?? 0,
        });
        const reply = res.choices?.[0]?.message?.content ?? "";
        this.cache.set(key, reply);
        if (this.options.cacheFile) appendFileSync(this.options.cacheFile, `${JSON.stringify({ key, reply })}\n`);
        return reply;
      } catch (e) {
        last = e instanceof Error ? e.message : String(e);
        if (e instanceof mod.APIError && e.status !== undefined && e.status < 500 && e.status !== 429) break;
      }
    }
    throw new InfraError(`LLM judge ${this.options.model} failed: ${last}`);
  }

  /** Score a filled-in prompt in [0, 1] (after `scale`). */
  async score(vars: Record<string, unknown>): Promise<number> {
    const prompt = fillTemplate(this.options.template, vars);
    const reply = await this.complete(prompt);
    const raw = (this.options.parse ?? parseJudgeScore)(reply);
    if (!Number.isFinite(raw)) throw new EnvError(`LLM judge reply has no score: ${reply.slice(0, 200)}`);
    return raw / (this.options.scale ?? 1);
  }
}

/** A rubric component scored by an LLM judge. */
export function judgeComponent<T extends Task, S>(
  name: string,
  judge: LlmJudge,
  options: { weight?: number; vars?: (ctx: RewardContext<T, S>) => Record<string, unknown> } = {},
): RubricComponent<T, S> {
  return {
    name,
    weight: options.weight,
    score: (ctx) =>
      judge.score({
        question: ctx.task.prompt ?? "",
        completion: ctx.completion,
        ground_truth: ctx.task.groundTruth,
        ...options.vars?.(ctx),
      }),
  };
}
