export {
  type CreateOptions,
  type FinalState,
  failureOf,
  isMessages,
  RolloutService,
  type RolloutServiceOptions,
  type RolloutTags,
  type ScoreInput,
  type ScoreOutcome,
  type ServedRollout,
  type ServiceLimits,
  type ServiceStep,
} from "./rollout-service.js";
export {
  badRequest,
  conflict,
  notFound,
  RolloutServiceError,
  type ServiceErrorCode,
  type ServiceErrorDetail,
} from "./service-error.js";
export { type TaskRef, TaskSource } from "./task-source.js";
