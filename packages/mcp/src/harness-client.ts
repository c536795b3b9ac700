import { EnvError, InfraError, type Message } from "@benchmax/core";
import type { RewardOutcome } from "./serve-mcp.js";

/** A rollout the harness made on a `serveMcpHttp` server: its id and its capability token. */
export interface HarnessRollout {
  rolloutId: string;
  token: string;
  taskId: string;
  systemPrompt: string;
}

/**
 * The harness side of `serveMcpHttp` (the channel the policy never sees): make rollouts on chosen tasks, move an open
 * MCP session onto one, score each once, release. `url` is the server's MCP URL (`http://host:port/mcp`) or its base.
 */
export class McpHarnessClient {
  readonly base: string;
  constructor(
    url: string,
    private readonly options: { token?: string; timeoutMs?: number } = {},
  ) {
    this.base = url.replace(/\/mcp\/?$/, "").replace(/\/$/, "");
  }

  private async request(method: string, path: string, body?: unknown, rolloutToken?: string): Promise<unknown> {
    const headers: Record<string, string> = { "content-type": "application/json" };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    if (rolloutToken) headers["x-rollout-token"] = rolloutToken;
    let res: Response;
    try {
      res = await fetch(this.base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(this.options.timeoutMs ?? 60_000),
      });
    } catch (e) {
      throw new InfraError(`${this.base}${path}: ${(e as Error).message}`);
    }
    const out = (await res.json().catch(() => undefined)) as { error?: { message?: string } } | undefined;
    if (!res.ok) {
      const msg = `${method} ${this.base}${path} failed (HTTP ${res.status}): ${out?.error?.message ?? res.statusText}`;
      if (res.status >= 500 || res.status === 401 || res.status === 403)
        throw new InfraError(msg, { retryable: res.status >= 500 });
      throw new EnvError(msg);
    }
    return out;
  }

  /** A rollout on `taskId` (the next task when omitted); with `session` (an MCP session id) that session moves onto it. */
  create(options: { taskId?: string; session?: string } = {}): Promise<HarnessRollout> {
    return this.request("POST", "/v1/rollouts", options) as Promise<HarnessRollout>;
  }

  /** Score a rollout once, from the final text or the whole conversation. */
  score(
    r: Pick<HarnessRollout, "rolloutId" | "token">,
    input: { completion?: string; messages?: Message[] },
  ): Promise<RewardOutcome> {
    return this.request(
      "POST",
      `/v1/rollouts/${encodeURIComponent(r.rolloutId)}/reward`,
      input,
      r.token,
    ) as Promise<RewardOutcome>;
  }

  async release(r: Pick<HarnessRollout, "rolloutId" | "token">): Promise<void> {
    await this.request("POST", `/v1/rollouts/${encodeURIComponent(r.rolloutId)}/release`, {}, r.token);
  }
}
