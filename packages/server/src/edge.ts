import type { IncomingMessage, Server } from "node:http";
import { isIP, type Socket } from "node:net";
import type { AccessTokens } from "./auth.js";
import { HttpError } from "./http-error.js";

/**
 * The transport edge every benchmax server shares (`serveEnv`, `serveMcpHttp`): the bind check, the Origin / Host
 * check of a server without a token, and the connection cap with its timeouts.
 */

/** A loopback name or address: `localhost` (and `*.localhost`), 127.0.0.0/8, `::1` (bracketed or not). */
export function isLoopback(host: string): boolean {
  let h = host.toLowerCase();
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  if (h.startsWith("::ffff:")) h = h.slice(7);
  return isIP(h) === 4 && h.startsWith("127.");
}

/**
 * Refuse to serve on a non-loopback interface with no token unless the operator said `insecure`: anyone who can reach
 * the port could drive rollouts. Throws with the message the CLI prints.
 */
export function checkBind(host: string, token: string | undefined, insecure: boolean | undefined): void {
  if (token || isLoopback(host)) return;
  if (insecure) return;
  throw new Error(
    `refusing to serve on ${host} without a token: anyone who reaches this port could drive rollouts. ` +
      "Set --token (or BENCHMAX_TOKEN), bind 127.0.0.1, or pass --insecure to serve open on purpose.",
  );
}

/** The host part of a `Host` header (`a.b:8000` → `a.b`, `[::1]:8000` → `[::1]`). */
function hostOf(header: string): string {
  if (header.startsWith("[")) {
    const end = header.indexOf("]");
    return end < 0 ? header : header.slice(0, end + 1);
  }
  const colon = header.indexOf(":");
  return colon < 0 ? header : header.slice(0, colon);
}

export interface OriginPolicy {
  /** With a token, the token is the check: Origin and Host are not looked at. */
  token?: string;
  /** The interface the server is bound to. */
  bindHost: string;
  /** More Host names to accept (besides loopback names and the bound address). */
  allowedHosts?: string[];
  /** More exact Origins to accept (besides loopback origins), e.g. `https://notebook.example`. */
  allowedOrigins?: string[];
}

/** What a server's edge is configured from: its options' token, host, insecure flag and allow-lists. */
export interface EdgeOptions {
  token?: string;
  host?: string;
  insecure?: boolean;
  allowedHosts?: string[];
  allowedOrigins?: string[];
}

/** The origin policy a server applies, after refusing a bind it must not serve on (see `checkBind`). */
export function edgePolicy(options: EdgeOptions, defaultHost = "127.0.0.1"): OriginPolicy {
  const token = options.token || undefined;
  const bindHost = options.host ?? defaultHost;
  checkBind(bindHost, token, options.insecure);
  return { token, bindHost, allowedHosts: options.allowedHosts, allowedOrigins: options.allowedOrigins };
}

/**
 * A server with no token trusts whoever reaches it, so it must not be reachable from a web page the operator opens:
 * - an `Origin` header (browsers send it on cross-origin POSTs and on every WebSocket) must name a loopback origin or
 *   one in `allowedOrigins`; `Origin: null` (sandboxed frames, file://) is refused;
 * - on a loopback bind, the `Host` header must be a loopback name, the bound address or in `allowedHosts` (a
 *   DNS-rebinding page reaches 127.0.0.1 under its own name).
 * Non-browser clients (curl, Python `requests`, `websockets`, OpenEnv's clients) send no Origin and pass.
 * Returns the 403 to answer, or undefined.
 */
export function checkOrigin(req: IncomingMessage, policy: OriginPolicy): HttpError | undefined {
  if (policy.token) return undefined;
  const origin = req.headers.origin;
  if (origin !== undefined && !originAllowed(origin, policy)) {
    return new HttpError(
      403,
      "ORIGIN_REFUSED",
      `cross-origin request from ${origin} refused: this server has no token, so only loopback origins may use it`,
    );
  }
  if (isLoopback(policy.bindHost)) {
    const host = req.headers.host;
    if (!host) return new HttpError(403, "HOST_REFUSED", "a Host header is required");
    const name = hostOf(host);
    if (!isLoopback(name) && name !== policy.bindHost && !policy.allowedHosts?.includes(name)) {
      return new HttpError(
        403,
        "HOST_REFUSED",
        `Host "${host}" refused: this server has no token and answers loopback names only (DNS rebinding)`,
      );
    }
  }
  return undefined;
}

function originAllowed(origin: string, policy: OriginPolicy): boolean {
  if (policy.allowedOrigins?.includes(origin)) return true;
  let u: URL;
  try {
    u = new URL(origin);
  } catch {
    return false;
  }
  return (u.protocol === "http:" || u.protocol === "https:") && isLoopback(u.hostname);
}

export interface ConnectionLimits {
  /** Open sockets at most, HTTP and WebSocket together (default 8192). */
  maxConnections?: number;
  /** A socket that sends no byte this long is closed (default 10 s). */
  firstByteTimeoutMs?: number;
  /** The request headers must arrive within this long (default 10 s): a slowloris client gets 408. */
  headersTimeoutMs?: number;
  /** The whole request (headers and body) must arrive within this long (default 60 s). */
  requestTimeoutMs?: number;
}

export const DEFAULT_MAX_CONNECTIONS = 8192;

/** Options for `http.createServer` that the limits need (Node checks the timeouts only this often). */
export function serverOptions(limits: ConnectionLimits): { connectionsCheckingInterval: number } {
  const shortest = Math.min(limits.headersTimeoutMs ?? 10_000, limits.requestTimeoutMs ?? 60_000);
  return { connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(shortest / 4))) };
}

/** WebSocket sockets, each with a check of whether its session holds a live rollout now. */
const sessions = new WeakMap<Socket, () => boolean>();

/**
 * Register a WebSocket's socket with a check of whether its session holds a live rollout. A WebSocket without one
 * is idle: at the connection cap it gives way like an idle keep-alive socket, so idle WebSockets cannot starve sessions.
 */
export function markSession(socket: Socket, live: () => boolean): void {
  sessions.set(socket, live);
}

/** A socket with no request in flight and no live session. `_httpMessage` is Node's response bound to a socket. */
function isIdle(s: Socket): boolean {
  const live = sessions.get(s);
  if (live) return !live();
  return !(s as Socket & { _httpMessage?: unknown })._httpMessage;
}

export interface ConnectionGuard {
  /** Sockets open now. */
  readonly open: number;
  /** Sockets closed for the cap or the first-byte timeout. */
  readonly evicted: number;
  /** Sockets refused at the cap (none idle to make room). */
  readonly refused: number;
  stop(): void;
}

/**
 * Cap the server's sockets. At the cap a new socket takes the place of an idle one (a socket that never sent a byte
 * first, then the oldest between keep-alive requests); when every socket is busy, the new one is closed. Sockets that
 * send no byte within `firstByteTimeoutMs` are closed; a request whose headers (or whole body) arrive too slowly gets
 * Node's 408. So idle or slow sockets cannot starve a client that sends requests.
 */
export function guardConnections(server: Server, limits: ConnectionLimits = {}): ConnectionGuard {
  const max = limits.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
  const firstByte = limits.firstByteTimeoutMs ?? 10_000;
  server.headersTimeout = limits.headersTimeoutMs ?? 10_000;
  server.requestTimeout = limits.requestTimeoutMs ?? 60_000;
  const sockets = new Map<Socket, number>();
  const stats = { evicted: 0, refused: 0 };

  const evictOne = (): boolean => {
    let keepAlive: Socket | undefined;
    for (const s of sockets.keys()) {
      if (!isIdle(s)) continue;
      if (s.bytesRead === 0) {
        sockets.delete(s);
        s.destroy();
        return true;
      }
      keepAlive ??= s;
    }
    if (!keepAlive) return false;
    sockets.delete(keepAlive);
    keepAlive.destroy();
    return true;
  };

  server.on("connection", (s: Socket) => {
    if (sockets.size >= max) {
      if (evictOne()) stats.evicted++;
      else {
        stats.refused++;
        s.destroy();
        return;
      }
    }
    sockets.set(s, Date.now());
    s.once("close", () => sockets.delete(s));
  });

  const sweep = setInterval(
    () => {
      const cutoff = Date.now() - firstByte;
      for (const [s, at] of sockets) {
        if (at < cutoff && s.bytesRead === 0 && isIdle(s)) {
          stats.evicted++;
          sockets.delete(s);
          s.destroy();
        }
      }
    },
    Math.max(10, Math.min(1000, Math.floor(firstByte / 4))),
  );
  sweep.unref();

  return {
    get open() {
      return sockets.size;
    },
    get evicted() {
      return stats.evicted;
    },
    get refused() {
      return stats.refused;
    },
    stop() {
      clearInterval(sweep);
    },
  };
}

/**
 * The client a request comes from, for per-client admission. On a server with tokens (`access`) it is the token the
 * request presents (`tokenIdentity`: a hash, never the token), from `authorization` (default: the request's
 * `Authorization` header): callers sharing a token are one client, whatever their source addresses. Without tokens
 * (or for a request presenting none of them) it is the remote address.
 */
export function clientOf(
  req: IncomingMessage,
  access?: AccessTokens,
  authorization: string | undefined = req.headers.authorization,
): string {
  const identity = access?.identityOf(authorization);
  return identity ?? req.socket.remoteAddress ?? "unknown";
}
