import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runRollout } from "../rollout.js";
import { adderEnv, adderTask } from "./adder-env.test-util.js";
import { openaiPolicy } from "./openai.js";

/** A local OpenAI-compatible server answering real-shaped chat.completions JSON. */
let server: Server;
let base = "";
const requests: Array<Record<string, any>> = [];
let failuresLeft = 0;
let mode: "native" | "text" = "native";

function completion(message: Record<string, unknown>, finish: string) {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    created: 1_700_000_000,
    model: "fake-model",
    choices: [{ index: 0, message, finish_reason: finish, logprobs: null }],
    usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      if (req.url !== "/v1/chat/completions") {
        res.writeHead(404).end();
        return;
      }
      const json = JSON.parse(body);
      requests.push(json);
      if (json.model === "always-down" || failuresLeft > 0) {
        failuresLeft = Math.max(0, failuresLeft - 1);
        res.writeHead(503, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "overloaded", type: "server_error", code: null } }));
        return;
      }
      const hasTool = json.messages.some((m: { role: string; content: string }) =>
        mode === "native" ? m.role === "tool" : m.role === "user" && m.content.includes("<tool_response>"),
      );
      res.writeHead(200, { "content-type": "application/json" });
      if (hasTool) {
        res.end(JSON.stringify(completion({ role: "assistant", content: "<answer>4</answer>" }, "stop")));
      } else if (mode === "native") {
        res.end(
          JSON.stringify(
            completion(
              {
                role: "assistant",
                content: null,
                tool_calls: [
                  { id: "call_abc", type: "function", function: { name: "add", arguments: '{"a":2,"b":2}' } },
                ],
              },
              "tool_calls",
            ),
          ),
        );
      } else {
        res.end(
          JSON.stringify(
            completion(
              {
                role: "assistant",
                content: '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 2}}\n</tool_call>',
              },
              "stop",
            ),
          ),
        );
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const env = adderEnv;
const task = adderTask;

describe("openaiPolicy against a local OpenAI-compatible server", () => {
  it("drives a native tool_calls episode", async () => {
    mode = "native";
    requests.length = 0;
    const r = await runRollout(env, task, openaiPolicy({ model: "fake-model", baseURL: base, temperature: 0 }), {
      toolFormat: "openai",
    });
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(1);
    expect(r.usage).toEqual({ prompt_tokens: 20, completion_tokens: 10, total_tokens: 30 });
    expect(requests[0]!.tools[0]).toMatchObject({ type: "function", function: { name: "add" } });
    expect(requests[1]!.messages.at(-1)).toMatchObject({ role: "tool", tool_call_id: "call_abc", content: "4" });
  });

  it("drives a Hermes text episode (tools in the system prompt, results as <tool_response>)", async () => {
    mode = "text";
    requests.length = 0;
    const r = await runRollout(env, task, openaiPolicy({ model: "fake-model", baseURL: base }), {
      toolFormat: "hermes",
    });
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(1);
    expect(requests[0]!.tools).toBeUndefined();
    expect(requests[0]!.messages[0].content).toContain("<tools>");
    expect(requests[1]!.messages.at(-1)).toEqual({ role: "user", content: "<tool_response>\n4\n</tool_response>" });
  });

  it("retries 5xx with backoff, then succeeds", async () => {
    mode = "native";
    failuresLeft = 2;
    const r = await runRollout(env, task, openaiPolicy({ model: "fake-model", baseURL: base, backoffMs: 1 }), {
      toolFormat: "openai",
    });
    expect(r.outcome).toBe("completed");
  });

  it("ends as infra_error, unscored, when retries run out or the endpoint is unreachable", async () => {
    const down = await runRollout(
      env,
      task,
      openaiPolicy({ model: "always-down", baseURL: base, maxRetries: 2, backoffMs: 1 }),
    );
    expect(down.outcome).toBe("infra_error");
    expect(down.error).toMatch(/HTTP 503/);
    expect(down.reward).toBeUndefined();
    const unreachable = await runRollout(
      env,
      task,
      openaiPolicy({ model: "m", baseURL: "http://127.0.0.1:9/v1", maxRetries: 1, backoffMs: 1 }),
    );
    expect(unreachable.outcome).toBe("infra_error");
    expect(unreachable.error).toMatch(/connection failed/i);
  });
});
