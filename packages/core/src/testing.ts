/** Test helpers for packages that drive core from the outside: a fake vLLM OpenAI-compatible endpoint. */
export { type FakeVllm, startFakeVllm } from "./policies/fake-vllm.js";
export { fullScan, recordedLines, recordedRow } from "./series/recorded-rows.js";
