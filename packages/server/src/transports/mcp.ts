/**
 * MCP over the rollout service, served by the MCP SDK's own `Server`: streamable-HTTP sessions (`McpHttpSessions`),
 * OpenEnv's sessionless JSON-RPC on `POST /mcp` and `/ws` (`McpJsonRpc`), and any SDK transport (stdio) through
 * `createMcpServer`. `benchmax serve` and `benchmax serve --mcp` both use these.
 */

export { errorAnswer, type McpAnswer, McpExchange } from "./mcp-exchange.js";
export {
  isStreamableHttp,
  type McpHttpCaller,
  McpHttpSessions,
  type McpHttpSessionsOptions,
  ROLLOUT_ID_HEADER,
  ROLLOUT_TOKEN_HEADER,
  TASK_ID_META,
  taskIdFromInitialize,
} from "./mcp-http.js";
export { McpHttpRoute } from "./mcp-http-route.js";
export { type McpCaller, McpJsonRpc, sessionIdOf } from "./mcp-json-rpc.js";
export {
  createMcpServer,
  type McpScope,
  type McpServerOptions,
  mcpErrorOf,
  mcpTools,
  TASK_RESOURCE,
  taskView,
} from "./mcp-server.js";
