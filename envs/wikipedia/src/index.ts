import { join } from "node:path";
import {
  defineEnv,
  defineEnvModule,
  defineOptions,
  type Env,
  type EnvOptions,
  InfraError,
  lastAssistantText,
  UsageError,
} from "@benchmax/core";
import { z } from "zod";
import type { WikiBackend } from "./backend.js";
import { loadWikiTasks, parseWikiTask, type WikiTask } from "./dataset.js";
import { distractorBackend } from "./distractor.js";
import { LiveBackend, type LiveBackendOptions } from "./live-backend.js";
import { OfflineBackend } from "./offline-backend.js";
import { fixturesDir } from "./paths.js";
import { wikiReferencePolicy } from "./reference-policy.js";
import { DEFAULT_REWARD_WEIGHTS, explainAnswer, scoreAnswer } from "./reward.js";
import { newWikiState, type WikiState, wikiTools } from "./tools.js";

export * from "./backend.js";
export * from "./corpus.js";
export * from "./dataset.js";
export * from "./distractor.js";
export * from "./hotpot-eval.js";
export * from "./html-text.js";
export * from "./live-backend.js";
export * from "./mock-mediawiki.js";
export * from "./offline-backend.js";
export * from "./ranking.js";
export * from "./reference-policy.js";
export * from "./reward.js";
export * from "./tools.js";

/** The fixture corpus shipped with the package (173 fictional articles). */
export const FIXTURE_CORPUS = join(fixturesDir, "corpus.jsonl");

export interface WikiEnvOptions extends Omit<LiveBackendOptions, "baseUrl"> {
  /**
   * "fullwiki" (default): search the whole backend (offline corpus or live wiki). "distractor": each task searches
   * only its own context paragraphs (HotpotQA's distractor setting) — no corpus, dump or network needed.
   */
  setting?: "fullwiki" | "distractor";
  /** "offline" (default): BM25 over `corpus`; "live": a MediaWiki at `baseUrl`. */
  backend?: "offline" | "live";
  /** Offline corpus: a JSONL file of {title, text, url?} or a folder of .txt/.md/.html (default: the fixture corpus). */
  corpus?: string;
  /** Live: the wiki's base URL (default https://en.wikipedia.org). */
  baseUrl?: string;
  /** Default dataset for `loadTasks()` without a source (default: the embedded fixtures). */
  dataset?: string;
  /** A ready backend (tests, custom sources); overrides `backend`. */
  backendInstance?: WikiBackend;
  /** Reward weights (default `{exact_match: 1}`; f1 and format are reported only). */
  rewardWeights?: Record<string, number>;
}

export const SYSTEM_PROMPT = [
  "You answer questions that need several facts from an encyclopedia. Use the tools:",
  "- search_wikipedia(query, limit) finds article titles;",
  "- get_wikipedia_article(title, offset, max_chars) reads an article.",
  "Follow the question hop by hop: find the first entity, read its article, then look up what it points to.",
  "When you know the answer, reply with a short answer (a name, a number, yes or no) inside <answer></answer>,",
  "for example <answer>Marie Curie</answer>.",
].join("\n");

const str = (v: unknown, name: string): string | undefined => {
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v !== "string") throw new UsageError(`wikipedia: option ${name} must be a string`);
  return v;
};
const num = (v: unknown, name: string): number | undefined => {
  if (v === undefined || v === null || v === "") return undefined;
  const n = typeof v === "number" ? v : Number(v);
  if (!Number.isFinite(n) || n < 0)
    throw new UsageError(`wikipedia: option ${name} must be a non-negative number, got ${String(v)}`);
  return n;
};

/** Create the backend an options object asks for. Offline corpora are indexed once, here. */
export async function createBackend(options: WikiEnvOptions = {}): Promise<WikiBackend> {
  if (options.backendInstance) return options.backendInstance;
  const kind = options.backend ?? "offline";
  if (kind === "live") {
    return new LiveBackend({ ...options, baseUrl: options.baseUrl ?? "https://en.wikipedia.org" });
  }
  if (kind !== "offline") throw new UsageError(`wikipedia: backend must be "offline" or "live", got "${String(kind)}"`);
  return OfflineBackend.fromPath(options.corpus ?? FIXTURE_CORPUS);
}

/** Reward weights from code (an object) or the command line (`exact_match=1,f1=0.5` or JSON). */
function weights(v: unknown): Record<string, number> | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  let obj: unknown = v;
  if (typeof v === "string") {
    const t = v.trim();
    obj = t.startsWith("{")
      ? JSON.parse(t)
      : Object.fromEntries(t.split(",").map((kv) => kv.split("=").map((x) => x.trim()) as [string, string]));
  }
  if (!obj || typeof obj !== "object" || Array.isArray(obj))
    throw new UsageError("wikipedia: rewardWeights must be an object");
  const out: Record<string, number> = {};
  for (const [k, x] of Object.entries(obj as Record<string, unknown>)) {
    if (!["exact_match", "f1", "format"].includes(k)) {
      throw new UsageError(`wikipedia: rewardWeights: unknown component "${k}" (exact_match, f1, format)`);
    }
    const n = Number(x);
    if (!Number.isFinite(n)) throw new UsageError(`wikipedia: rewardWeights.${k} must be a number, got ${String(x)}`);
    out[k] = n;
  }
  return out;
}

/** Normalise `--env-opt key=value` strings into typed options. */
export function parseEnvOptions(raw: EnvOptions = {}): WikiEnvOptions {
  return {
    ...(raw as WikiEnvOptions),
    backend: (str(raw.backend, "backend") as WikiEnvOptions["backend"]) ?? "offline",
    setting: (str(raw.setting, "setting") as WikiEnvOptions["setting"]) ?? "fullwiki",
    corpus: str(raw.corpus, "corpus"),
    baseUrl: str(raw.baseUrl, "baseUrl"),
    cacheDir: str(raw.cacheDir, "cacheDir"),
    dataset: str(raw.dataset, "dataset"),
    userAgent: str(raw.userAgent, "userAgent"),
    concurrency: num(raw.concurrency, "concurrency"),
    retries: num(raw.retries, "retries"),
    timeoutMs: num(raw.timeoutMs, "timeoutMs"),
    rewardWeights: weights(raw.rewardWeights),
  };
}

/** The wikipedia env: multi-hop QA through search + read tools, scored with the official HotpotQA metrics. */
export async function createWikipediaEnv(options: EnvOptions = {}): Promise<Env<WikiTask>> {
  const opts = parseEnvOptions(options);
  if (opts.setting !== "fullwiki" && opts.setting !== "distractor") {
    throw new UsageError(`wikipedia: setting must be "fullwiki" or "distractor", got "${String(opts.setting)}"`);
  }
  const distractor = opts.setting === "distractor";
  // the distractor setting builds each rollout's backend from its task: no shared corpus to load
  const backend = distractor ? undefined : await createBackend(opts);
  const getBackend = async (state: WikiState) => (state.backend ?? backend)!;
  return defineEnv<WikiTask, WikiState>({
    name: "wikipedia",
    description,
    systemPrompt: SYSTEM_PROMPT,
    tools: wikiTools(getBackend),
    initState: (task) =>
      distractor ? Object.assign({}, newWikiState(), { backend: distractorBackend(task) }) : newWikiState(),
    // children share the parent's read-only search space; counters start from the parent's
    forkState: (state) => ({ ...state }),
    reward: ({ completion, task, state }) => {
      if (state.backendFailures > 0 && state.backendOk === 0) {
        const kind = (state.backend ?? backend)?.kind ?? "offline";
        throw new InfraError(
          `wikipedia: the ${kind} backend was unavailable for the whole rollout (${state.backendFailures} failed calls; last: ${state.lastFailure})`,
        );
      }
      return scoreAnswer(completion, task.groundTruth);
    },
    rewardWeights: opts.rewardWeights ?? DEFAULT_REWARD_WEIGHTS,
    // the reward reads the final answer (the state only says whether the backend was down): rescore works
    rewardReads: "conversation",
    explainReward: (_id, messages, task) => explainAnswer(lastAssistantText(messages), task.groundTruth),
    parseTask: parseWikiTask,
    loadTasks: (source, o) => loadWikiTasks(source ?? opts.dataset, o),
    referencePolicy: wikiReferencePolicy,
    rolloutMetadata: (_id, state) => ({
      backend: distractor ? "distractor" : backend!.kind,
      backendOk: state.backendOk,
      backendFailures: state.backendFailures,
    }),
    close: () => backend?.close?.(),
  });
}

const description =
  "Multi-hop question answering over Wikipedia (live MediaWiki API) or your own corpus (offline BM25); " +
  "HotpotQA / 2Wiki / MuSiQue / Bamboogle / FlashRAG rows; official HotpotQA exact match and F1.";

const count = z.number().min(0);

/** The options `--env-opt` (and `createEnv`) accept: an unknown name fails with "did you mean …?". */
export const wikiOptions = defineOptions(
  z.object({
    setting: z.enum(["fullwiki", "distractor"]).optional().describe("fullwiki (default) or distractor"),
    backend: z.enum(["offline", "live"]).optional().describe("offline BM25 corpus (default) or a live MediaWiki"),
    corpus: z.string().optional().describe("offline corpus: a JSONL file or a folder"),
    baseUrl: z.string().optional().describe("live: the wiki's base URL"),
    apiPath: z.string().optional(),
    restPath: z.string().optional(),
    cacheDir: z.string().optional().describe("live: on-disk response cache"),
    dataset: z.string().optional().describe("default dataset for loadTasks()"),
    userAgent: z.string().optional(),
    concurrency: count.optional(),
    retries: count.optional(),
    retryBaseMs: count.optional(),
    timeoutMs: count.optional(),
    memoryCacheSize: count.optional(),
    rewardWeights: z
      .union([z.string(), z.record(z.string(), z.number())])
      .optional()
      .describe("exact_match=1,f1=0.5 or JSON"),
    backendInstance: z.custom<WikiBackend>((v) => !!v && typeof v === "object").optional(),
  }),
);

const wikipedia = defineEnvModule({
  name: "wikipedia",
  description,
  options: wikiOptions,
  createEnv: (options) => createWikipediaEnv(options as EnvOptions),
});

export default wikipedia;
