export {
  type ExportSkyrlMixedResult,
  type ExportSkyrlOptions,
  type ExportSkyrlResult,
  exportDataRoot,
  exportSkyrl,
  exportSkyrlMixed,
  type MixedEnvExport,
  parseSplit,
  skyrlRow,
} from "./export-skyrl.js";
export {
  type EnvGroupBuilder,
  type EpisodeStep,
  envGroupBuilders,
  type GroupBuilderOptions,
  type GroupEpisode,
  type GroupReward,
} from "./groups.js";
export { launchScriptPath } from "./launch.js";
export { SKYRL_SCHEMA, type SkyrlRow, skyrlParquet, writeSkyrlParquet } from "./parquet.js";
export { absolutePathsIn, commonRoot, relativizePaths } from "./portable-paths.js";
export { shimDir, writeShim } from "./shim.js";
