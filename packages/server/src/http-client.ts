import { Agent, type ClientRequest, type IncomingHttpHeaders, request } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { InfraError } from "@benchmax/core";

/** An InfraError raised because an endpoint could not be reached (refused, reset, hung). */
export class EndpointDownError extends InfraError {
  readonly endpointDown = true;
}

export function isEndpointDown(e: unknown): boolean {
  return !!e && typeof e === "object" && (e as { endpointDown?: boolean }).endpointDown === true;
}

export interface HttpReply {
  status: number;
  body: any;
  headers: IncomingHttpHeaders;
}

/** The header on every HTTP answer of a draining (or closing) server, `/ws` upgrade refusals included: `x-benchmax-draining: 1`. */
export const DRAINING_HEADER = "x-benchmax-draining";
/** The header naming the server process (a restarted server is a new instance). */
export const INSTANCE_HEADER = "x-benchmax-instance";

export interface EnvClientOptions {
  /** Bearer token of the server. */
  token?: string;
  /**
   * Per-request deadline (ms). A request with no answer by then fails as an InfraError: an EndpointDownError when the
   * server's `/health` does not answer either (it hangs), a plain InfraError when it does (the call itself is slow or
   * stuck there; the rollout stays where it is). Default 120 s.
   */
  timeoutMs?: number;
  /**
   * A request with no answer after this long (and again after each further as long) probes the server's
   * `GET /health`: a server whose `/health` does not answer within `probeTimeoutMs` hangs, and the request fails at
   * once as an EndpointDownError; one that answers is busy with a long call, and the request keeps waiting (up to
   * `timeoutMs`). Default 10 s; 0 turns the watch off.
   */
  probeAfterMs?: number;
  /** How long a `/health` probe may take before the server counts as down (ms). Default 5 s. */
  probeTimeoutMs?: number;
}

/** What `GET /health` said. */
export interface Probe {
  /** healthy: 200; draining: 503 `{status: "draining"}`; unhealthy: another answer; down: no answer. */
  state: "healthy" | "draining" | "unhealthy" | "down";
  status?: number;
  /** The server's instance id (a restarted server has a new one). */
  instance?: string;
  /** Why it is down or unhealthy. */
  error?: string;
}

const agents = { http: new Agent({ keepAlive: true, maxSockets: 256 }), https: new HttpsAgent({ keepAlive: true }) };
/** Health probes get sockets of their own: never queued behind a server's long calls. */
const probeAgents = {
  http: new Agent({ keepAlive: true, maxSockets: 8 }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: 8 }),
};

interface SendOptions {
  agent: Agent;
  timeoutMs: number;
  /** Watch the request with health probes (off for the probes themselves). */
  watch: boolean;
}

/** A small keep-alive JSON client for one env server. */
export class EnvClient {
  readonly baseUrl: string;
  private readonly host: string;
  private readonly port: number;
  private readonly prefix: string;
  private readonly secure: boolean;
  private readonly auth?: string;
  readonly timeoutMs: number;
  readonly probeAfterMs: number;
  readonly probeTimeoutMs: number;
  /** The server said it drains (`x-benchmax-draining: 1` on its last answer, or a draining `/health`). */
  draining = false;
  /** The instance id the server last answered with. */
  instance?: string;
  private probing?: Promise<Probe>;

  constructor(url: string, options: EnvClientOptions = {}) {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new InfraError(`invalid env server URL "${url}"`, { retryable: false });
    }
    this.baseUrl = url.replace(/\/+$/, "");
    this.secure = u.protocol === "https:";
    this.host = u.hostname.replace(/^\[|\]$/g, "");
    this.port = Number(u.port || (this.secure ? 443 : 80));
    this.prefix = u.pathname.replace(/\/+$/, "");
    this.auth = options.token ? `Bearer ${options.token}` : undefined;
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.probeAfterMs = options.probeAfterMs ?? 10_000;
    this.probeTimeoutMs = options.probeTimeoutMs ?? 5_000;
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<HttpReply> {
    const opts: SendOptions = {
      agent: this.secure ? agents.https : agents.http,
      timeoutMs: this.timeoutMs,
      watch: this.probeAfterMs > 0,
    };
    try {
      return await this.send(method, path, body, headers, opts);
    } catch (e) {
      // a kept-alive socket the server closed meanwhile (restart, idle timeout): the request never arrived
      if ((e as { staleSocket?: boolean }).staleSocket) return this.send(method, path, body, headers, opts);
      throw e;
    }
  }

  /**
   * `GET /health`, on sockets of its own, within `probeTimeoutMs`. Concurrent probes share one request. Never throws.
   */
  probe(): Promise<Probe> {
    this.probing ??= this.probeOnce().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  private async probeOnce(): Promise<Probe> {
    let r: HttpReply;
    try {
      r = await this.send(
        "GET",
        "/health",
        undefined,
        {},
        {
          agent: this.secure ? probeAgents.https : probeAgents.http,
          timeoutMs: this.probeTimeoutMs,
          watch: false,
        },
      );
    } catch (e) {
      return { state: "down", error: (e as Error).message };
    }
    const b = (r.body ?? {}) as { status?: unknown; instance?: unknown };
    const instance = typeof b.instance === "string" ? b.instance : this.instance;
    if (r.status === 200) {
      this.draining = false;
      return { state: "healthy", status: 200, instance };
    }
    if (r.status === 503 && (b.status === "draining" || r.headers[DRAINING_HEADER] === "1")) {
      this.draining = true;
      return { state: "draining", status: 503, instance };
    }
    return { state: "unhealthy", status: r.status, instance, error: replyMessage(r) };
  }

  private send(
    method: string,
    path: string,
    body: unknown,
    headers: Record<string, string>,
    opts: SendOptions,
  ): Promise<HttpReply> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const h: Record<string, string | number> = Object.assign({}, headers, { accept: "application/json" });
    if (this.auth) h.authorization = this.auth;
    if (payload !== undefined) {
      h["content-type"] = "application/json";
      h["content-length"] = Buffer.byteLength(payload);
    }
    const what = `${method} ${path}`;
    return new Promise<HttpReply>((resolve, reject) => {
      let settled = false;
      let watch: NodeJS.Timeout | undefined;
      let deadline: NodeJS.Timeout | undefined;
      /** Set before the request is destroyed on purpose: the error to report instead of the socket's. */
      let failure: Error | undefined;
      const finish = () => {
        settled = true;
        if (watch) clearTimeout(watch);
        if (deadline) clearTimeout(deadline);
      };
      const fail = (req: ClientRequest, e: Error) => {
        if (settled || failure) return;
        failure = e;
        req.destroy(e);
      };
      const req = (this.secure ? httpsRequest : request)(
        {
          host: this.host,
          port: this.port,
          path: this.prefix + path,
          method,
          headers: h,
          agent: opts.agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", (e) => {
            if (settled) return;
            finish();
            reject(failure ?? new EndpointDownError(`${this.baseUrl}: response failed: ${e.message}`, { cause: e }));
          });
          res.on("end", () => {
            if (settled) return;
            finish();
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = text;
            if (text) {
              try {
                parsed = JSON.parse(text);
              } catch {
                /* non-JSON body: keep the text */
              }
            }
            const inst = res.headers[INSTANCE_HEADER];
            if (typeof inst === "string") this.instance = inst;
            if (path !== "/health") this.draining = res.headers[DRAINING_HEADER] === "1";
            resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
          });
        },
      );
      if (opts.watch && opts.timeoutMs > this.probeAfterMs) {
        const check = () => {
          watch = undefined;
          void this.probe().then((p) => {
            if (settled) return;
            if (p.state === "down") {
              fail(
                req,
                new EndpointDownError(
                  `env server ${this.baseUrl} hangs (${what}): no answer after ${this.probeAfterMs} ms, and /health did not answer within ${this.probeTimeoutMs} ms (${p.error})`,
                ),
              );
            } else watch = setTimeout(check, this.probeAfterMs);
          });
        };
        watch = setTimeout(check, this.probeAfterMs);
      }
      deadline = setTimeout(() => {
        deadline = undefined;
        if (!opts.watch) {
          fail(
            req,
            new EndpointDownError(`env server ${this.baseUrl} (${what}): no answer within ${opts.timeoutMs} ms`),
          );
          return;
        }
        // past the deadline: a server that still answers /health is busy with this call, not gone
        void this.probe().then((p) => {
          if (settled) return;
          const msg = `env server ${this.baseUrl} (${what}): no answer within ${opts.timeoutMs} ms`;
          fail(
            req,
            p.state === "down"
              ? new EndpointDownError(`${msg}, and /health did not answer within ${this.probeTimeoutMs} ms`)
              : new InfraError(`${msg} (its /health answers: the call is slow or stuck there)`),
          );
        });
      }, opts.timeoutMs);
      req.on("error", (e) => {
        if (settled) return;
        finish();
        if (failure) {
          reject(failure);
          return;
        }
        const err = new EndpointDownError(`env server ${this.baseUrl} unreachable (${what}): ${e.message}`, {
          cause: e,
        });
        const code = (e as NodeJS.ErrnoException).code;
        if (req.reusedSocket && (code === "ECONNRESET" || code === "EPIPE")) {
          Object.assign(err, { staleSocket: true });
        }
        reject(err);
      });
      req.end(payload);
    });
  }
}

/** The error message of a JSON error reply. */
export function replyMessage(r: HttpReply): string {
  const e = (r.body as { error?: { message?: string } } | undefined)?.error;
  return e?.message ?? (typeof r.body === "string" ? r.body.slice(0, 300) : `HTTP ${r.status}`);
}

/** The error code of a JSON error reply (`error.code`). */
export function replyCode(r: HttpReply): string | undefined {
  const c = (r.body as { error?: { code?: unknown } } | undefined)?.error?.code;
  return typeof c === "string" ? c : undefined;
}
