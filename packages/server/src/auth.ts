import { createHash, timingSafeEqual } from "node:crypto";
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
 * lengths first (a length is not secret), then every byte, with no early exit. A presented string of as many
 * characters as the secret has bytes (every ASCII token, so every request on the hot path) is compared in a JS loop
 * over its character codes: a code past 0x7f makes it unequal, since its UTF-8 is longer than the secret. Any other
 * string goes through `timingSafeEqual` on its bytes written into a scratch view.
 */
export function equalsBytes(presented: string, want: Buffer): boolean {
  const n = want.length;
  if (presented.length === n) {
    let d = 0;
    for (let i = 0; i < n; i++) {
      const c = presented.charCodeAt(i);
      d |= (c ^ (want[i] as number)) | (c & 0xff80);
    }
    return d === 0;
  }
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

/** `presentedSecret`, with a malformed header read as presenting none. */
function secretIn(header: string): string | undefined {
  try {
    return presentedSecret(header);
  } catch {
    return undefined;
  }
}

/** Why a header that matched no accepted token is refused: 401 when it presents none, 403 when it is wrong. */
function refusal(header: string | undefined): HttpError {
  if (!header) return new HttpError(401, "UNAUTHORIZED", "missing Authorization: Bearer <token>");
  if (secretIn(header) === undefined) {
    return new HttpError(
      401,
      "UNAUTHORIZED",
      "Authorization header must be 'Bearer <token>' (or Basic with the token as the password)",
    );
  }
  return new HttpError(403, "FORBIDDEN", "wrong bearer token");
}

/** 401 when the token is missing, 403 when it is wrong; undefined when fine (Bearer or Basic, see presentedSecret). */
export function checkBearer(header: string | undefined, token: string | undefined): HttpError | undefined {
  if (!token) return undefined;
  // the common case first: the header is exactly "Bearer <token>" (constant time over it; only its length shows)
  if (header && equalsBytes(header, bearerBytes(token))) return undefined;
  const secret = header ? secretIn(header) : undefined;
  if (secret !== undefined && (safeEqual(secret, token) || safeEqual(percentDecoded(secret), token))) return undefined;
  return refusal(header);
}

/**
 * A token's admission identity: `token:` and the first 12 hex digits of its SHA-256. The token itself is never kept in
 * an identity, so an identity may appear in an error message or a log.
 */
export function tokenIdentity(token: string): string {
  return `token:${createHash("sha256").update(token).digest("hex").slice(0, 12)}`;
}

interface AcceptedToken {
  secret: string;
  /** The bytes of "Bearer <secret>". */
  bearer: Buffer;
  identity: string;
}

/**
 * The bearer tokens a server accepts: the operator's, and optionally one per client (`clientTokens`). Every accepted
 * token has the same rights; they differ in admission identity only. A client is the token it presents (see
 * `clientOf`): callers sharing one token are one client, and one caller spread over many source addresses is still one.
 */
export class AccessTokens {
  private readonly accepted: AcceptedToken[];

  constructor(operator: string, clientTokens: readonly string[] = []) {
    if (!operator) throw new Error("an operator token is required");
    const seen = new Set<string>();
    this.accepted = [operator, ...clientTokens].map((t, i) => {
      const what = i === 0 ? "the operator token" : `client token ${i}`;
      if (typeof t !== "string" || t.trim() === "") throw new Error(`${what} is empty`);
      if (t !== t.trim()) throw new Error(`${what} has leading or trailing whitespace (clients send it without)`);
      if (seen.has(t)) {
        throw new Error(`${what} is given twice (each client needs a token of its own; equal tokens are one client)`);
      }
      seen.add(t);
      return { secret: t, bearer: Buffer.from(`Bearer ${t}`), identity: tokenIdentity(t) };
    });
  }

  /** How many tokens are accepted (the operator's and the clients'). */
  get size(): number {
    return this.accepted.length;
  }

  /** The accepted token an `Authorization` header presents (Bearer or Basic, see presentedSecret), or undefined. */
  private match(header: string): AcceptedToken | undefined {
    // the common case first: the header is exactly "Bearer <token>" (constant time over it; only its length shows)
    for (const a of this.accepted) if (equalsBytes(header, a.bearer)) return a;
    const secret = secretIn(header);
    if (secret === undefined) return undefined;
    const decoded = percentDecoded(secret);
    let found: AcceptedToken | undefined;
    // every token compared (no early exit)
    for (const a of this.accepted) {
      if ((safeEqual(secret, a.secret) || safeEqual(decoded, a.secret)) && !found) found = a;
    }
    return found;
  }

  /** 401 when no token is presented, 403 when it is none of the accepted ones; undefined when fine. */
  check(header: string | undefined): HttpError | undefined {
    return header && this.match(header) ? undefined : refusal(header);
  }

  /** The admission identity of the token `header` presents (`tokenIdentity`), or undefined when it presents none. */
  identityOf(header: string | undefined): string | undefined {
    return header ? this.match(header)?.identity : undefined;
  }
}

/**
 * The tokens a server accepts: the operator's and the clients' (`clientTokens` needs `token`). Undefined without a
 * token. Throws the message the CLI prints for a bad list.
 */
export function accessTokens(
  token: string | undefined,
  clientTokens: readonly string[] | undefined,
): AccessTokens | undefined {
  if (!token) {
    if (clientTokens?.length) {
      throw new Error(
        "clientTokens need an operator token (token / --token / BENCHMAX_TOKEN): the server serves open without one",
      );
    }
    return undefined;
  }
  return new AccessTokens(token, clientTokens);
}
