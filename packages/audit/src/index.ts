export {
  ATTACKS,
  type Attack,
  type AttackContext,
  BAD_PATHS,
  dummyArgs,
  type FinalAnswer,
  formatTricks,
  HARNESS_TOOL,
  pathParams,
  REFUSAL_WORDS_DISCLOSURE,
  wrongTypeArgs,
} from "./attacks.js";
export {
  type AuditOptions,
  type AuditReport,
  auditEnv,
  type CheckName,
  type Finding,
  pickTasks,
  type Transport,
} from "./audit.js";
export { type Allowance, type AuditConfig, type FileProbe, loadAuditConfig, parseAuditConfig } from "./config.js";
export { formatAuditReport } from "./format-report.js";
export { goldFiles, goldStrings, leakedGold, normalizeForScan } from "./gold.js";
export { TRANSPORTS } from "./transport-view.js";
