/**
 * OpenEnv conformance, from the JSON that OpenEnv's own clients and validator send and expect. Sources read
 * (github.com/meta-pytorch/OpenEnv at 685de411):
 * - src/openenv/cli/_validation.py      `validate_running_environment`: the 6 criteria replayed in `validate()` below
 * - src/openenv/core/env_client.py      EnvClient: WS `/ws`, `{type: reset|step|state|close, data}`, no custom headers
 * - src/openenv/core/mcp_client.py      MCPToolClient: `list_tools`, `call_tool` (step CallToolAction, or production
 *                                       `POST /mcp` with `openenv/session/create` + `session_id`), `result["data"]`
 * - src/openenv/core/env_server/mcp_types.py   ToolErrorType, CallToolObservation, JSON-RPC codes, WSMCPMessage
 * - src/openenv/core/env_server/types.py       ResetRequest (seed >= 0, episode_id <= 255), State defaults, 422 detail
 * - src/openenv/core/env_server/http_server.py routes, `POST /mcp` answering JSON-RPC errors with status 200
 * - src/openenv/core/utils.py           convert_to_ws_url keeps URL user info, so `http://u:T@host` reaches the upgrade
 * - python-websockets src/websockets/client.py: URL user info becomes `Authorization: Basic` on the handshake
 */
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { calcEnv } from "./test-env.js";

/** OpenEnv's ToolErrorType (mcp_types.py). */
const TOOL_ERROR_TYPES = ["execution_error", "invalid_args", "transport_error", "tool_not_found", "timeout"];

const servers: EnvServer[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const w of sockets.splice(0)) w.close();
  while (servers.length) await servers.pop()!.close();
});

async function start(opts: Parameters<typeof serveEnv>[1] = {}) {
  const s = await serveEnv(calcEnv(), opts);
  servers.push(s);
  return s;
}

type Reply = { status: number; body: any };
async function call(url: string, method: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  const r = await fetch(url, init);
  const text = await r.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined; // requests' .json() raising ValueError
  }
  return { status: r.status, body: parsed };
}

/** What `requests` sends for `http://user:pass@host` (it turns URL user info into Basic auth). */
const basic = (token: string) => ({ authorization: `Basic ${Buffer.from(`benchmax:${token}`).toString("base64")}` });

interface Criterion {
  id: string;
  passed: boolean;
}

/** `validate_running_environment` re-implemented: the same requests, the same pass conditions. */
async function validate(
  base: string,
  headers: Record<string, string> = {},
): Promise<{ mode: string; criteria: Criterion[] }> {
  const criteria: Criterion[] = [];
  const isObj = (v: unknown): v is Record<string, any> => !!v && typeof v === "object" && !Array.isArray(v);
  const openapi = await call(`${base}/openapi.json`, "GET", undefined, headers);
  const openapiOk =
    openapi.status === 200 &&
    isObj(openapi.body) &&
    isObj(openapi.body.info) &&
    typeof openapi.body.info.version === "string";
  criteria.push({ id: "openapi_version_available", passed: openapiOk });
  const paths: Record<string, unknown> = openapiOk && isObj(openapi.body.paths) ? openapi.body.paths : {};
  const health = await call(`${base}/health`, "GET", undefined, headers);
  criteria.push({ id: "health_endpoint", passed: health.status === 200 && health.body?.status === "healthy" });
  const meta = await call(`${base}/metadata`, "GET", undefined, headers);
  criteria.push({
    id: "metadata_endpoint",
    passed: meta.status === 200 && typeof meta.body?.name === "string" && typeof meta.body?.description === "string",
  });
  const schema = await call(`${base}/schema`, "GET", undefined, headers);
  criteria.push({
    id: "schema_endpoint",
    passed:
      schema.status === 200 &&
      isObj(schema.body?.action) &&
      isObj(schema.body?.observation) &&
      isObj(schema.body?.state),
  });
  const mcp = await call(`${base}/mcp`, "POST", {}, headers);
  criteria.push({ id: "mcp_endpoint", passed: mcp.status === 200 && isObj(mcp.body) && mcp.body.jsonrpc === "2.0" });
  let mode = "unknown";
  if (Object.keys(paths).length > 0) {
    const [hasReset, hasStep, hasState] = ["/reset", "/step", "/state"].map((p) => p in paths);
    mode = hasReset ? "simulation" : "production";
    criteria.push({
      id: "mode_endpoint_consistency",
      passed: hasReset ? !!(hasStep && hasState) : !hasStep && !hasState,
    });
  } else criteria.push({ id: "mode_endpoint_consistency", passed: false });
  return { mode, criteria };
}

/** A WebSocket session as OpenEnv's EnvClient drives it: one request, one reply. */
async function wsSession(url: string) {
  const ws = new WebSocket(url);
  sockets.push(ws);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("unexpected-response", (_q, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once("error", reject);
  });
  const waiters: Array<(m: any) => void> = [];
  ws.on("message", (d) => waiters.shift()?.(JSON.parse(d.toString())));
  return (m: unknown) =>
    new Promise<any>((resolve) => {
      waiters.push(resolve);
      ws.send(JSON.stringify(m));
    });
}

describe("openenv validate --url (its 6 criteria)", () => {
  it("passes all six on an open server, in simulation mode", async () => {
    const s = await start();
    const report = await validate(s.url);
    expect(report.criteria.filter((c) => !c.passed)).toEqual([]);
    expect(report.criteria).toHaveLength(6);
    expect(report.mode).toBe("simulation");
    const doc = (await call(`${s.url}/openapi.json`, "GET")).body;
    expect(doc.openapi).toMatch(/^3\./);
    expect(doc.info.version).toMatch(/^1\./); // standard_profile "openenv-http/1.x"
    for (const p of ["/reset", "/step", "/state", "/mcp", "/health", "/metadata", "/schema", "/v1/rollouts"]) {
      expect(doc.paths).toHaveProperty([p]);
    }
  });

  it("passes all six with a token given as the URL's password (what requests sends for http://user:T@host)", async () => {
    const s = await start({ token: "s3cret" });
    const denied = await validate(s.url);
    expect(denied.criteria.filter((c) => !c.passed).map((c) => c.id)).toContain("openapi_version_available");
    const report = await validate(s.url, basic("s3cret"));
    expect(report.criteria.filter((c) => !c.passed)).toEqual([]);
    expect((await call(`${s.url}/metadata`, "GET", undefined, basic("wrong"))).status).toBe(403);
  });
});

describe("EnvClient over /ws", () => {
  it("accepts the token as URL user info on the upgrade (websockets sends it as Basic auth)", async () => {
    const s = await start({ token: "tk" });
    const ws = s.url.replace("http://", "ws://");
    await expect(wsSession(`${ws}/ws`)).rejects.toThrow("HTTP 401");
    await expect(wsSession(ws.replace("ws://", "ws://benchmax:nope@") + "/ws")).rejects.toThrow("HTTP 403");
    const ask = await wsSession(ws.replace("ws://", "ws://benchmax:tk@") + "/ws");
    expect(await ask({ type: "state" })).toEqual({ type: "state", data: { episode_id: null, step_count: 0 } });
  });

  it("allows list_tools and state before reset; reset(seed, episode_id) picks the task by seed and uses the id", async () => {
    const s = await start();
    const ask = await wsSession(`${s.url.replace("http", "ws")}/ws`);
    // MCPClientBase._parse_state reads episode_id and step_count (default 0)
    expect(await ask({ type: "state" })).toEqual({ type: "state", data: { episode_id: null, step_count: 0 } });
    const tools = await ask({ type: "step", data: { type: "list_tools" } });
    expect(tools.type).toBe("observation");
    expect(tools.data.observation.tools.map((t: any) => t.name)).toEqual(["add", "note", "sleep", "fail"]);
    expect(tools.data.observation.tools[0]).toHaveProperty("input_schema");
    const reset = await ask({ type: "reset", data: { seed: 4, episode_id: "ep-001" } });
    expect(reset.data.observation.episode_id).toBe("ep-001");
    const st = await ask({ type: "state" });
    expect(st.data).toMatchObject({ episode_id: "ep-001", step_count: 0 });
    // the same seed picks the same task in another session; another seed another one
    const ask2 = await wsSession(`${s.url.replace("http", "ws")}/ws`);
    const again = await ask2({ type: "reset", data: { seed: 4 } });
    expect(again.data.observation.task_id).toBe(reset.data.observation.task_id);
    const other = await ask2({ type: "reset", data: { seed: 5 } });
    expect(other.data.observation.task_id).not.toBe(reset.data.observation.task_id);
    // a live episode id cannot be taken twice; a malformed one is a validation error
    const dup = await ask2({ type: "reset", data: { episode_id: "ep-001" } });
    expect(dup).toMatchObject({ type: "error", data: { code: "VALIDATION_ERROR" } });
    const badSeed = await ask2({ type: "reset", data: { seed: -1 } });
    expect(badSeed).toMatchObject({ type: "error", data: { code: "VALIDATION_ERROR" } });
  });

  it("MCPToolClient's sync example: call_tool with no reset starts the session's episode; an answer needs a reset", async () => {
    const s = await start();
    const ask = await wsSession(`${s.url.replace("http", "ws")}/ws`);
    const answer = await ask({ type: "step", data: { type: "message", content: "<answer>5</answer>" } });
    expect(answer).toMatchObject({ type: "error", data: { code: "SESSION_ERROR" } });
    const ok = await ask({ type: "step", data: { type: "call_tool", tool_name: "add", arguments: { a: 2, b: 5 } } });
    expect(ok.data.observation.result.data).toBe("7");
    const st = await ask({ type: "state" });
    expect(st.data).toMatchObject({ step_count: 1, tool_calls: 1, done: false });
    expect(typeof st.data.episode_id).toBe("string");
    // the same episode goes on: a second call counts on it
    await ask({ type: "step", data: { type: "call_tool", tool_name: "add", arguments: { a: 1, b: 1 } } });
    expect((await ask({ type: "state" })).data).toMatchObject({ episode_id: st.data.episode_id, tool_calls: 2 });
  });

  it("call_tool answers CallToolObservation: the tool's own error text in result, framework errors typed", async () => {
    const s = await start();
    const ask = await wsSession(`${s.url.replace("http", "ws")}/ws`);
    await ask({ type: "reset", data: {} });
    const ok = await ask({ type: "step", data: { type: "call_tool", tool_name: "add", arguments: { a: 2, b: 5 } } });
    // MCPToolClient.call_tool returns result["data"]
    expect(ok.data.observation).toEqual({
      tool_name: "add",
      result: {
        content: [{ type: "text", text: "7" }],
        structured_content: null,
        meta: null,
        data: "7",
        is_error: false,
      },
    });
    const own = await ask({ type: "step", data: { type: "call_tool", tool_name: "fail", arguments: {} } });
    expect(own.data.observation.error).toBeUndefined();
    expect(own.data.observation.result).toMatchObject({ is_error: true, data: "Error: it failed" });
    // a model's bad call (an unknown tool, bad arguments) is a result it reads, as on POST /mcp and /v1: no `error`,
    // which MCPToolClient raises on (bad-call-transports.test.ts holds the three wires equal)
    const unknown = await ask({ type: "step", data: { type: "call_tool", tool_name: "nope", arguments: {} } });
    const badArgs = await ask({ type: "step", data: { type: "call_tool", tool_name: "add", arguments: { a: "x" } } });
    for (const o of [unknown, badArgs]) {
      expect(o.data.observation.error).toBeUndefined();
      expect(o.data.observation.result).toMatchObject({ is_error: true, meta: null, structured_content: null });
      expect(o.data.observation.result.data).toMatch(/^Error: /);
      expect(o.data.observation.result.content).toEqual([{ type: "text", text: o.data.observation.result.data }]);
    }
    expect(unknown.data.observation.result.data).toContain('"nope"');
    // a message action's tool_results still name each failed call's ToolErrorType beside its text
    const msg = await ask({
      type: "step",
      data: { type: "message", content: '<tool_call>{"name": "nope", "arguments": {}}</tool_call>' },
    });
    expect(msg.data.observation.tool_results[0].error.error_type).toBe("tool_not_found");
    expect(TOOL_ERROR_TYPES).toContain(msg.data.observation.tool_results[0].error.error_type);
  });

  it('answers {"type": "mcp"} JSON-RPC messages on the session', async () => {
    const s = await start();
    const ask = await wsSession(`${s.url.replace("http", "ws")}/ws`);
    const list = await ask({ type: "mcp", data: { jsonrpc: "2.0", method: "tools/list", params: {}, id: 1 } });
    expect(list.type).toBe("mcp");
    expect(list.data).toMatchObject({ jsonrpc: "2.0", id: 1 });
    expect(list.data.result.tools.map((t: any) => t.name)).toContain("add");
    await ask({ type: "reset", data: { task_id: "t2" } });
    const res = await ask({
      type: "mcp",
      data: { jsonrpc: "2.0", method: "tools/call", params: { name: "note", arguments: { text: "a" } }, id: 2 },
    });
    expect(res.data.result).toMatchObject({ content: [{ type: "text", text: "a" }], isError: false, data: "a" });
    // the same session's rollout: its state moved on
    expect((await ask({ type: "state" })).data).toMatchObject({ task_id: "t2", tool_calls: 1 });
    // the model's own mistake (an unknown tool) is a result it can read, not a protocol error
    const missing = await ask({
      type: "mcp",
      data: { jsonrpc: "2.0", method: "tools/call", params: { name: "zz" }, id: 3 },
    });
    expect(missing.data.result).toMatchObject({ isError: true, content: [{ type: "text" }] });
    const unknown = await ask({ type: "mcp", data: { jsonrpc: "2.0", method: "benchmax/reward", id: 4 } });
    expect(unknown.data.error.code).toBe(-32601);
  });
});

describe("POST /mcp (MCPToolClient production mode, MCP clients)", () => {
  it("initialize, tools/list, tools/call in MCP CallToolResult shape, and OpenEnv's session methods", async () => {
    const s = await start();
    const rpc = async (method: string, params?: unknown, id: number | undefined = 1) =>
      (
        await call(`${s.url}/mcp`, "POST", {
          jsonrpc: "2.0",
          method,
          ...(params ? { params } : {}),
          ...(id !== undefined ? { id } : {}),
        })
      ).body;
    const init = await rpc("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "t", version: "1" },
    });
    expect(init.result).toMatchObject({
      protocolVersion: "2025-06-18",
      capabilities: { tools: {} },
      serverInfo: { name: "benchmax-calc" },
    });
    const note = await call(`${s.url}/mcp`, "POST", { jsonrpc: "2.0", method: "notifications/initialized" });
    expect(note.status).toBe(202);
    const tools = await rpc("tools/list");
    expect(tools.result.tools[0]).toMatchObject({ name: "add", inputSchema: { type: "object" } });
    // stateless call: a throwaway episode
    const sum = await rpc("tools/call", { name: "add", arguments: { a: 1, b: 2 } });
    expect(sum).toEqual({
      jsonrpc: "2.0",
      id: 1,
      result: { content: [{ type: "text", text: "3" }], isError: false, data: "3" },
    });
    const fail = await rpc("tools/call", { name: "fail", arguments: {} });
    expect(fail.result).toMatchObject({ isError: true, content: [{ type: "text", text: "Error: it failed" }] });
    // MCPClientBase._ensure_production_session, then calls naming session_id keep one episode
    const created = await rpc("openenv/session/create");
    const sid = created.result.session_id as string;
    expect(typeof sid).toBe("string");
    await rpc("tools/call", { name: "note", arguments: { text: "x" }, session_id: sid });
    const second = await rpc("tools/call", { name: "note", arguments: { text: "y" }, session_id: sid });
    expect(second.result.data).toBe("x,y");
    // a made-up session id (or another episode's id without its token) is refused
    const [episode] = sid.split(".");
    const forged = await rpc("tools/call", { name: "note", arguments: { text: "z" }, session_id: `${episode}.AAAA` });
    expect(forged.error.code).toBe(-32602);
    expect((await rpc("openenv/session/close", { session_id: sid })).result).toEqual({ session_id: sid, closed: true });
    expect((await rpc("tools/call", { name: "note", arguments: { text: "z" }, session_id: sid })).error.code).toBe(
      -32602,
    );
  });

  it("answers malformed requests with JSON-RPC errors and status 200, as OpenEnv's server does", async () => {
    const s = await start();
    const empty = await call(`${s.url}/mcp`, "POST", {});
    expect(empty).toMatchObject({ status: 200, body: { jsonrpc: "2.0", id: null, error: { code: -32600 } } });
    const parse = await call(`${s.url}/mcp`, "POST", "{not json");
    expect(parse).toMatchObject({ status: 200, body: { jsonrpc: "2.0", error: { code: -32700 } } });
    const method = await call(`${s.url}/mcp`, "POST", { jsonrpc: "2.0", method: "benchmax/reward", id: 9 });
    expect(method.body).toMatchObject({ id: 9, error: { code: -32601 } });
  });

  it("needs the token like every other route", async () => {
    const s = await start({ token: "T" });
    expect((await call(`${s.url}/mcp`, "POST", { jsonrpc: "2.0", method: "tools/list", id: 1 })).status).toBe(401);
    const ok = await call(
      `${s.url}/mcp`,
      "POST",
      { jsonrpc: "2.0", method: "tools/list", id: 1 },
      { authorization: "Bearer T" },
    );
    expect(ok.body.result.tools.length).toBe(4);
  });
});

describe("HTTP /reset /step /state", () => {
  it("answers validation errors as FastAPI does: 422 {detail: [{type, loc, msg, input}]}", async () => {
    const s = await start();
    const seed = await call(`${s.url}/reset`, "POST", { seed: -3 });
    expect(seed.status).toBe(422);
    expect(seed.body.detail[0]).toMatchObject({ loc: ["body", "seed"], input: -3 });
    expect(typeof seed.body.detail[0].msg).toBe("string");
    const id = await call(`${s.url}/reset`, "POST", { episode_id: "../../etc" });
    expect(id.status).toBe(422);
    expect(id.body.detail[0].loc).toEqual(["body", "episode_id"]);
    const missing = await call(`${s.url}/step`, "POST", {});
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0]).toMatchObject({ type: "missing", loc: ["body", "action"] });
    const json = await call(`${s.url}/step`, "POST", "{oops");
    expect(json.status).toBe(422);
    expect(json.body.detail[0].type).toBe("json_invalid");
  });

  it("allows state and list_tools before any reset", async () => {
    const s = await start();
    expect((await call(`${s.url}/state`, "GET")).body).toEqual({ episode_id: null, step_count: 0 });
    const tools = await call(`${s.url}/step`, "POST", { action: { type: "list_tools" } });
    expect(tools.status).toBe(200);
    expect(tools.body.observation.tools).toHaveLength(4);
  });

  it("uses reset's episode_id and seed", async () => {
    const s = await start();
    const a = await call(`${s.url}/reset`, "POST", { seed: 7, episode_id: "mine" });
    expect(a.body.observation.episode_id).toBe("mine");
    const st = await call(`${s.url}/state?episode_id=mine`, "GET", undefined, {
      "x-rollout-token": a.body.observation.rollout_token,
    });
    expect(st.body).toMatchObject({ episode_id: "mine", step_count: 0, task_id: a.body.observation.task_id });
    const b = await call(`${s.url}/reset`, "POST", { seed: 7 });
    expect(b.body.observation.task_id).toBe(a.body.observation.task_id);
    expect((await call(`${s.url}/reset`, "POST", { episode_id: "mine" })).status).toBe(409);
  });

  it("refuses a /step naming no episode while several are live, instead of acting on another client's", async () => {
    const s = await start();
    const a = (await call(`${s.url}/reset`, "POST", { task_id: "t1" })).body.observation;
    // one live episode: a bare step acts on it (the simple single-client loop)
    const one = await call(`${s.url}/step`, "POST", {
      action: { type: "call_tool", tool_name: "add", arguments: { a: 1, b: 1 } },
    });
    expect(one.status).toBe(200);
    const b = (await call(`${s.url}/reset`, "POST", { task_id: "t2" })).body.observation;
    const bare = await call(`${s.url}/step`, "POST", { action: { type: "message", content: "<answer>5</answer>" } });
    expect(bare.status).toBe(409);
    expect(bare.body.error.message).toMatch(/2 episodes are live.*episode_id/);
    expect((await call(`${s.url}/state`, "GET")).status).toBe(409);
    // naming B without B's token is refused; with it, B is scored, and A is untouched
    const noToken = await call(`${s.url}/step`, "POST", {
      episode_id: b.episode_id,
      action: { content: "<answer>17</answer>" },
    });
    expect(noToken.status).toBe(401);
    const wrong = await call(`${s.url}/step`, "POST", {
      episode_id: b.episode_id,
      rollout_token: a.rollout_token,
      action: { content: "<answer>17</answer>" },
    });
    expect(wrong.status).toBe(403);
    const right = await call(`${s.url}/step`, "POST", {
      episode_id: b.episode_id,
      rollout_token: b.rollout_token,
      action: { content: "<answer>17</answer>" },
    });
    expect(right.body).toMatchObject({ reward: 1, done: true });
    const stA = await call(`${s.url}/state?episode_id=${a.episode_id}`, "GET", undefined, {
      "x-rollout-token": a.rollout_token,
    });
    expect(stA.body).toMatchObject({ done: false, task_id: "t1" });
  });
});
