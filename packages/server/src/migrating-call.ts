import { EnvError, errorMessage, InfraError } from "@benchmax/core";

/**
 * The server no longer holds the rollout: it is unreachable or hangs (`endpointDown`), restarted (a new
 * `x-benchmax-instance`), or answered 404 (released, expired, or never there). The client's log can rebuild it.
 */
export class RolloutLostError extends InfraError {
  readonly rolloutLost = true;
  readonly endpointDown: boolean;
  constructor(message: string, options: { cause?: unknown; endpointDown?: boolean } = {}) {
    super(message, { cause: options.cause });
    this.endpointDown = options.endpointDown ?? false;
  }
}

export function isRolloutLost(e: unknown): e is RolloutLostError {
  return !!e && typeof e === "object" && (e as { rolloutLost?: boolean }).rolloutLost === true;
}

/** The InfraError a rollout ends with when it could not be rebuilt: never scored, never a reward of 0. */
export function migrationFailed(rolloutId: string, lost: unknown, why: string): InfraError {
  return new InfraError(`rollout "${rolloutId}" lost (${errorMessage(lost)}); migration failed: ${why}`, {
    cause: lost,
  });
}

/**
 * What a proxy holds for a live rollout (`held`, by rollout id): a rollout whose migration failed (`broken`) throws
 * that error until released; one never initialised, or released, is an EnvError.
 */
export function liveRollout<H>(
  env: string,
  rolloutId: string,
  held: Map<string, H>,
  broken: Map<string, InfraError>,
): H {
  const b = broken.get(rolloutId);
  if (b) throw b;
  const h = held.get(rolloutId);
  if (!h) throw new EnvError(`${env}: unknown rollout "${rolloutId}" (not initialised, or already released)`);
  return h;
}

/** How many times one call may be moved to another server before it gives up. */
export const MAX_MIGRATIONS_PER_CALL = 3;

/**
 * What a call that survives a lost rollout needs of its env (`RemoteEnv`: one server that may restart; `RoutedEnv`:
 * several): where a rollout is now (`W`), whether another call moved it from there meanwhile, how to fail it for
 * good, and how to move it.
 */
export interface MigrationHost<W> {
  /** The migrations in flight, by rollout id: a call of a rollout waits for its move. */
  readonly moving: Map<string, Promise<void>>;
  whereIs(rolloutId: string): W;
  /** Told of every failure of a call at `where` (before it is known to be a loss). */
  failedAt?(where: W, err: unknown): void;
  movedFrom(rolloutId: string, where: W): boolean;
  /** The rollout is lost for good (`err`, after too many migrations): its later calls fail with it. */
  giveUp(rolloutId: string, where: W, err: InfraError): void;
  migrate(rolloutId: string, where: W, lost: RolloutLostError): Promise<void>;
}

/**
 * Run `op` where the rollout is; a lost rollout (RolloutLostError) is migrated — once, by the first call that finds
 * it lost, the others wait for that move — and `op` runs again where it went, at most MAX_MIGRATIONS_PER_CALL times.
 */
export async function callMigrating<W, R>(
  host: MigrationHost<W>,
  rolloutId: string,
  op: (where: W) => Promise<R>,
): Promise<R> {
  for (let n = 0; ; n++) {
    await host.moving.get(rolloutId);
    const where = host.whereIs(rolloutId);
    try {
      return await op(where);
    } catch (e) {
      host.failedAt?.(where, e);
      if (!isRolloutLost(e)) throw e;
      if (n >= MAX_MIGRATIONS_PER_CALL) {
        const err = migrationFailed(rolloutId, e, `lost again after ${n} migrations`);
        host.giveUp(rolloutId, where, err);
        throw err;
      }
      // another call of the same rollout may be moving it already
      if (host.moving.has(rolloutId) || host.movedFrom(rolloutId, where)) continue;
      const p = host.migrate(rolloutId, where, e);
      host.moving.set(rolloutId, p);
      try {
        await p;
      } finally {
        host.moving.delete(rolloutId);
      }
    }
  }
}
