/** Re-exported from core, where corpus folders are listed. */
export { CORPUS_EXTENSIONS } from "@benchmax/core";
export { type Chunk, type ChunkOptions, chunkCorpus, chunkDocument } from "./chunk.js";
export { type CorpusDoc, htmlToText, loadCorpus, parseCorpusJsonl } from "./corpus.js";
export { answerInSpan, canonicalSpan, normalizeAnswer, questionKey, spanOccursIn } from "./grounding.js";
export { luhnValid, PII_PLACEHOLDERS, type PiiCounts, type PiiKind, PiiScrubber, scrubPii } from "./pii.js";
export {
  type GenerateQaOptions,
  generateQa,
  linkChunks,
  type QaDropCounts,
  type QaProgress,
  type QaRow,
  type QaStats,
} from "./qa-generate.js";
export { MULTI_HOP_SCHEMA, QA_SYSTEM_PROMPT, SINGLE_HOP_SCHEMA } from "./qa-prompts.js";
export { stableFraction, stableSplit } from "./stable-split.js";
export {
  convertTraces,
  defaultEvalPath,
  type GenerateTracesOptions,
  generateFromTraces,
  type TraceError,
  type TraceRow,
  type TracesOptions,
  type TracesResult,
  type TracesStats,
} from "./traces.js";
