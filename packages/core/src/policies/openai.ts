import type OpenAI from "openai";
import { InfraError } from "../errors.js";
import { toHermesMessages } from "../hermes.js";
import { loadOpenAI, type OpenAIModule } from "../openai-sdk.js";
import type { Policy, PolicyReply } from "../policy.js";
import { validTurnTokens } from "../token-drift.js";
import type { AssistantMessage, Message, ToolCall } from "../types.js";

export interface OpenAIPolicyOptions {
  model: string;
  /** Default: OPENAI_BASE_URL, else the OpenAI API. */
  baseURL?: string;
  /** Default: OPENAI_API_KEY (a placeholder is sent to local endpoints that need none). */
  apiKey?: string;
  temperature?: number;
  /** max_tokens per completion. */
  maxTokens?: number;
  /** Retries on 429 / 5xx / connection errors before the rollout becomes infra_error. Default 4. */
  maxRetries?: number;
  /** First backoff (ms), doubled each retry. Default 500. */
  backoffMs?: number;
  /** Per-request timeout (ms). Default 120 s. */
  timeoutMs?: number;
  /** Extra body fields (e.g. vLLM's `top_k`). */
  extraBody?: Record<string, unknown>;
  /**
   * Ask a vLLM-like endpoint for token ids and logprobs (`return_token_ids: true`, `logprobs: true`) so that each
   * turn's ids are recorded. Off by default: OpenAI's own API refuses `return_token_ids`. Ids are recorded whenever
   * a reply carries them, whether this or `extraBody` asked for them.
   */
  tokenIds?: boolean;
}

/** vLLM's extensions of a chat completion (vllm/entrypoints/openai/chat_completion/protocol.py). */
interface VllmTokenFields {
  prompt_token_ids?: unknown;
  choices?: Array<{ token_ids?: unknown; logprobs?: { content?: Array<{ logprob?: unknown }> | null } | null }>;
}

/**
 * The turn's token record from a vLLM-shaped reply: the response's `prompt_token_ids`, the choice's `token_ids`
 * and `logprobs.content[].logprob` (numbers only; the per-token objects are dropped). Undefined unless both id
 * lists are there; logprobs only when there is one finite value per completion token.
 */
export function turnTokensOf(res: unknown): PolicyReply["tokens"] {
  const r = res as VllmTokenFields;
  const choice = r.choices?.[0];
  if (!r.prompt_token_ids || !choice?.token_ids) return undefined;
  const content = choice.logprobs?.content;
  return validTurnTokens({
    prompt_token_ids: r.prompt_token_ids,
    completion_token_ids: choice.token_ids,
    logprobs: Array.isArray(content) ? content.map((c) => c?.logprob) : undefined,
  });
}

const RETRYABLE = new Set([408, 409, 425, 429, 500, 502, 503, 504]);

function toAssistant(msg: OpenAI.Chat.Completions.ChatCompletionMessage): AssistantMessage {
  const out: AssistantMessage = { role: "assistant", content: msg.content ?? null };
  const calls = (msg.tool_calls ?? []).filter((c) => c.type === "function") as Array<{
    id: string;
    type: "function";
    function: { name: string; arguments: string };
  }>;
  if (calls.length) {
    out.tool_calls = calls.map(
      (c): ToolCall => ({
        id: c.id,
        type: "function",
        function: { name: c.function.name, arguments: c.function.arguments },
      }),
    );
  }
  return out;
}

/** A signal of its own that aborts when `parent` does; `unlink` removes the one listener put on `parent`. */
function linkedSignal(parent: AbortSignal | undefined): { signal: AbortSignal | undefined; unlink: () => void } {
  if (!parent) return { signal: undefined, unlink: () => {} };
  const ctl = new AbortController();
  if (parent.aborted) ctl.abort(parent.reason);
  const onAbort = () => ctl.abort(parent.reason);
  parent.addEventListener("abort", onAbort, { once: true });
  return { signal: ctl.signal, unlink: () => parent.removeEventListener("abort", onAbort) };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A policy backed by any OpenAI-compatible chat.completions endpoint (OpenAI, vLLM, SGLang, …), with native
 * `tool_calls` or Hermes text tool calls, and retry with backoff; exhausted retries are InfraError (→ infra_error).
 */
export function openaiPolicy(options: OpenAIPolicyOptions): Policy {
  const baseURL = options.baseURL ?? process.env.OPENAI_BASE_URL;
  const apiKey = options.apiKey ?? process.env.OPENAI_API_KEY ?? (baseURL ? "sk-local" : undefined);
  if (!apiKey)
    throw new InfraError("openai policy: no API key (set OPENAI_API_KEY or pass --api-key)", { retryable: false });
  if (!options.model) throw new InfraError("openai policy: no model (pass --model)", { retryable: false });
  let client: Promise<{ api: OpenAI; mod: OpenAIModule }> | undefined;
  const getClient = () => {
    client ??= loadOpenAI().then((mod) => ({
      mod,
      api: new mod.default({ apiKey, baseURL, maxRetries: 0, timeout: options.timeoutMs ?? 120_000 }),
    }));
    client.catch(() => {
      client = undefined;
    });
    return client;
  };
  const maxRetries = options.maxRetries ?? 4;
  const backoff = options.backoffMs ?? 500;

  return {
    name: `openai:${options.model}`,
    async act({ messages, tools, toolFormat, signal }): Promise<PolicyReply> {
      const wire: Message[] = toolFormat === "hermes" ? toHermesMessages(messages) : messages;
      const body: Record<string, unknown> = {
        model: options.model,
        messages: wire,
        ...(options.temperature !== undefined ? { temperature: options.temperature } : {}),
        ...(options.maxTokens !== undefined ? { max_tokens: options.maxTokens } : {}),
        ...(toolFormat === "openai" && tools.length
          ? { tools: tools.map((t) => ({ type: "function", function: t })) }
          : {}),
        ...(options.tokenIds ? { return_token_ids: true, logprobs: true } : {}),
        ...options.extraBody,
      };
      const { api, mod } = await getClient();
      let lastError = "";
      for (let attempt = 0; attempt <= maxRetries; attempt++) {
        if (attempt > 0) await sleep(backoff * 2 ** (attempt - 1));
        // the SDK adds an abort listener to the signal it is given and never removes it: give it a signal of its
        // own per request, linked to the run's, so that a run-long signal does not gather one listener per call
        const link = linkedSignal(signal);
        try {
          const res = (await api.chat.completions.create(body as never, {
            signal: link.signal,
          })) as OpenAI.Chat.Completions.ChatCompletion;
          const choice = res.choices?.[0];
          if (!choice?.message)
            throw new InfraError(`endpoint returned no choices (${JSON.stringify(res).slice(0, 200)})`);
          const tokens = turnTokensOf(res);
          return {
            message: toAssistant(choice.message),
            ...(tokens ? { tokens } : {}),
            finishReason: choice.finish_reason ?? undefined,
            ...(res.usage
              ? {
                  usage: {
                    prompt_tokens: res.usage.prompt_tokens,
                    completion_tokens: res.usage.completion_tokens,
                    total_tokens: res.usage.total_tokens,
                  },
                }
              : {}),
          };
        } catch (e) {
          if (e instanceof mod.APIError && e.status !== undefined) {
            lastError = `HTTP ${e.status}: ${e.message}`;
            if (!RETRYABLE.has(e.status)) break;
          } else if (e instanceof mod.APIConnectionError || e instanceof mod.APIConnectionTimeoutError) {
            lastError = `connection failed: ${e.message}${(e.cause as Error | undefined)?.message ? ` (${(e.cause as Error).message})` : ""}`;
          } else if (e instanceof InfraError) {
            lastError = e.message;
          } else {
            throw e;
          }
          if (signal?.aborted) break;
        } finally {
          link.unlink();
        }
      }
      throw new InfraError(`policy endpoint ${baseURL ?? "api.openai.com"} failed: ${lastError}`);
    },
  };
}
