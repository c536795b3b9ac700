export { Admission, type AdmissionOptions, type Admitted } from "./admission.js";
export { AccessTokens, accessTokens, checkBearer, presentedSecret, tokenIdentity } from "./auth.js";
export { type ConnectOptions, connectRemoteEnv } from "./connect.js";
export { DEFAULT_DRAIN_GRACE_MS, DRAINING_HEADER, DrainableRolloutService, drainingError } from "./drain.js";
export {
  type ConnectionGuard,
  type ConnectionLimits,
  checkBind,
  checkOrigin,
  clientOf,
  edgePolicy,
  guardConnections,
  isLoopback,
  markSession,
  type OriginPolicy,
  serverOptions,
} from "./edge.js";
export {
  type Classified,
  classify,
  HTTP_STATUS,
  isOpenEnvValidation,
  rpcCodeOf,
  wsCodeOf,
} from "./error-codes.js";
export { checkHostPaths, hostPathsIn } from "./host-paths.js";
export { EndpointDownError, EnvClient, type EnvClientOptions, isEndpointDown, type Probe } from "./http-client.js";
export { HttpError, validationDetail } from "./http-error.js";
export { LATENCY_BUCKETS_MS, ServerMetrics } from "./metrics.js";
export { isRolloutLost, RolloutLostError } from "./migrating-call.js";
export { openApiDocument } from "./openapi.js";
export { type StepResult, stateOf, stepRollout } from "./openenv.js";
export { schemaOf } from "./openenv-schema.js";
export { type Phase, PromMetrics } from "./prometheus.js";
export { RolloutRecorder, tagsOf } from "./record.js";
export { feedLine, RECORD_FEED_PATH, RecordFeed, type RecordFeedOptions } from "./record-feed.js";
export { RemoteEnv, type RemoteEnvOptions, type RemoteMetadata } from "./remote-env.js";
export {
  canonicalJson,
  isReplayDiverged,
  type LoggedCall,
  type MigrationEvent,
  type MigrationStats,
  ReplayDivergedError,
  type RolloutLog,
} from "./rollout-log.js";
export { RoutedEnv, type RoutedEnvOptions } from "./routed-env.js";
export { type EnvServer, type ServeEnvOptions, serveEnv } from "./serve-env.js";
export * from "./service/index.js";
export { callToolResult, observationResult, TOOL_ERROR_TYPES, type ToolErrorType } from "./tool-errors.js";
export * from "./transports/mcp.js";
