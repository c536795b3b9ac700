import { errorMessage, InfraError } from "@benchmax/core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import { type CallToolResult, ErrorCode, McpError, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { describeEndpoint, type McpEndpoint } from "./endpoint.js";
import { perRequestSignalFetch } from "./per-request-signal.js";

export interface ConnectOptions {
  /** Label used in errors (the server's name in the env). */
  label?: string;
  /** Time allowed for spawn + initialize (ms). Default 10 s. */
  startTimeoutMs?: number;
  /** Client name sent in `initialize`. */
  clientName?: string;
  /** `_meta` sent with no request; kept for callers that need it. */
  stderr?: "ignore" | "inherit" | "pipe";
}

/** A tool call that the server answered, as the SDK returns it. */
export type McpCallResult = CallToolResult;

/**
 * One live connection to one MCP server (a spawned process or an HTTP session).
 * Any transport failure (exit, malformed JSON-RPC, timeout) marks it dead; calls on a dead connection throw InfraError.
 */
export class McpConnection {
  readonly client: Client;
  private deadReason: string | undefined;
  private readonly deathListeners = new Set<(reason: string) => void>();
  private closing = false;
  private spawnedPid: number | null = null;

  private constructor(
    readonly endpoint: McpEndpoint,
    readonly transport: Transport,
    readonly label: string,
    clientName: string,
  ) {
    this.client = new Client({ name: clientName, version: "0.1.0" }, { capabilities: {} });
    if (transport instanceof StdioClientTransport) {
      // remember the pid: the SDK forgets it as soon as it starts closing, and a stuck server must still be killed
      const start = transport.start.bind(transport);
      transport.start = async () => {
        await start();
        this.spawnedPid = transport.pid;
      };
    }
    this.client.onclose = () => this.markDead("the server closed the connection (process exited or session ended)");
    this.client.onerror = (e) => {
      // On stdio any unparseable line means the stream can no longer be trusted.
      if (endpoint.type === "stdio") this.markDead(`malformed JSON-RPC from the server: ${errorMessage(e)}`);
    };
  }

  /** Spawn or reach a server and complete the MCP handshake. Throws InfraError when it does not come up in time. */
  static async open(endpoint: McpEndpoint, options: ConnectOptions = {}): Promise<McpConnection> {
    const label = options.label ?? describeEndpoint(endpoint);
    const transport: Transport =
      endpoint.type === "stdio"
        ? new StdioClientTransport({
            command: endpoint.command,
            args: endpoint.args,
            env: { ...getDefaultEnvironment(), ...endpoint.env },
            cwd: endpoint.cwd,
            stderr: options.stderr ?? "ignore",
          })
        : new StreamableHTTPClientTransport(new URL(endpoint.url), {
            requestInit: endpoint.headers ? { headers: endpoint.headers } : undefined,
            // a signal per request: no abort listener per call left on the transport's long-lived signal
            fetch: perRequestSignalFetch,
          });
    const conn = new McpConnection(endpoint, transport, label, options.clientName ?? "benchmax");
    const timeout = options.startTimeoutMs ?? 10_000;
    try {
      await conn.client.connect(transport, { timeout });
    } catch (e) {
      await conn.close({ force: true });
      throw new InfraError(`MCP server "${label}" did not become healthy within ${timeout} ms: ${errorMessage(e)}`, {
        cause: e,
      });
    }
    return conn;
  }

  get pid(): number | null {
    return this.spawnedPid;
  }

  get alive(): boolean {
    return this.deadReason === undefined;
  }

  get deathReason(): string | undefined {
    return this.deadReason;
  }

  onDeath(listener: (reason: string) => void): () => void {
    this.deathListeners.add(listener);
    return () => this.deathListeners.delete(listener);
  }

  markDead(reason: string): void {
    if (this.deadReason !== undefined) return;
    this.deadReason = this.closing ? "closed" : reason;
    for (const l of this.deathListeners) l(this.deadReason);
    if (!this.closing) void this.close({ force: true });
  }

  private infra(what: string, e: unknown): InfraError {
    if (e instanceof InfraError) return e;
    return new InfraError(`MCP server "${this.label}" ${what}: ${errorMessage(e)}`, { cause: e });
  }

  /** The server's tools (all pages). */
  async listTools(timeoutMs = 10_000): Promise<McpTool[]> {
    const out: McpTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.guard("tools/list", () =>
        this.client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs }),
      );
      out.push(...page.tools);
      cursor = page.nextCursor;
    } while (cursor);
    return out;
  }

  /** A health check: `ping` answered within the time limit. */
  async ping(timeoutMs = 2_000): Promise<boolean> {
    if (!this.alive) return false;
    try {
      await this.guard("ping", () => this.client.ping({ timeout: timeoutMs }));
      return true;
    } catch {
      return false;
    }
  }

  /**
   * Call a tool. A server-side JSON-RPC error (unknown tool, invalid params) comes back as an `isError` result the
   * model can read; a dead, hung or garbled server throws InfraError (and this connection is marked dead).
   * (The hot path: one async frame around the SDK call.)
   */
  async callTool(name: string, args: Record<string, unknown>, timeoutMs: number): Promise<McpCallResult> {
    if (this.deadReason !== undefined) throw new InfraError(`MCP server "${this.label}" is dead: ${this.deadReason}`);
    try {
      return (await this.client.callTool({ name, arguments: args }, undefined, {
        timeout: timeoutMs,
      })) as McpCallResult;
    } catch (e) {
      if (e instanceof McpError && !isTransportCode(e.code)) {
        return { content: [{ type: "text", text: `Error: ${e.message}` }], isError: true };
      }
      throw this.failure(`tools/call ${name}`, e);
    }
  }

  /** Run one request; a transport failure marks the connection dead and becomes an InfraError. */
  private async guard<R>(what: string, fn: () => Promise<R>): Promise<R> {
    if (this.deadReason !== undefined) throw new InfraError(`MCP server "${this.label}" is dead: ${this.deadReason}`);
    try {
      return await fn();
    } catch (e) {
      if (e instanceof McpError && !isTransportCode(e.code)) throw e;
      throw this.failure(what, e);
    }
  }

  /**
   * A failed request. No race with the connection's death is needed: marking it dead closes the transport, and the
   * SDK then rejects every pending request (ConnectionClosed), which lands here with the recorded reason.
   */
  private failure(what: string, e: unknown): InfraError {
    if (e instanceof McpError && e.code === ErrorCode.RequestTimeout && this.alive) {
      this.markDead(`${what} timed out (the server hangs)`);
      return new InfraError(`MCP server "${this.label}": ${what} timed out: ${e.message}`, { cause: e });
    }
    // closed connection, fetch failure, a response that is not valid MCP
    const why = this.deadReason ?? errorMessage(e);
    this.markDead(`${what} failed: ${errorMessage(e)}`);
    return this.infra(`${what} failed`, new Error(why, { cause: e }));
  }

  /**
   * Close the connection: a spawned process gets end-of-input (then SIGTERM/SIGKILL), or SIGKILL at once with
   * `force`; an HTTP session is terminated. Idempotent.
   */
  async close(options: { force?: boolean } = {}): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const pid = this.pid;
    if (options.force && pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        /* already gone */
      }
    }
    if (this.deadReason === undefined) {
      this.deadReason = "closed";
      for (const l of this.deathListeners) l("closed");
    }
    if (this.transport instanceof StreamableHTTPClientTransport && this.transport.sessionId) {
      await withTimeout(
        this.transport.terminateSession().catch(() => {}),
        1_000,
      );
    }
    await withTimeout(
      this.client.close().catch(() => {}),
      2_000,
    );
  }
}

/** Codes that mean the server (not the model's call) failed: the rollout becomes an infra_error. */
function isTransportCode(code: number): boolean {
  return code === ErrorCode.ConnectionClosed || code === ErrorCode.RequestTimeout || code === ErrorCode.InternalError;
}

function withTimeout(p: Promise<unknown>, ms: number): Promise<unknown> {
  let t: NodeJS.Timeout;
  return Promise.race([p, new Promise((r) => (t = setTimeout(r, ms)))]).finally(() => clearTimeout(t));
}
