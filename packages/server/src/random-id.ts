import { randomFillSync } from "node:crypto";

/**
 * Random ids and rollout tokens from a pooled CSPRNG buffer: one `randomFillSync` per 4 KiB instead of one
 * `randomBytes` (and OpenSSL's fork check) per id. Bytes are handed out once and never reused, as Node's own
 * `randomUUID` pool does.
 */
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
