import type { IncomingMessage, ServerResponse } from "node:http";
import { presentedSecret } from "../auth.js";
import { checkOrigin, clientOf } from "../edge.js";
import { readText } from "../http-body.js";
import type { HostContext, RouteHandlers } from "./host-context.js";
import type { McpHttpCaller } from "./mcp-http.js";

/**
 * `/mcp` on the host: MCP clients' streamable-HTTP sessions, and OpenEnv's sessionless JSON-RPC (errors with status
 * 200), answered by the host's `McpHttpRoute` once the caller is known.
 */
export function mcpHttpHandlers(ctx: HostContext): Pick<RouteHandlers, "mcp" | "mcpStream" | "mcpClose"> {
  const { service, access, originPolicy, mcp, maxBody } = ctx;

  /**
   * Who calls `/mcp`: the operator (a server token, or anyone the Origin/Host policy lets in without tokens), or the
   * holder of a live rollout's own token, whose MCP sessions run on that rollout and nothing else.
   */
  const mcpCaller = (req: IncomingMessage): McpHttpCaller => {
    const auth = req.headers.authorization;
    const refused = access ? access.check(auth) : checkOrigin(req, originPolicy);
    if (!refused) return { operator: true, client: clientOf(req, access) };
    const presented = access && auth ? presentedSecret(auth) : undefined;
    const r = presented ? service.byToken(presented) : undefined;
    if (r && !r.released) return { operator: false, rollout: r, client: clientOf(req) };
    throw refused;
  };

  async function serveMcp(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const caller = mcpCaller(req);
    const text = req.method === "POST" ? await readText(req, maxBody) : undefined;
    return mcp.handle(req, res, text, caller);
  }

  return { mcp: serveMcp, mcpStream: serveMcp, mcpClose: serveMcp };
}
