export * from "./connection.js";
export * from "./content.js";
export * from "./endpoint.js";
export { type HarnessRollout, McpHarnessClient } from "./harness-client.js";
export * from "./mcp-env.js";
export * from "./pool.js";
export * from "./provisioners/index.js";
export * from "./serve-mcp.js";
