export * from "./connection.js";
export * from "./content.js";
export * from "./endpoint.js";
export { type HarnessRollout, McpHarnessClient } from "./harness-client.js";
export * from "./mcp-env.js";
export {
  HarnessError,
  type McpRollout,
  McpRollouts,
  type RewardOutcome,
  rewardMessages,
  TaskPicker,
} from "./mcp-rollouts.js";
export * from "./pool.js";
export * from "./provisioners/index.js";
export * from "./serve-mcp.js";
