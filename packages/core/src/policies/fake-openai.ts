import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * How the fake endpoint answers one request: an assistant message; an HTTP error status (with an OpenAI-shaped error
 * body); `raw` text as a 200 body (garbage a client must survive); `hang`, never answering; or `reset`, the
 * connection dropped.
 */
export type FakeOpenAIAnswer =
  | { message: Record<string, unknown>; finishReason?: string }
  | { status: number; error?: string }
  | { raw: string }
  | "hang"
  | "reset";

export interface FakeOpenAI {
  /** Base URL, ending in /v1. */
  url: string;
  /** Every request body received, in order. */
  requests: Array<Record<string, any>>;
  close(): Promise<void>;
}

/**
 * A local OpenAI-compatible chat.completions endpoint on 127.0.0.1 (for tests). Each request is answered with
 * `answer(body)`: by default the assistant message `ok`. An error status comes with an OpenAI-shaped error body.
 */
export async function startFakeOpenAI(
  answer: (body: Record<string, any>) => FakeOpenAIAnswer = () => ({ message: { role: "assistant", content: "ok" } }),
  options: { model?: string } = {},
): Promise<FakeOpenAI> {
  const requests: Array<Record<string, any>> = [];
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c) => (raw += c));
    req.on("end", () => {
      let body: Record<string, any>;
      try {
        body = JSON.parse(raw || "{}");
      } catch {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "request body is not JSON", type: "invalid_request_error" } }));
        return;
      }
      requests.push(body);
      const a = answer(body);
      if (a === "hang") return; // the client's timeout ends it
      if (a === "reset") {
        req.socket.destroy();
        return;
      }
      if ("status" in a) {
        res.writeHead(a.status, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: a.error ?? `fake error ${a.status}`, type: "server_error" } }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      if ("raw" in a) {
        res.end(a.raw);
        return;
      }
      res.end(
        JSON.stringify({
          id: "chatcmpl-fake",
          object: "chat.completion",
          created: 0,
          model: options.model ?? body.model ?? "fake",
          choices: [{ index: 0, finish_reason: a.finishReason ?? "stop", message: a.message }],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
