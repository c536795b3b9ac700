// the live series moved to @benchmax/core (the recorder and eval's writer keep them too); re-exported here
export {
  CHECKPOINT_FILE,
  type CheckpointLoad,
  type LatestRollout,
  LiveSeries,
  type LiveSnapshot,
  loadCheckpoint,
  MAX_POINTS,
  ResultsTail,
  type SeriesState,
  saveCheckpoint,
} from "@benchmax/core";
export { chartJsSource } from "./chart-library.js";
export {
  type CompareOptions,
  type CompareResult,
  type CompareRow,
  compareRuns,
  DEFAULT_MAX_ERROR_RATE_INCREASE,
  EVALUATED_CONFIG_KEYS,
  type EvaluatedSubject,
  errorRate,
  evaluatedSubject,
  type GateSummary,
  type Mismatch,
  type MismatchKind,
  type RunIdentity,
  runIdentityOf,
  runMismatches,
} from "./compare-runs.js";
export { FEED_PATH, type FeedSource, feedUrl, followFeed } from "./feed-source.js";
export {
  errorCodesOf,
  type FleetNode,
  type FleetSnapshot,
  type FleetWatchOptions,
  type FleetWatchServer,
  type NodeState,
  startFleetWatch,
} from "./fleet-watch.js";
export { escapeHtml, scriptJson } from "./html-escape.js";
export { forEachJsonLine, type LoadedRun, type LoadRunOptions, loadRun, rolloutIdOf } from "./load-run.js";
export { type PlayOptions, type PlayServer, startPlay } from "./play-server.js";
export { inlineTranscripts, renderHtml } from "./render-html.js";
export {
  type BuildOptions,
  buildReportData,
  type CountHistogram,
  countHistogram,
  type HistogramBin,
  type IndexRow,
  type ReportData,
  type RolloutRow,
  type RunSeries,
  rewardHistogram,
  rolloutRows,
  runSeries,
  type TaskRow,
} from "./report-data.js";
export { assertRunFilesInside, DEFAULT_MAX_LINE_BYTES } from "./run-files.js";
export { toolCallNames } from "./tool-calls.js";
export { type Transcript, TranscriptStore, transcriptOf } from "./transcripts.js";
export { renderWatchPage } from "./watch-page.js";
export {
  isServerUrl,
  startWatch,
  type WatchOptions,
  type WatchServer,
  type WatchStartup,
} from "./watch-server.js";
export { type WriteReportOptions, type WrittenReport, writeReport, writeReportFiles } from "./write-report.js";
