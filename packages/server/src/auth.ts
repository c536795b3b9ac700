import { timingSafeEqual } from "node:crypto";
import { HttpError } from "./http-error.js";

/** Percent-decoding that never throws (`requests` unquotes URL user info, `websockets` does not). */
function percentDecoded(s: string): string {
  if (!s.includes("%")) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

const expected = new Map<string, Buffer>();

/** Constant-time comparison of a presented secret with the expected one. */
export function safeEqual(presented: string, secret: string): boolean {
  let want = expected.get(secret);
  if (!want) {
    want = Buffer.from(secret);
    if (expected.size > 10_000) expected.clear();
    expected.set(secret, want);
  }
  return equalsBytes(presented, want);
}

/** Scratch space the presented secret is encoded into, so a comparison allocates nothing (one thread: nothing runs
 * between the write and the compare). Views by length, made once each. */
const scratch = Buffer.allocUnsafe(512);
const views: Buffer[] = [];

/**
 * Constant-time comparison of a presented secret with the expected one's bytes (UTF-8), without allocating: the
 * lengths first (a length is not secret), then `timingSafeEqual` on the presented bytes written into a scratch view.
 */
export function equalsBytes(presented: string, want: Buffer): boolean {
  const n = want.length;
  if (Buffer.byteLength(presented) !== n) return false;
  if (n > scratch.length) return timingSafeEqual(Buffer.from(presented), want);
  let view = views[n];
  if (!view) {
    view = scratch.subarray(0, n);
    views[n] = view;
  }
  view.write(presented, 0, n, "utf8");
  return timingSafeEqual(view, want);
}

/**
 * The secret an `Authorization` header presents: `Bearer <token>`, or `Basic base64(<any user>:<token>)`, which is
 * what OpenEnv's Python clients send when the token rides in the server URL (`http://benchmax:<token>@host:8000`):
 * `requests` and `httpx` turn URL user info into Basic auth, and so does `websockets` on the `/ws` upgrade.
 */
export function presentedSecret(header: string): string | undefined {
  const sp = header.indexOf(" ");
  if (sp < 0) return undefined;
  const scheme = header.slice(0, sp).toLowerCase();
  const value = header.slice(sp + 1).trim();
  if (scheme === "bearer") return value || undefined;
  if (scheme === "basic") {
    const decoded = Buffer.from(value, "base64").toString("utf8");
    const colon = decoded.indexOf(":");
    if (colon < 0) return undefined;
    return decoded.slice(colon + 1) || undefined;
  }
  return undefined;
}

/** The bytes of "Bearer <token>" for the last token asked (a server has one). */
let bearer: { token: string; bytes: Buffer } | undefined;
function bearerBytes(token: string): Buffer {
  if (bearer?.token !== token) bearer = { token, bytes: Buffer.from(`Bearer ${token}`) };
  return bearer.bytes;
}

/** 401 when the token is missing, 403 when it is wrong; undefined when fine (Bearer or Basic, see presentedSecret). */
export function checkBearer(header: string | undefined, token: string | undefined): HttpError | undefined {
  if (!token) return undefined;
  if (!header) return new HttpError(401, "UNAUTHORIZED", "missing Authorization: Bearer <token>");
  // the common case first: the header is exactly "Bearer <token>" (constant time over it; only its length shows)
  if (equalsBytes(header, bearerBytes(token))) return undefined;
  let secret: string | undefined;
  try {
    secret = presentedSecret(header);
  } catch {
    secret = undefined;
  }
  if (secret === undefined) {
    return new HttpError(
      401,
      "UNAUTHORIZED",
      "Authorization header must be 'Bearer <token>' (or Basic with the token as the password)",
    );
  }
  if (!safeEqual(secret, token) && !safeEqual(percentDecoded(secret), token)) {
    return new HttpError(403, "FORBIDDEN", "wrong bearer token");
  }
  return undefined;
}
