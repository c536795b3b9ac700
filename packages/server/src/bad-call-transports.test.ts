import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { calcEnv } from "./test-env.js";

/**
 * One behaviour across transports: a model's bad call (an unknown tool, arguments the tool's schema refuses) is a
 * tool error the model reads, the same text on every wire, never a protocol or framework error. OpenEnv's
 * MCPToolClient returns the text for it on `/ws` (`result.data`) as on `POST /mcp`: it raises only on a
 * CallToolObservation's `error` (src/openenv/core/mcp_client.py at 685de411, as recorded in
 * packages/cli/test/fixtures/openenv-clients.exchange.jsonl).
 */

const TOKEN = "T";
const auth = { authorization: `Bearer ${TOKEN}` };
const servers: EnvServer[] = [];
const sockets: WebSocket[] = [];
afterEach(async () => {
  for (const w of sockets.splice(0)) w.close();
  while (servers.length) await servers.pop()!.close();
});

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<any> {
  const r = await fetch(url, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  expect(r.status).toBeLessThan(300);
  return r.json();
}

async function wsSession(url: string) {
  const ws = new WebSocket(url, { headers: auth });
  sockets.push(ws);
  await new Promise((resolve, reject) => ws.once("open", resolve).once("error", reject));
  const waiters: Array<(m: any) => void> = [];
  ws.on("message", (d) => waiters.shift()?.(JSON.parse(d.toString())));
  return (m: unknown) =>
    new Promise<any>((resolve) => {
      waiters.push(resolve);
      ws.send(JSON.stringify(m));
    });
}

interface Seen {
  text: string;
  isError: boolean;
}

/** The same call on the three wires, each on its own live episode: what the model reads, and whether it errs. */
async function onEveryWire(s: EnvServer, name: string, args: Record<string, unknown>) {
  const created = await post(`${s.url}/v1/rollouts`, { taskId: "t1" });
  const v1 = await post(
    `${s.url}/v1/rollouts/${created.rolloutId}/call`,
    { name, arguments: args },
    { "x-rollout-token": created.token },
  );
  const rpc = (method: string, params: unknown, id: number) =>
    post(`${s.url}/mcp`, { jsonrpc: "2.0", method, params, id });
  const session = (await rpc("openenv/session/create", {}, 1)).result.session_id;
  const mcp = await rpc("tools/call", { name, arguments: args, session_id: session }, 2);
  const ask = await wsSession(`${s.url.replace("http", "ws")}/ws`);
  await ask({ type: "reset", data: { task_id: "t1" } });
  const ws = await ask({ type: "step", data: { type: "call_tool", tool_name: name, arguments: args } });
  // no wire answers a bad call with a protocol or framework error
  expect(mcp.error).toBeUndefined();
  expect(ws.type).toBe("observation");
  expect(ws.data.observation.error).toBeUndefined();
  const seen: Record<string, Seen> = {
    v1: { text: v1.content, isError: v1.isError },
    mcp: { text: mcp.result.data, isError: mcp.result.isError },
    ws: { text: ws.data.observation.result.data, isError: ws.data.observation.result.is_error },
  };
  expect(mcp.result.content).toEqual([{ type: "text", text: mcp.result.data }]);
  expect(ws.data.observation.result.content).toEqual([{ type: "text", text: ws.data.observation.result.data }]);
  return seen;
}

describe("a model's bad call on /v1, POST /mcp and /ws", () => {
  it.each([
    ["an unknown tool", "nope", {}, /unknown tool "nope"/],
    ["arguments the schema refuses", "add", { a: "two" }, /invalid arguments for/],
    ["a missing argument", "add", { a: 1 }, /invalid arguments for/],
  ])("%s: the same readable tool error everywhere", async (_what, name, args, text) => {
    const s = await serveEnv(calcEnv(), { token: TOKEN });
    servers.push(s);
    const seen = await onEveryWire(s, name as string, args as Record<string, unknown>);
    expect(seen.v1.isError).toBe(true);
    expect(seen.v1.text).toMatch(text);
    expect(seen.mcp).toEqual(seen.v1);
    expect(seen.ws).toEqual(seen.v1);
  });

  it("a good call and the tool's own error agree too", async () => {
    const s = await serveEnv(calcEnv(), { token: TOKEN });
    servers.push(s);
    const ok = await onEveryWire(s, "add", { a: 2, b: 3 });
    expect(ok.v1).toEqual({ text: "5", isError: false });
    expect([ok.mcp, ok.ws]).toEqual([ok.v1, ok.v1]);
    const own = await onEveryWire(s, "fail", {});
    expect(own.v1).toEqual({ text: "Error: it failed", isError: true });
    expect([own.mcp, own.ws]).toEqual([own.v1, own.v1]);
  });
});
