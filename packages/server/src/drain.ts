import { type CreateOptions, RolloutService, type ServedRollout } from "./service/rollout-service.js";
import { RolloutServiceError } from "./service/service-error.js";

/** The header on every HTTP answer of a draining (or closing) server: `x-benchmax-draining: 1`. */
export const DRAINING_HEADER = "x-benchmax-draining";

/** How long a drain serves live rollouts at most before the server closes (`drainGraceMs`), by default. */
export const DEFAULT_DRAIN_GRACE_MS = 30_000;

/**
 * What a new rollout gets while the server drains or closes: 503, code `DRAINING` (the body's `error.code`). The
 * rollouts already live are served on; a client takes new ones elsewhere.
 */
export function drainingError(closing = false): RolloutServiceError {
  return new RolloutServiceError(
    "capacity",
    closing
      ? "server is shutting down"
      : "server is draining: it takes no new rollouts (the live ones are served until released); start yours on another server",
    { reason: "DRAINING" },
  );
}

/**
 * The rollout service of a server that can drain: once `draining`, `create` — the one way every transport starts a
 * rollout (`POST /v1/rollouts`, OpenEnv `/reset`, a `/ws` reset, an MCP session) — is refused with `drainingError`.
 * Everything a live rollout does goes on: steps, tool calls, rewards, forks (children of a live rollout), release.
 */
export class DrainableRolloutService extends RolloutService {
  draining = false;

  override create(options?: CreateOptions): Promise<ServedRollout> {
    if (this.draining) return Promise.reject(drainingError());
    return super.create(options);
  }
}
