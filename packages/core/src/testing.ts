/** Test helpers for packages that drive core from the outside: fake OpenAI-compatible endpoints (plain, and vLLM's). */
export { type FakeOpenAI, type FakeOpenAIAnswer, startFakeOpenAI } from "./policies/fake-openai.js";
export { type FakeVllm, startFakeVllm } from "./policies/fake-vllm.js";
export { fullScan, recordedLines, recordedRow } from "./series/recorded-rows.js";
