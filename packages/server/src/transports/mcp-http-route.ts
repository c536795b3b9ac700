import type { IncomingMessage, ServerResponse } from "node:http";
import { ErrorCode } from "@modelcontextprotocol/sdk/types.js";
import type { RolloutService } from "../service/index.js";
import type { McpAnswer } from "./mcp-exchange.js";
import { isStreamableHttp, McpHttpSessions } from "./mcp-http.js";
import { McpJsonRpc, parseError } from "./mcp-json-rpc.js";

/**
 * `benchmax serve`'s `/mcp`: MCP clients' streamable-HTTP sessions (`Accept: text/event-stream`, `Mcp-Session-Id`;
 * one rollout each) and OpenEnv's sessionless JSON-RPC (a plain JSON `POST`, answered with status 200 even for
 * errors, as OpenEnv's server does), both served by the MCP SDK's `Server` over the rollout service. The caller has
 * checked the operator token (or the Origin/Host policy) first.
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
  async handle(req: IncomingMessage, res: ServerResponse, text: string | undefined, client: string): Promise<void> {
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
      if (!opens) return this.answer(res, await this.rpc.handleBody(body, { client }));
      return this.sessions.handle(req, res, body, { operator: true, client });
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
    return this.sessions.handle(req, res, body, { operator: true, client });
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
