export * from "./live-series.js";
export * from "./results-tail.js";
export * from "./series-checkpoint.js";
export * from "./series-keeper.js";
