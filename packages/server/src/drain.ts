import { type CreateOptions, RolloutService, type ServedRollout } from "./service/rollout-service.js";
import { RolloutServiceError } from "./service/service-error.js";

export { DRAINING_HEADER } from "./http-client.js";

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
  /** Ends the wait of `drain` now (the server is closing). */
  private cutWait: (() => void) | undefined;

  override create(options?: CreateOptions): Promise<ServedRollout> {
    if (this.draining) return Promise.reject(drainingError());
    return super.create(options);
  }

  /**
   * Close the door (new rollouts refused) and wait until every live rollout is gone — released, expired or failed to
   * start, on any transport — or `graceMs` has passed, or `cut()` is called. Resolves with how many are still live.
   */
  async drain(graceMs: number): Promise<number> {
    this.draining = true;
    if (this.active > 0) {
      await new Promise<void>((resolve) => {
        // looked at every 50 ms: a rollout ends through many paths (release, expiry, a failed start)
        const done = () => {
          clearInterval(poll);
          clearTimeout(grace);
          this.cutWait = undefined;
          resolve();
        };
        const poll = setInterval(() => {
          if (this.active === 0) done();
        }, 50);
        const grace = setTimeout(done, graceMs);
        this.cutWait = done;
      });
    }
    return this.active;
  }

  /** End a drain's wait now (a second signal, or `close()` during the drain); the door stays closed. */
  cut(): void {
    this.draining = true;
    this.cutWait?.();
  }
}
