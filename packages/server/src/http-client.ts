import { Agent, type IncomingHttpHeaders, request } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import { InfraError } from "@benchmax/core";

/** An InfraError raised because an endpoint could not be reached (refused, reset, timed out). */
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

export interface EnvClientOptions {
  /** Bearer token of the server. */
  token?: string;
  /** Per-request time limit (ms); past it the request fails as an InfraError. Default 120 s. */
  timeoutMs?: number;
}

const agents = { http: new Agent({ keepAlive: true, maxSockets: 256 }), https: new HttpsAgent({ keepAlive: true }) };

/** A small keep-alive JSON client for one env server. */
export class EnvClient {
  readonly baseUrl: string;
  private readonly host: string;
  private readonly port: number;
  private readonly prefix: string;
  private readonly secure: boolean;
  private readonly auth?: string;
  private readonly timeoutMs: number;

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
  }

  async request(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<HttpReply> {
    try {
      return await this.send(method, path, body, headers);
    } catch (e) {
      // a kept-alive socket the server closed meanwhile (restart, idle timeout): the request never arrived
      if ((e as { staleSocket?: boolean }).staleSocket) return this.send(method, path, body, headers);
      throw e;
    }
  }

  private send(method: string, path: string, body: unknown, headers: Record<string, string>): Promise<HttpReply> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const h: Record<string, string | number> = Object.assign({}, headers, { accept: "application/json" });
    if (this.auth) h.authorization = this.auth;
    if (payload !== undefined) {
      h["content-type"] = "application/json";
      h["content-length"] = Buffer.byteLength(payload);
    }
    return new Promise<HttpReply>((resolve, reject) => {
      const req = (this.secure ? httpsRequest : request)(
        {
          host: this.host,
          port: this.port,
          path: this.prefix + path,
          method,
          headers: h,
          agent: this.secure ? agents.https : agents.http,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("error", (e) =>
            reject(new EndpointDownError(`${this.baseUrl}: response failed: ${e.message}`, { cause: e })),
          );
          res.on("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = text;
            if (text) {
              try {
                parsed = JSON.parse(text);
              } catch {
                /* non-JSON body: keep the text */
              }
            }
            resolve({ status: res.statusCode ?? 0, body: parsed, headers: res.headers });
          });
        },
      );
      req.setTimeout(this.timeoutMs, () => {
        req.destroy(new Error(`no answer within ${this.timeoutMs} ms`));
      });
      req.on("error", (e) => {
        const err = new EndpointDownError(`env server ${this.baseUrl} unreachable (${method} ${path}): ${e.message}`, {
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
