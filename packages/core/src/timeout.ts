/** Default time limits of an episode's env calls (ms). */
export const DEFAULT_TIMEOUTS = {
  /** `env.init`: creating per-rollout state must be cheap. */
  initMs: 120_000,
  /** One `env.runTool` call. */
  toolMs: 120_000,
  /** `env.computeReward` (LLM judges included). */
  rewardMs: 600_000,
  /** `env.release`: past it the release is recorded as failed and the run goes on. */
  releaseMs: 30_000,
} as const;

/** A usable limit: a positive finite number of ms. */
export function isLimit(ms: number | undefined): ms is number {
  return typeof ms === "number" && ms > 0 && Number.isFinite(ms);
}

/** Limits at or above this share one coarse timer (the wheel below); shorter ones get their own setTimeout. */
const WHEEL_MIN_MS = 1000;
/** The wheel's resolution: a long limit fires at most this late, never early. */
const SLOT_MS = 100;

interface Pending {
  slot: number;
  fire(): void;
}

/**
 * Pending long limits by the slot (SLOT_MS wide) they fire in. With 100,000 episodes in flight each holding an
 * init, tool or reward limit, one Node timer per limit costs about a kilobyte per episode; a Set entry costs tens
 * of bytes.
 */
const slots = new Map<number, Set<Pending>>();
let ticker: NodeJS.Timeout | undefined;
let cursor = 0;

function tick(): void {
  const now = Math.floor(performance.now() / SLOT_MS);
  for (; cursor <= now; cursor++) {
    const due = slots.get(cursor);
    if (!due) continue;
    slots.delete(cursor);
    for (const p of due) p.fire();
  }
  if (slots.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = undefined;
  }
}

function arm(ms: number, fire: () => void): Pending {
  const slot = Math.ceil((performance.now() + ms) / SLOT_MS);
  const p: Pending = { slot, fire };
  let set = slots.get(slot);
  if (!set) slots.set(slot, (set = new Set()));
  set.add(p);
  if (!ticker) {
    cursor = Math.floor(performance.now() / SLOT_MS);
    // ref'd on purpose: a call that never settles keeps the process alive until its limit fires
    ticker = setInterval(tick, SLOT_MS);
  }
  return p;
}

function disarm(p: Pending): void {
  const set = slots.get(p.slot);
  if (!set) return;
  set.delete(p);
  if (set.size === 0) slots.delete(p.slot);
}

/** A running limit: call `stopLimit` with it once the guarded work settles. */
export type LimitHandle = Pending | NodeJS.Timeout;

/** Call `fire` once `ms` pass (a positive finite number), unless stopped first. Long limits share one timer. */
export function startLimit(ms: number, fire: () => void): LimitHandle {
  return ms < WHEEL_MIN_MS ? setTimeout(fire, ms) : arm(ms, fire);
}

export function stopLimit(h: LimitHandle): void {
  if ("slot" in h) disarm(h as Pending);
  else clearTimeout(h);
}

/**
 * `p`, or a rejection with `onTimeout()` once `ms` pass (no limit when `ms` is not a positive finite number).
 * The limit is dropped as soon as `p` settles; `p` itself is left to settle on its own. Limits of a second or more
 * may fire up to 100 ms late (they share one timer).
 */
export function withTimeout<T>(p: Promise<T>, ms: number | undefined, onTimeout: () => unknown): Promise<T> {
  if (!isLimit(ms)) return p;
  if (ms < WHEEL_MIN_MS) {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(onTimeout()), ms);
      Promise.resolve(p).then(
        (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        (e) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  }
  return new Promise<T>((resolve, reject) => {
    const pending = arm(ms, () => reject(onTimeout()));
    Promise.resolve(p).then(
      (v) => {
        disarm(pending);
        resolve(v);
      },
      (e) => {
        disarm(pending);
        reject(e);
      },
    );
  });
}
