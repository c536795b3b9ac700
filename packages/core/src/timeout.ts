/** An episode's overall deadline (`maxDurationMs`) passed: the one class the engine and the runner both match. */
export class DeadlineExceeded extends Error {
  override name = "DeadlineExceeded";
}

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

/** Limits at or above this share one coarse timer (the lanes below); shorter ones get their own setTimeout. */
const WHEEL_MIN_MS = 1000;
/** The shared timer's period: a long limit fires at most this late, never early. */
const SLOT_MS = 100;

/** A pending long limit: a node of its lane's doubly linked list. */
interface Pending {
  due: number;
  fire: () => void;
  prev: Pending | undefined;
  next: Pending | undefined;
  lane: Lane | undefined;
}

/** The pending limits of one duration, in the order they fall due (armed later ⇒ due later). */
interface Lane {
  head: Pending | undefined;
  tail: Pending | undefined;
}

/**
 * Pending long limits, one FIFO lane per duration (an episode's init, tool, reward and release limits each have one),
 * so arming and stopping a limit is a constant-time link and unlink with no allocation but the node. With 100,000
 * episodes in flight each holding a limit, one Node timer per limit costs about a kilobyte per episode; a node costs
 * tens of bytes. (A hash set per time slot, tried first, allocated a set per tool call and churned a long-lived map:
 * about 9% of a server's whole-episode throughput.)
 */
const lanes = new Map<number, Lane>();
let ticker: NodeJS.Timeout | undefined;

function unlink(p: Pending): void {
  const lane = p.lane;
  if (!lane) return;
  if (p.prev) p.prev.next = p.next;
  else lane.head = p.next;
  if (p.next) p.next.prev = p.prev;
  else lane.tail = p.prev;
  p.prev = p.next = p.lane = undefined;
}

function tick(): void {
  const now = performance.now();
  for (const [ms, lane] of lanes) {
    for (let p = lane.head; p && p.due <= now; p = lane.head) {
      unlink(p);
      p.fire();
    }
    // empty lanes go here, not in unlink: a busy duration keeps its lane between calls
    if (!lane.head) lanes.delete(ms);
  }
  if (lanes.size === 0 && ticker) {
    clearInterval(ticker);
    ticker = undefined;
  }
}

function arm(ms: number, fire: () => void): Pending {
  let lane = lanes.get(ms);
  if (!lane) lanes.set(ms, (lane = { head: undefined, tail: undefined }));
  const p: Pending = { due: performance.now() + ms, fire, prev: lane.tail, next: undefined, lane };
  if (lane.tail) lane.tail.next = p;
  else lane.head = p;
  lane.tail = p;
  // ref'd on purpose: a call that never settles keeps the process alive until its limit fires
  ticker ??= setInterval(tick, SLOT_MS);
  return p;
}

/** A running limit: call `stopLimit` with it once the guarded work settles. */
export type LimitHandle = Pending | NodeJS.Timeout;

/** Call `fire` once `ms` pass (a positive finite number), unless stopped first. Long limits share one timer. */
export function startLimit(ms: number, fire: () => void): LimitHandle {
  return ms < WHEEL_MIN_MS ? setTimeout(fire, ms) : arm(ms, fire);
}

export function stopLimit(h: LimitHandle): void {
  if ("due" in h) unlink(h as Pending);
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
        unlink(pending);
        resolve(v);
      },
      (e) => {
        unlink(pending);
        reject(e);
      },
    );
  });
}
