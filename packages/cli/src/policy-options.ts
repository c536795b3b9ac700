import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { type Env, InfraError, openaiPolicy, type Policy, replayPolicy, UsageError } from "@benchmax/core";
import type { Command } from "commander";

export interface PolicyFlags {
  policy: string;
  model?: string;
  baseUrl?: string;
  apiKey?: string;
  temperature?: number;
  topP?: number;
  maxTokens?: number;
  /** Sampling seed sent to the endpoint (--seed). */
  seed?: number;
  /** Extra request body fields (--sampling-args JSON), e.g. vLLM's top_k. */
  samplingArgs?: Record<string, unknown>;
  replay?: string;
  /** Seconds per model call (--timeout). */
  timeout?: number;
  /** Ask a vLLM-like endpoint for token ids and logprobs per turn (--token-ids). */
  tokenIds?: boolean;
}

export function addPolicyOptions(cmd: Command): Command {
  return cmd
    .option("--policy <name>", "reference | openai | replay", "reference")
    .option("--model <model>", "model name for --policy openai (or OPENAI_MODEL)")
    .option("--base-url <url>", "OpenAI-compatible endpoint (or OPENAI_BASE_URL)")
    .option("--api-key <key>", "API key (or OPENAI_API_KEY)")
    .option("--temperature <t>", "sampling temperature (0 to 2)", (v) => parseNumberFlag(v, "--temperature", 0, 2))
    .option("--top-p <p>", "nucleus sampling top_p (0 to 1)", (v) => parseNumberFlag(v, "--top-p", 0, 1))
    .option("--max-tokens <n>", "max tokens per completion", (v) => parseIntFlag(v, "--max-tokens", 1))
    .option("--seed <n>", "sampling seed sent to the endpoint (recorded in run.json)", (v) => parseIntFlag(v, "--seed"))
    .option(
      "--sampling-args <json>",
      'extra request fields as a JSON object, e.g. \'{"top_k":20,"min_p":0.05}\' (recorded in run.json)',
      parseSamplingArgs,
    )
    .option(
      "--timeout <seconds>",
      "give up on one model call after this long (an infra_error, retried); also bounds the start-up check",
      (v) => {
        const n = parseNumberFlag(v, "--timeout");
        if (n <= 0) throw new UsageError(`--timeout must be a positive number of seconds, got "${v}"`);
        return n;
      },
      120,
    )
    .option("--replay <results.jsonl>", "results file for --policy replay")
    .option(
      "--token-ids",
      "record each turn's prompt/completion token ids and logprobs (vLLM's return_token_ids; OpenAI's API refuses it)",
    );
}

/** Request fields that --sampling-args may not set: the policy owns them, or a flag does. */
const RESERVED_SAMPLING_KEYS: Record<string, string> = {
  model: "--model",
  messages: "the episode",
  tools: "--tool-format",
  tool_choice: "--tool-format",
  stream: "the policy",
  temperature: "--temperature",
  top_p: "--top-p",
  max_tokens: "--max-tokens",
  max_completion_tokens: "--max-tokens",
  seed: "--seed",
};

export function parseSamplingArgs(v: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(v);
  } catch (e) {
    throw new UsageError(`--sampling-args must be a JSON object, got "${v}" (${(e as Error).message})`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new UsageError(`--sampling-args must be a JSON object, got "${v}"`);
  }
  for (const k of Object.keys(parsed)) {
    const owner = RESERVED_SAMPLING_KEYS[k];
    if (owner) throw new UsageError(`--sampling-args: "${k}" is set by ${owner}, not here`);
  }
  return parsed as Record<string, unknown>;
}

/**
 * What shapes a model's samples, for the run identity (run.json): a resume or `compare` with other values is
 * refused as config drift. Empty for policies that sample nothing (reference, replay).
 */
export function samplingIdentity(flags: PolicyFlags): Record<string, unknown> {
  if (flags.policy !== "openai") return {};
  return {
    model: flags.model ?? process.env.OPENAI_MODEL ?? null,
    baseUrl: flags.baseUrl ?? process.env.OPENAI_BASE_URL ?? null,
    temperature: flags.temperature ?? null,
    topP: flags.topP ?? null,
    maxTokens: flags.maxTokens ?? null,
    seed: flags.seed ?? null,
    samplingArgs: flags.samplingArgs ?? {},
  };
}

export function parseIntFlag(v: string, flag: string, min = 0): number {
  const n = v.trim() === "" ? Number.NaN : Number(v);
  if (!Number.isInteger(n) || n < min) {
    throw new UsageError(
      `${flag} must be ${min === 0 ? "a non-negative integer" : min === 1 ? "a positive integer" : `an integer >= ${min}`}, got "${v}"`,
    );
  }
  return n;
}

export function parseNumberFlag(v: string, flag: string, min?: number, max?: number): number {
  const n = v.trim() === "" ? Number.NaN : Number(v);
  if (!Number.isFinite(n)) throw new UsageError(`${flag} must be a number, got "${v}"`);
  if ((min !== undefined && n < min) || (max !== undefined && n > max)) {
    const range =
      min !== undefined && max !== undefined
        ? `between ${min} and ${max}`
        : min !== undefined
          ? `>= ${min}`
          : `<= ${max}`;
    throw new UsageError(`${flag} must be ${range}, got "${v}"`);
  }
  return n;
}

/**
 * Fail fast with one clear line when the endpoint is down: refused connections, and servers that accept a
 * connection but never answer (a hung endpoint). Any HTTP reply, whatever its status, counts as alive.
 */
export async function checkReachable(url: string, timeoutMs = 10_000): Promise<void> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new UsageError(`invalid endpoint URL "${url}"`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new UsageError(`endpoint URL must be http(s), got "${url}"`);
  }
  const target = new URL(`${u.pathname.replace(/\/+$/, "")}/models`, u);
  const request = (u.protocol === "https:" ? httpsRequest : httpRequest)(target, { method: "GET" });
  await new Promise<void>((resolve, reject) => {
    let connected = false;
    const timer = setTimeout(() => {
      request.destroy();
      reject(
        new InfraError(
          connected
            ? `policy endpoint ${url} accepted a connection but sent no answer in ${timeoutMs / 1000} s (hung server?)`
            : `policy endpoint ${url} is unreachable (no connection in ${timeoutMs / 1000} s)`,
        ),
      );
    }, timeoutMs);
    request.once("socket", (s) => {
      if (!s.connecting) connected = true;
      else s.once("connect", () => (connected = true));
    });
    request.once("response", (res) => {
      clearTimeout(timer);
      res.resume();
      request.destroy();
      resolve();
    });
    request.once("error", (e) => {
      clearTimeout(timer);
      reject(
        new InfraError(`policy endpoint ${url} is unreachable (${(e as NodeJS.ErrnoException).code ?? e.message})`),
      );
    });
    request.end();
  });
}

export async function makePolicy(env: Env, flags: PolicyFlags): Promise<Policy> {
  switch (flags.policy) {
    case "reference": {
      const reference = env.capabilities?.reference;
      if (!reference) throw new UsageError(`env ${env.name} has no reference policy; use --policy openai`);
      return reference.referencePolicy();
    }
    case "openai": {
      const model = flags.model ?? process.env.OPENAI_MODEL;
      if (!model) throw new UsageError("--policy openai needs --model (or OPENAI_MODEL)");
      const baseURL = flags.baseUrl ?? process.env.OPENAI_BASE_URL;
      const timeoutMs = (flags.timeout ?? 120) * 1000;
      if (baseURL) await checkReachable(baseURL, Math.min(timeoutMs, 10_000));
      else if (!flags.apiKey && !process.env.OPENAI_API_KEY) {
        throw new UsageError("--policy openai needs --base-url (or OPENAI_BASE_URL) or an API key (OPENAI_API_KEY)");
      }
      return openaiPolicy({
        model,
        baseURL,
        apiKey: flags.apiKey,
        temperature: flags.temperature,
        maxTokens: flags.maxTokens,
        timeoutMs,
        tokenIds: flags.tokenIds,
        extraBody: {
          ...flags.samplingArgs,
          ...(flags.topP !== undefined ? { top_p: flags.topP } : {}),
          ...(flags.seed !== undefined ? { seed: flags.seed } : {}),
        },
      });
    }
    case "replay": {
      if (!flags.replay) throw new UsageError("--policy replay needs --replay <results.jsonl>");
      return replayPolicy(flags.replay);
    }
    default:
      throw new UsageError(`unknown policy "${flags.policy}" (reference | openai | replay)`);
  }
}
