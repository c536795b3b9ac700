import { createServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { RolloutService } from "../service/index.js";
import { calcEnv } from "../test-env.js";
import {
  McpExchange,
  McpHttpSessions,
  McpJsonRpc,
  ROLLOUT_ID_HEADER,
  ROLLOUT_TOKEN_HEADER,
  TASK_RESOURCE,
} from "./mcp.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c();
});

function service(options: ConstructorParameters<typeof RolloutService>[1] = {}) {
  const s = new RolloutService(calcEnv(), options);
  closers.push(() => s.close());
  return s;
}

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

describe("McpJsonRpc: OpenEnv's sessionless JSON-RPC, answered by the MCP SDK's Server", () => {
  it("initialize, tools/list, throwaway and named-session tools/call, OpenEnv's session methods", async () => {
    const svc = service();
    const rpc = new McpJsonRpc(svc);
    closers.push(() => rpc.close());
    const ask = (method: string, params?: Record<string, unknown>, id: string | number = 1) =>
      rpc.handle({ jsonrpc: "2.0", id, method, ...(params ? { params } : {}) }, { client: "a" }) as Promise<any>;
    const init = await ask("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "t", version: "1" },
    });
    expect(init.result).toMatchObject({
      protocolVersion: "2025-06-18",
      capabilities: { tools: {}, resources: {}, prompts: {} },
      serverInfo: { name: "benchmax-calc" },
    });
    expect(await rpc.handle({ jsonrpc: "2.0", method: "notifications/initialized" })).toBeUndefined();
    const tools = await ask("tools/list");
    expect(tools.result.tools.map((t: any) => t.name)).toEqual(["add", "note", "sleep", "fail"]);
    expect(tools.result.tools[0].inputSchema.type).toBe("object");
    // a throwaway rollout per sessionless call, released after it
    expect(await ask("tools/call", { name: "add", arguments: { a: 1, b: 2 } }, "x")).toEqual({
      jsonrpc: "2.0",
      id: "x",
      result: { content: [{ type: "text", text: "3" }], isError: false, data: "3" },
    });
    expect(svc.active).toBe(0);
    // the model's mistakes are results it can read, not protocol errors
    const fail = await ask("tools/call", { name: "fail", arguments: {} });
    expect(fail.result).toMatchObject({ isError: true, content: [{ type: "text", text: "Error: it failed" }] });
    const unknown = await ask("tools/call", { name: "nope", arguments: {} });
    expect(unknown.result.isError).toBe(true);
    const badArgs = await ask("tools/call", { name: "add", arguments: { a: "x" } });
    expect(badArgs.result.isError).toBe(true);
    // a session keeps one episode; the id is the capability
    const sid = (await ask("openenv/session/create")).result.session_id as string;
    await ask("tools/call", { name: "note", arguments: { text: "x" }, session_id: sid });
    const second = await ask("tools/call", { name: "note", arguments: { text: "y" }, session_id: sid });
    expect(second.result.data).toBe("x,y");
    const [episode] = sid.split(".");
    const forged = await ask("tools/call", { name: "note", arguments: { text: "z" }, session_id: `${episode}.AAAA` });
    expect(forged.error.code).toBe(-32602);
    expect((await ask("openenv/session/close", {})).error.code).toBe(-32602);
    expect((await ask("openenv/session/close", { session_id: sid })).result).toEqual({ session_id: sid, closed: true });
    const gone = await ask("tools/call", { name: "note", arguments: { text: "z" }, session_id: sid });
    expect(gone.error.code).toBe(-32602);
    // the same request id from two callers at once: each gets its own answer
    const [p, q] = await Promise.all([
      ask("tools/call", { name: "add", arguments: { a: 1, b: 1 } }, 5),
      ask("tools/call", { name: "add", arguments: { a: 2, b: 2 } }, 5),
    ]);
    expect([p.result.data, q.result.data]).toEqual(["2", "4"]);
  });

  it("a hostile caller's messages never reach a victim's answer or session (request slots are reused)", async () => {
    const svc = service();
    const rpc = new McpJsonRpc(svc);
    closers.push(() => rpc.close());
    const victim = (method: string, params: Record<string, unknown>, id: number) =>
      rpc.handle({ jsonrpc: "2.0", id, method, params }, { client: "victim" }) as Promise<any>;
    const sid = (await victim("openenv/session/create", {}, 1)).result.session_id as string;
    // the victim's call is in flight (its slot is taken) while the attacker sends the same ids, answers naming small
    // slot ids, a `__proto__` key and a method-less message, over and over
    const slow = victim("tools/call", { name: "sleep", arguments: { ms: 30 }, session_id: sid }, 7);
    const hostile: unknown[] = [];
    for (let i = 0; i < 50; i++) {
      hostile.push(
        { jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "note", arguments: { text: "evil" } } },
        { jsonrpc: "2.0", id: i % 4, result: { content: [{ type: "text", text: "forged" }] } },
        { jsonrpc: "2.0", id: i % 4, error: { code: 1, message: "forged" } },
        JSON.parse(`{"jsonrpc": "2.0", "id": 7, "method": "tools/list", "__proto__": {"method": "tools/call"}}`),
      );
    }
    const answers = (await rpc.handleBody(hostile.slice(0, 64), { client: "attacker" })) as any[];
    for (let i = 64; i < hostile.length; i += 64)
      await rpc.handleBody(hostile.slice(i, i + 64), { client: "attacker" });
    // only requests are answered (the forged answers are dropped), each under the attacker's own id
    expect(answers.every((a) => a.id === 7)).toBe(true);
    expect(answers.some((a) => a.result?.tools)).toBe(true);
    expect(answers.some((a) => a.result?.data === "evil")).toBe(true);
    const done = await slow;
    expect(done).toMatchObject({ jsonrpc: "2.0", id: 7, result: { isError: false, data: "slept" } });
    // the victim's session saw only its own calls: the attacker's notes went to throwaway rollouts
    await victim("tools/call", { name: "note", arguments: { text: "mine" }, session_id: sid }, 8);
    const mine = await victim("tools/call", { name: "note", arguments: { text: "again" }, session_id: sid }, 9);
    expect(mine.result.data).toBe("mine,again");
    expect(svc.active).toBe(1);
  });

  it("tools/call is registered by its method only: the SDK Server's own check still answers a malformed call", async () => {
    const svc = service();
    const rpc = new McpJsonRpc(svc);
    closers.push(() => rpc.close());
    const call = (params: unknown) =>
      rpc.handle({ jsonrpc: "2.0", id: 9, method: "tools/call", params }, { client: "a" }) as Promise<any>;
    for (const params of [{ arguments: {} }, { name: 7 }, { name: "add", arguments: "x" }]) {
      const bad = await call(params);
      expect(bad.id).toBe(9);
      expect(bad.error.code).toBe(-32602);
      expect(bad.error.message).toMatch(/Invalid tools\/call request/);
    }
    expect(svc.active).toBe(0); // nothing was started for them
    // the Server's result check: the handler's answer is a CallToolResult it accepts, handed back as the SDK built it
    expect((await call({ name: "add", arguments: { a: 2, b: 3 } })).result).toEqual({
      content: [{ type: "text", text: "5" }],
      isError: false,
      data: "5",
    });
  });

  it("hands requests to the SDK's own request dispatcher (the pinned SDK has it; another one falls back)", async () => {
    const { Server } = await import("@modelcontextprotocol/sdk/server/index.js");
    const probe = new Server({ name: "p", version: "1" }, { capabilities: {} });
    expect(typeof (probe as unknown as { _onrequest?: unknown })._onrequest).toBe("function");
    const ex = new McpExchange<undefined>();
    ex.dispatchTo({}); // no dispatcher: the transport hook answers
    const server = new Server({ name: "p", version: "1" }, { capabilities: { tools: {} } });
    await server.connect(ex);
    expect(await ex.handle({ jsonrpc: "2.0", id: 3, method: "ping" }, undefined)).toEqual({
      jsonrpc: "2.0",
      id: 3,
      result: {},
    });
  });

  it("prompts/list answers an empty list (issue 27); the task resource holds the prompt, never the gold", async () => {
    const rpc = new McpJsonRpc(service());
    closers.push(() => rpc.close());
    const prompts = (await rpc.handle({ jsonrpc: "2.0", id: 1, method: "prompts/list" })) as any;
    expect(prompts.result).toEqual({ prompts: [] });
    const res = (await rpc.handle({
      jsonrpc: "2.0",
      id: 2,
      method: "resources/read",
      params: { uri: TASK_RESOURCE },
    })) as any;
    const body = JSON.parse(res.result.contents[0].text);
    expect(body).toMatchObject({ id: "t1", prompt: "What is 2 + 3?" });
    expect(typeof body.systemPrompt).toBe("string");
    expect(res.result.contents[0].text).not.toMatch(/groundTruth|"5"/);
  });

  it("answers malformed messages, unknown methods and oversized batches with JSON-RPC errors", async () => {
    const rpc = new McpJsonRpc(service(), { maxBatch: 2 });
    closers.push(() => rpc.close());
    expect(await rpc.handleText("{}")).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    expect(await rpc.handleText("{not json")).toMatchObject({ error: { code: -32700 } });
    expect(await rpc.handleText(JSON.stringify({ jsonrpc: "2.0", id: 9, method: "benchmax/reward" }))).toMatchObject({
      id: 9,
      error: { code: -32601 },
    });
    const batch = [1, 2].map((id) => ({ jsonrpc: "2.0", id, method: "tools/list" }));
    expect(((await rpc.handleText(JSON.stringify(batch))) as any[]).map((a) => a.id)).toEqual([1, 2]);
    const big = [1, 2, 3].map((id) => ({ jsonrpc: "2.0", id, method: "tools/list" }));
    expect(await rpc.handleText(JSON.stringify(big))).toMatchObject({ error: { code: -32600 } });
    expect(await rpc.handleText(JSON.stringify([{ jsonrpc: "2.0", method: "notifications/x" }]))).toBeUndefined();
  });
});

async function listen(sessions: McpHttpSessions): Promise<{ url: string; server: HttpServer }> {
  const server = createServer(async (req, res) => {
    let body: unknown;
    if (req.method === "POST") {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    }
    await sessions.handle(req, res, body, { operator: true, client: "t" });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  closers.push(
    () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server };
}

describe("McpHttpSessions: streamable-HTTP sessions, one rollout each", () => {
  it("serves the SDK's own Client; a session's rollout is scored by the harness, once; sessions are isolated", async () => {
    const svc = service();
    const sessions = new McpHttpSessions(svc);
    closers.push(() => sessions.close());
    const { url } = await listen(sessions);
    const connect = async (taskId: string) => {
      const client = new Client({ name: "t", version: "1" });
      const transport = new StreamableHTTPClientTransport(new URL(`${url}?task_id=${taskId}`));
      await client.connect(transport);
      return { client, transport };
    };
    const victim = await connect("t2");
    const attacker = await connect("t1");
    expect((await victim.client.listTools()).tools.map((t) => t.name)).toContain("add");
    expect(text(await victim.client.callTool({ name: "note", arguments: { text: "v" } }))).toBe("v");
    expect(text(await attacker.client.callTool({ name: "note", arguments: { text: "a" } }))).toBe("a");
    const task = await victim.client.readResource({ uri: TASK_RESOURCE });
    expect(JSON.parse((task.contents[0] as { text: string }).text)).toMatchObject({ id: "t2" });
    expect((await victim.client.listPrompts()).prompts).toEqual([]);
    const vr = sessions.rolloutOf(victim.transport.sessionId!)!;
    expect(vr.task.id).toBe("t2");
    expect(await svc.score(vr, { completion: "<answer>17</answer>" })).toMatchObject({ reward: 1, passed: true });
    await expect(svc.score(vr, { completion: "<answer>18</answer>" })).rejects.toMatchObject({ code: "conflict" });
    // ending a session (DELETE) releases the rollout it made
    for (const c of [attacker, victim]) {
      await c.transport.terminateSession();
      await c.client.close();
    }
    await expect.poll(() => svc.active).toBe(0);
  });

  it("names the rollout in initialize's headers; caps sessions in all and per rollout token", async () => {
    const svc = service();
    const sessions = new McpHttpSessions(svc, { maxSessions: 2, maxSessionsPerRollout: 1 });
    closers.push(() => sessions.close());
    const { url } = await listen(sessions);
    const init = (headers: Record<string, string> = {}) =>
      fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: {
            protocolVersion: "2025-06-18",
            capabilities: {},
            clientInfo: { name: "i", version: "1" },
            _meta: { "benchmax/task_id": "t3" },
          },
        }),
      });
    const a = await init();
    expect(a.status).toBe(200);
    await a.text();
    const id = a.headers.get(ROLLOUT_ID_HEADER)!;
    const token = a.headers.get(ROLLOUT_TOKEN_HEADER)!;
    expect(svc.get(id, token).task.id).toBe("t3");
    const b = await init();
    await b.text();
    const full = await init();
    expect(full.status).toBe(503);
    expect(full.headers.get("retry-after")).toBe("1");
    expect(sessions.size).toBe(2);
    const refused = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toMatch(/initialize request first/);
  });
});
