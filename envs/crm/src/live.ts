import { InfraError } from "@benchmax/core";
import type { QueryResult } from "./query-engine.js";
import { SfError, type SfErrorCode } from "./sf-error.js";
import type { SearchResult } from "./sosl.js";

/**
 * An optional live backend: a real Salesforce org through jsforce. Credentials come only from options or
 * environment variables (SF_INSTANCE_URL + SF_ACCESS_TOKEN, or SF_LOGIN_URL + SF_USERNAME + SF_PASSWORD), never code.
 */
export interface LiveOptions {
  instanceUrl?: string;
  accessToken?: string;
  loginUrl?: string;
  username?: string;
  password?: string;
  /** REST API version (default 59.0). */
  version?: string;
  /** Retries of 429/5xx/connection errors before the call fails as an InfraError (default 2). */
  maxRetries?: number;
  /** First retry delay in ms, doubled each retry (default 500). */
  retryMinTimeoutMs?: number;
}

/** Live options from environment variables; undefined when none are set. */
export function liveOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): LiveOptions | undefined {
  const o: LiveOptions = {
    instanceUrl: env.SF_INSTANCE_URL,
    accessToken: env.SF_ACCESS_TOKEN,
    loginUrl: env.SF_LOGIN_URL,
    username: env.SF_USERNAME,
    password: env.SF_PASSWORD,
    version: env.SF_API_VERSION,
  };
  return Object.values(o).some((v) => v) ? o : undefined;
}

const SF_CODES = new Set<string>([
  "MALFORMED_QUERY",
  "MALFORMED_SEARCH",
  "INVALID_FIELD",
  "INVALID_TYPE",
  "INVALID_FIELD_FOR_INSERT_UPDATE",
  "ENTITY_IS_READ_ONLY",
  "INVALID_ID_FIELD",
  "NOT_FOUND",
]);

/** Remove `attributes` from records and nested relationship objects, as the original CRM env does. */
export function stripAttributes<T>(value: T): T {
  if (Array.isArray(value)) return value.map(stripAttributes) as T;
  if (value && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>))
      if (k !== "attributes") out[k] = stripAttributes(v);
    return out as T;
  }
  return value;
}

interface JsforceConnection {
  request<T>(request: string, options?: Record<string, unknown>): Promise<T>;
  login(username: string, password: string): Promise<unknown>;
}

function toError(e: unknown, what: string): Error {
  const err = e as { errorCode?: string; name?: string; message?: string };
  const code = err?.errorCode ?? err?.name;
  if (code && SF_CODES.has(code)) return new SfError(code as SfErrorCode, err.message ?? code);
  return new InfraError(`Salesforce ${what} failed: ${err?.message ?? String(e)}`, { cause: e });
}

/** A live org: SOQL and SOSL through the REST API. Salesforce errors are SfErrors; transport failures InfraErrors. */
export class LiveOrg {
  private constructor(
    private readonly conn: JsforceConnection,
    private readonly callOptions: Record<string, unknown>,
  ) {}

  static async connect(options: LiveOptions): Promise<LiveOrg> {
    // jsforce is an optional peer dependency: only the live backend needs it (and its core-js dependencies)
    const { Connection } = (await import("jsforce").catch((e: NodeJS.ErrnoException) => {
      if (e?.code !== "ERR_MODULE_NOT_FOUND") throw e;
      throw new InfraError(
        "crm backend=live needs jsforce, an optional peer dependency of @benchmax/env-crm: npm i jsforce",
        { cause: e, retryable: false },
      );
    })) as unknown as {
      Connection: new (o: Record<string, unknown>) => JsforceConnection;
    };
    const version = options.version ?? "59.0";
    const callOptions = {
      retry: { maxRetries: options.maxRetries ?? 2, minTimeout: options.retryMinTimeoutMs ?? 500 },
    };
    if (options.instanceUrl && options.accessToken) {
      return new LiveOrg(
        new Connection({ instanceUrl: options.instanceUrl, accessToken: options.accessToken, version }),
        callOptions,
      );
    }
    if (options.username && options.password) {
      const conn = new Connection({ loginUrl: options.loginUrl ?? "https://login.salesforce.com", version });
      try {
        await conn.login(options.username, options.password);
      } catch (e) {
        throw new InfraError(`Salesforce login failed: ${(e as Error).message}`, { cause: e, retryable: false });
      }
      return new LiveOrg(conn, callOptions);
    }
    throw new InfraError("live CRM backend: set SF_INSTANCE_URL and SF_ACCESS_TOKEN (or SF_USERNAME and SF_PASSWORD)", {
      retryable: false,
    });
  }

  async query(soql: string, maxRecords = 200): Promise<QueryResult> {
    try {
      const r = await this.conn.request<{ totalSize: number; done: boolean; records: unknown[] }>(
        `/query?q=${encodeURIComponent(soql)}`,
        this.callOptions,
      );
      const records = stripAttributes(r.records as Array<Record<string, unknown>>);
      const out: QueryResult = {
        totalSize: r.totalSize,
        done: r.done && records.length <= maxRecords,
        records: records.slice(0, maxRecords),
      };
      if (out.records.length < r.totalSize && !out.done) {
        out.message = `Result truncated: ${out.records.length} of ${r.totalSize} records shown. Narrow the WHERE clause or page with LIMIT/OFFSET.`;
      }
      return out;
    } catch (e) {
      throw toError(e, "query");
    }
  }

  async search(sosl: string, maxRecords = 200): Promise<SearchResult> {
    try {
      const r = await this.conn.request<{ searchRecords?: unknown[] }>(
        `/search?q=${encodeURIComponent(sosl)}`,
        this.callOptions,
      );
      const recs = (r.searchRecords ?? []) as Array<Record<string, unknown>>;
      return {
        searchRecords: recs.slice(0, maxRecords).map((x) => {
          const type = (x.attributes as { type?: string } | undefined)?.type;
          return { ...(type ? { attributes: { type } } : {}), ...stripAttributes(x) };
        }),
      };
    } catch (e) {
      throw toError(e, "search");
    }
  }
}
