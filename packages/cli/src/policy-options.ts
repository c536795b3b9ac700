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
  maxTokens?: number;
  replay?: string;
  /** Seconds per model call (--timeout). */
  timeout?: number;
}

export function addPolicyOptions(cmd: Command): Command {
  return cmd
    .option("--policy <name>", "reference | openai | replay", "reference")
    .option("--model <model>", "model name for --policy openai (or OPENAI_MODEL)")
    .option("--base-url <url>", "OpenAI-compatible endpoint (or OPENAI_BASE_URL)")
    .option("--api-key <key>", "API key (or OPENAI_API_KEY)")
    .option("--temperature <t>", "sampling temperature (0 to 2)", (v) => parseNumberFlag(v, "--temperature", 0, 2))
    .option("--max-tokens <n>", "max tokens per completion", (v) => parseIntFlag(v, "--max-tokens", 1))
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
    .option("--replay <results.jsonl>", "results file for --policy replay");
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
      if (!env.referencePolicy) throw new UsageError(`env ${env.name} has no reference policy; use --policy openai`);
      return env.referencePolicy();
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
