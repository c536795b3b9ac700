import { PassThrough } from "node:stream";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveMcpHttp, serveMcpStdio, TASK_RESOURCE } from "./serve-mcp.js";
import { sumEnv } from "./test-utils/sum-env.js";

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

async function httpClient(url: string, headers?: Record<string, string>) {
  const client = new Client({ name: "test", version: "1" });
  const transport = new StreamableHTTPClientTransport(new URL(url), headers ? { requestInit: { headers } } : undefined);
  await client.connect(transport);
  return { client, transport };
}

const OP = { authorization: "Bearer op-token" };

async function harness(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json", ...OP, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json().catch(() => undefined)) as any };
}

describe("serveMcpHttp: any env as a streamable-HTTP MCP server, one session per rollout", () => {
  const { env, released } = sumEnv();
  let server: { url: string; close(): Promise<void> };
  let base: string;
  beforeAll(async () => {
    server = await serveMcpHttp(env, { port: 0, token: "op-token" });
    base = server.url.replace(/\/mcp$/, "");
  });
  afterAll(() => server.close());

  it("answers /health for readiness probes without a token", async () => {
    const res = await fetch(`${base}/health`);
    expect(res.status).toBe(200);
    // the one HTTP host's /health (serveMcpHttp is `benchmax serve`'s host, MCP endpoint first)
    expect(await res.json()).toMatchObject({ status: "healthy", activeRollouts: 0, sessions: 0 });
  });

  it("needs the token: 401 without, 403 with a wrong one (what the MCP Inspector gets without a header)", async () => {
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "i", version: "1" } },
    };
    const post = (headers: Record<string, string>) =>
      fetch(server.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify(init),
      });
    expect((await post({})).status).toBe(401);
    expect((await post({ authorization: "Bearer nope" })).status).toBe(403);
    await expect(httpClient(server.url)).rejects.toThrow();
    expect((await harness(base, "POST", "/v1/rollouts", {}, { authorization: "Bearer nope" })).status).toBe(403);
  });

  it("lists the env's tools only: no reward or task-choice tool reaches the model", async () => {
    const { client } = await httpClient(server.url, OP);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["add", "boom"]);
    expect(tools[0]).toMatchObject({
      description: "Add a number to the running total",
      inputSchema: {
        type: "object",
        properties: { n: { type: "number", description: "the number to add" } },
        required: ["n"],
      },
    });
    for (const name of ["benchmax_reward", "benchmax_start"]) {
      const r = await client.callTool({ name, arguments: { answer: "5", task_id: "seven" } });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/unknown tool/);
    }
    await client.close();
  });

  it("runs harness-made rollouts; sessions are isolated; the harness scores each once", async () => {
    const ra = (await harness(base, "POST", "/v1/rollouts", { taskId: "seven" })).body;
    const rb = (await harness(base, "POST", "/v1/rollouts", { taskId: "five" })).body;
    expect(ra).toMatchObject({ taskId: "seven", systemPrompt: expect.any(String) });
    // the MCP client (the model's side) holds only its rollout's token
    const a = await httpClient(server.url, { authorization: `Bearer ${ra.token}` });
    const b = await httpClient(server.url, { authorization: `Bearer ${rb.token}` });
    expect(text(await a.client.callTool({ name: "add", arguments: { n: 3 } }))).toBe("total=3");
    expect(text(await b.client.callTool({ name: "add", arguments: { n: 5 } }))).toBe("total=5");
    expect(text(await a.client.callTool({ name: "add", arguments: { n: 4 } }))).toBe("total=7");
    const err = await a.client.callTool({ name: "boom", arguments: {} });
    expect(err).toMatchObject({ isError: true, content: [{ type: "text", text: "Error: nope" }] });
    const bad = await a.client.callTool({ name: "add", arguments: { n: "x" } });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/n: /);
    const task = await a.client.readResource({ uri: TASK_RESOURCE });
    const body = JSON.parse((task.contents[0] as { text: string }).text);
    expect(body).toMatchObject({ id: "seven", prompt: "Make 7" });
    expect(JSON.stringify(body)).not.toMatch(/groundTruth/);
    // a rollout token opens nothing on the harness channel, and not another rollout's session
    expect(
      (
        await harness(
          base,
          "POST",
          `/v1/rollouts/${ra.rolloutId}/reward`,
          { completion: "7" },
          { authorization: `Bearer ${ra.token}`, "x-rollout-token": ra.token },
        )
      ).status,
    ).toBe(403);
    const cross = await fetch(server.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${ra.token}`,
        "mcp-session-id": b.transport.sessionId!,
        "mcp-protocol-version": "2025-06-18",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 9,
        method: "tools/call",
        params: { name: "add", arguments: { n: 1 } },
      }),
    });
    expect(cross.status).toBe(403);
    // scoring: the operator token and the rollout's token; once
    const scoreA = await harness(
      base,
      "POST",
      `/v1/rollouts/${ra.rolloutId}/reward`,
      { completion: "7" },
      { "x-rollout-token": ra.token },
    );
    expect(scoreA.body).toEqual({ reward: 1, rewards: { total: 1, answer: 1 }, passed: true });
    const again = await harness(
      base,
      "POST",
      `/v1/rollouts/${ra.rolloutId}/reward`,
      { completion: "8" },
      { "x-rollout-token": ra.token },
    );
    expect(again.status).toBe(409);
    const wrong = await harness(
      base,
      "POST",
      `/v1/rollouts/${rb.rolloutId}/reward`,
      { completion: "7" },
      { "x-rollout-token": ra.token },
    );
    expect(wrong.status).toBe(403);
    const scoreB = await harness(
      base,
      "POST",
      `/v1/rollouts/${rb.rolloutId}/reward`,
      { completion: "7" },
      { "x-rollout-token": rb.token },
    );
    expect(scoreB.body).toEqual({ reward: 1, rewards: { total: 1, answer: 0 }, passed: true });
    const before = released.length;
    await a.client.close();
    await b.client.close();
    for (const r of [ra, rb]) {
      expect(
        (await harness(base, "POST", `/v1/rollouts/${r.rolloutId}/release`, {}, { "x-rollout-token": r.token })).status,
      ).toBe(200);
    }
    expect(released.length).toBe(before + 2);
  });

  it("an operator session gets a rollout of its own; initialize's answer names it for the harness", async () => {
    const res = await fetch(server.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...OP,
        "x-benchmax-task-id": "five",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "i", version: "1" } },
      }),
    });
    expect(res.status).toBe(200);
    const id = res.headers.get("x-benchmax-rollout-id")!;
    const tok = res.headers.get("x-benchmax-rollout-token")!;
    expect(id).toMatch(/^r_/);
    await res.text();
    const st = await harness(base, "GET", `/v1/rollouts/${id}`, undefined, { "x-rollout-token": tok });
    expect(st.body).toMatchObject({ episode_id: id, tool_calls: 0, reward: null });
    const sid = res.headers.get("mcp-session-id")!;
    await fetch(server.url, {
      method: "DELETE",
      headers: { ...OP, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
    });
    await expect
      .poll(
        async () => (await harness(base, "GET", `/v1/rollouts/${id}`, undefined, { "x-rollout-token": tok })).status,
      )
      .toBe(404);
  });

  it("the harness can move an open session onto a task it picks", async () => {
    const c = await httpClient(server.url, OP);
    expect(text(await c.client.callTool({ name: "add", arguments: { n: 1 } }))).toBe("total=1");
    const r = await harness(base, "POST", "/v1/rollouts", { taskId: "seven", session: c.transport.sessionId });
    expect(r.status).toBe(201);
    expect(text(await c.client.callTool({ name: "add", arguments: { n: 7 } }))).toBe("total=7");
    const score = await harness(
      base,
      "POST",
      `/v1/rollouts/${r.body.rolloutId}/reward`,
      { completion: "7" },
      { "x-rollout-token": r.body.token },
    );
    expect(score.body).toMatchObject({ reward: 1, passed: true });
    await c.client.close();
  });

  it("rejects an unknown task id with a clear error", async () => {
    const r = await harness(base, "POST", "/v1/rollouts", { taskId: "nope" });
    expect(r.status).toBe(404);
    expect(r.body.error.message).toMatch(/unknown task id "nope"/);
    // a session on an unknown task is refused at initialize, before any tool call
    await expect(httpClient(`${server.url}?task_id=nope`, OP)).rejects.toThrow(/unknown task id \\"nope\\"/);
  });

  it("opens no session without an initialize: such a request is OpenEnv's sessionless JSON-RPC", async () => {
    const res = await fetch(server.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...OP },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    const names = ((await res.json()) as { result: { tools: { name: string }[] } }).result.tools.map((t) => t.name);
    expect(names).toEqual(["add", "boom"]);
    // a sessionless call without a session_id runs on a throwaway rollout, released after the call and never scored
    const before = released.length;
    const call = await fetch(server.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...OP },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 2,
        method: "tools/call",
        params: { name: "add", arguments: { n: 1 } },
      }),
    });
    expect(((await call.json()) as { result: unknown }).result).toMatchObject({ content: [{ text: "total=1" }] });
    await expect.poll(() => released.length).toBe(before + 1);
  });
});

describe("serveMcpHttp limits", () => {
  it("answers 503 past maxRollouts and releases rollouts idle past sessionIdleMs", async () => {
    const { env, released } = sumEnv();
    const s = await serveMcpHttp(env, { port: 0, maxRollouts: 1, sessionIdleMs: 40 });
    const base = s.url.replace(/\/mcp$/, "");
    try {
      const one = await fetch(`${base}/v1/rollouts`, { method: "POST", body: "{}" });
      expect(one.status).toBe(201);
      const two = await fetch(`${base}/v1/rollouts`, { method: "POST", body: "{}" });
      expect(two.status).toBe(503);
      expect(two.headers.get("retry-after")).toBe("1");
      // the idle rollout is released, which frees the slot
      await expect.poll(() => released.length, { timeout: 5_000 }).toBe(1);
      expect((await fetch(`${base}/v1/rollouts`, { method: "POST", body: "{}" })).status).toBe(201);
    } finally {
      await s.close();
    }
  });
});

/** The SDK's stdio framing over in-process streams (the server side is the real StdioServerTransport). */
class StreamClientTransport implements Transport {
  onmessage?: (m: JSONRPCMessage) => void;
  onclose?: () => void;
  onerror?: (e: Error) => void;
  private buf = new ReadBuffer();
  constructor(
    private readonly toServer: PassThrough,
    private readonly fromServer: PassThrough,
  ) {}
  async start() {
    this.fromServer.on("data", (chunk: Buffer) => {
      this.buf.append(chunk);
      for (let m = this.buf.readMessage(); m; m = this.buf.readMessage()) this.onmessage?.(m);
    });
  }
  async send(m: JSONRPCMessage) {
    this.toServer.write(serializeMessage(m));
  }
  async close() {
    this.toServer.end();
    this.onclose?.();
  }
}

describe("serveMcpStdio: one rollout over stdin/stdout", () => {
  it("serves the env's tools to the SDK client; scoring and task choice stay with the harness's handle", async () => {
    const { env, released } = sumEnv();
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const served = await serveMcpStdio(env, { stdin, stdout });
    const client = new Client({ name: "test", version: "1" });
    await client.connect(new StreamClientTransport(stdin, stdout));
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["add", "boom"]);
    expect(text(await client.callTool({ name: "add", arguments: { n: 5 } }))).toBe("total=5");
    expect((await client.callTool({ name: "benchmax_reward", arguments: { answer: "5" } })).isError).toBe(true);
    expect(served.rollout()).toMatchObject({ taskId: "five", toolCalls: 2 });
    expect(await served.score({ completion: "5" })).toMatchObject({ reward: 1, passed: true });
    // scored once: the same answer again gets the same score back (a safe retry), another one is refused
    expect(await served.score({ completion: "5" })).toMatchObject({ reward: 1, passed: true });
    await expect(served.score({ completion: "6" })).rejects.toThrow(/already scored/);
    const next = await served.start("seven");
    expect(next.taskId).toBe("seven");
    expect(released).toHaveLength(1);
    expect(text(await client.callTool({ name: "add", arguments: { n: 7 } }))).toBe("total=7");
    await client.close(); // ends the server's input
    await served.closed;
    expect(released).toHaveLength(2);
    await served.close();
  });
});

describe("serveMcpHttp drains as benchmax serve does (SIGTERM in `serve --mcp --port`)", () => {
  it("refuses new sessions and rollouts, serves the live session until it is released, then closes", async () => {
    const { env } = sumEnv();
    // a grace far longer than the test: only the release can end this drain
    const server = await serveMcpHttp(env, { port: 0, token: "op-token", drainGraceMs: 3_600_000 });
    const base = server.url.replace(/\/mcp$/, "");
    const live = await harness(base, "POST", "/v1/rollouts", {});
    expect(live.status).toBe(201);
    const { client } = await httpClient(server.url, { authorization: `Bearer ${live.body.token}` });
    expect(text(await client.callTool({ name: "add", arguments: { n: 2 } }))).toMatch(/2/);

    const drained = server.drain();
    expect(server.draining).toBe(true);
    // the door: a new MCP session and a new harness rollout are refused, and say why
    const init = await fetch(server.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...OP },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "late", version: "1" } },
      }),
    });
    expect(init.status).toBe(503);
    expect(init.headers.get("x-benchmax-draining")).toBe("1");
    const refused = await harness(base, "POST", "/v1/rollouts", {});
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: "DRAINING", message: expect.stringMatching(/draining/) });
    const health = await fetch(`${base}/health`);
    expect([health.status, ((await health.json()) as { status: string }).status]).toEqual([503, "draining"]);

    // the live session goes on: tool calls, then its reward, then its release ends the drain
    expect(text(await client.callTool({ name: "add", arguments: { n: 3 } }))).toMatch(/5/);
    const headers = { "x-rollout-token": live.body.token };
    const reward = await harness(
      base,
      "POST",
      `/v1/rollouts/${live.body.rolloutId}/reward`,
      { completion: "5" },
      headers,
    );
    expect(reward.status).toBe(200);
    expect(server.activeRollouts).toBe(1);
    await harness(base, "POST", `/v1/rollouts/${live.body.rolloutId}/release`, {}, headers);
    expect(await drained).toEqual({ left: 0 });
    await expect(fetch(`${base}/health`)).rejects.toThrow();
  });
});
