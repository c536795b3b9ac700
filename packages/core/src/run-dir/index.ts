export * from "./artifacts.js";
export * from "./identity.js";
export * from "./jsonl.js";
export * from "./rescore.js";
export * from "./rollout-id.js";
export * from "./run-dir.js";
