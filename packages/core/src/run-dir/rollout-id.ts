import { randomFillSync } from "node:crypto";

/**
 * Rollout ids are minted here, once, for every driver: the runner and eval (`task#sample`, stable so a resumed run
 * finds what it already did), and servers (`prefix` + random, unguessable). Servers' capability tokens come from the
 * same random pool ({@link randomBase64url}).
 */

/** The id of sample `k` of a task. Stable, so a resumed run finds what it already did. */
export function rolloutIdOf(taskId: string, sample: number): string {
  return `${taskId}#${sample}`;
}

/** A result line's rollout id; lines from before rollout ids get `task#sample`. */
export function resultRolloutId(r: { rolloutId?: unknown; taskId: string; sample?: unknown }): string {
  return typeof r.rolloutId === "string"
    ? r.rolloutId
    : rolloutIdOf(r.taskId, typeof r.sample === "number" ? r.sample : 0);
}

/** A fresh random rollout id (a served rollout): `prefix` + 12 random bytes as base64url (96 bits). */
export function randomRolloutId(prefix = "r_"): string {
  return `${prefix}${randomBase64url(12)}`;
}

// A pooled CSPRNG buffer: one randomFillSync per 4 KiB instead of one randomBytes (and OpenSSL's fork check) per id.
// Bytes are handed out once and never reused, as Node's own randomUUID pool does.
const POOL = Buffer.alloc(4096);
let at = POOL.length;

/** `bytes` random bytes as base64url (e.g. 24 bytes → a 32-character token with 192 bits of entropy). */
export function randomBase64url(bytes: number): string {
  if (bytes > POOL.length) throw new RangeError(`randomBase64url: at most ${POOL.length} bytes`);
  if (at + bytes > POOL.length) {
    randomFillSync(POOL);
    at = 0;
  }
  const s = POOL.toString("base64url", at, at + bytes);
  POOL.fill(0, at, at + bytes);
  at += bytes;
  return s;
}
