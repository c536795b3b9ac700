import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { HttpError } from "../http-error.js";
import type { RolloutService } from "../service/index.js";
import type { McpAnswer } from "./mcp-exchange.js";
import { isStreamableHttp, type McpHttpCaller, McpHttpSessions } from "./mcp-http.js";
import { McpJsonRpc, parseError } from "./mcp-json-rpc.js";

const forbiddenSessionless = () =>
  new HttpError(
    403,
    "FORBIDDEN",
    "a rollout token opens MCP sessions on its rollout only (initialize with Accept: text/event-stream); sessionless JSON-RPC needs the operator token",
  );

/**
 * `benchmax serve`'s `/mcp`: MCP clients' streamable-HTTP sessions (`Accept: text/event-stream`, `Mcp-Session-Id`;
 * one rollout each) and OpenEnv's sessionless JSON-RPC (a plain JSON `POST`, answered with status 200 even for
 * errors, as OpenEnv's server does), both served by the MCP SDK's `Server` over the rollout service. The caller is
 * authenticated first: the operator (or a client token, or the Origin/Host policy without tokens), or the holder of a
 * live rollout's token, whose sessions run on that rollout only.
 */
export class McpHttpRoute {
  readonly rpc: McpJsonRpc;
  readonly sessions: McpHttpSessions;

  constructor(service: RolloutService, options: { maxBatch?: number; maxSessionsPerRollout?: number } = {}) {
    this.rpc = new McpJsonRpc(service, { maxBatch: options.maxBatch });
    this.sessions = new McpHttpSessions(service, { maxSessionsPerRollout: options.maxSessionsPerRollout });
  }

  /**
   * Answer one `/mcp` request; `text` is the POST body already read (under the server's body limit). A streamable-HTTP
   * session is what an MCP client opens (`initialize` accepting `text/event-stream`) or names (`Mcp-Session-Id`);
   * every other POST is OpenEnv's sessionless JSON-RPC.
   */
  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    text: string | undefined,
    caller: McpHttpCaller,
  ): Promise<void> {
    if (req.method === "POST" && typeof req.headers["mcp-session-id"] !== "string") {
      // the body is parsed once, here, for both: the sessionless JSON-RPC gets the parsed message
      let body: unknown;
      try {
        body = JSON.parse(text ?? "");
      } catch (e) {
        return this.answer(res, parseError(e));
      }
      const first = Array.isArray(body) ? body[0] : body;
      const opens = (first as { method?: unknown } | null)?.method === "initialize" && isStreamableHttp(req);
      if (!opens) {
        // sessionless JSON-RPC makes and ends rollouts of its own: the operator's (a rollout token opens sessions only)
        if (!caller.operator) throw forbiddenSessionless();
        return this.answer(res, await this.rpc.handleBody(body, { client: caller.client ?? "unknown" }));
      }
      return this.sessions.handle(req, res, body, caller);
    }
    let body: unknown;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ jsonrpc: "2.0", error: { code: ErrorCode.ParseError, message: "Parse error" }, id: null }),
        );
        return;
      }
    }
    return this.sessions.handle(req, res, body, caller);
  }

  private answer(res: ServerResponse, out: McpAnswer | McpAnswer[] | undefined): void {
    if (out === undefined) {
      res.writeHead(202).end();
      return;
    }
    const json = JSON.stringify(out);
    // a flat header array: node writes it without building a header object
    res.writeHead(200, ["content-type", "application/json", "content-length", String(Buffer.byteLength(json))]);
    res.end(json);
  }

  async close(): Promise<void> {
    await this.sessions.close();
    await this.rpc.close();
  }
}
