export * from "./artifacts.js";
export * from "./rollout-id.js";
