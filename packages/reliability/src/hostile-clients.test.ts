import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Env } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { replyJson } from "./http-client.js";
import { notesEnv, notesTasks } from "./notes-env.js";
import { importServers, warnSkip } from "./optional.js";

/**
 * The transport edge under hostile clients, on every server: `serveEnv` (HTTP, OpenEnv HTTP and WebSocket, POST /mcp)
 * and `serveMcpHttp` (MCP over streamable HTTP). Each attack runs while a victim client — from another source address
 * (127.0.0.2), and with a client token of its own where admission is what is attacked (a client is its token) —
 * plays whole episodes and must keep getting the right score: a session flood from one rollout token, a
 * JSON-RPC batch of 1,100 session creates, 1,000 idle sockets, a slowloris client, cross-origin pages and DNS
 * rebinding, an open non-loopback bind. Plus OpenEnv's read-back of the final state and its 422 for an unknown action.
 */

type AnyServer = { url: string; close(): Promise<void>; metrics?: { rolloutsReclaimed: number } };
type Serve = (env: Env, o?: Record<string, unknown>) => Promise<AnyServer>;

const { server, mcp, reason } = await importServers<{ serveEnv?: Serve }, { serveMcpHttp?: Serve }>();
warnSkip("hostile clients at the transport edge", reason);

const TOKEN = "operator-token-hostile";
/** The victim's own client token (`clientTokens`): admission tells clients apart by token, not by address. */
const VICTIM_TOKEN = "victim-client-token-hostile";
const VICTIM = "127.0.0.2";
const tasks = notesTasks(3);
const gold = (i: number) => tasks[i]!.groundTruth as string;

interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: any;
}

/** One request on a fresh connection, from `from` (the victim uses its own source address). */
function call(
  base: string,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
  from?: string,
): Promise<Res> {
  const u = new URL(base);
  const text = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        agent: false,
        localAddress: from,
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...(text !== undefined ? { "content-length": String(Buffer.byteLength(text)) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const t = Buffer.concat(chunks).toString("utf8");
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: t, json: replyJson(t) });
        });
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

/** The victim: a whole OpenEnv episode over HTTP on task `i`, solved; returns its reward. */
async function victimHttp(base: string, i: number, headers: Record<string, string> = {}): Promise<number> {
  const reset = await call(base, "POST", "/reset", { task_id: `note-${i}` }, headers, VICTIM);
  expect(reset.status, reset.text).toBe(200);
  const { episode_id, rollout_token } = reset.json.observation;
  const ids = { episode_id, rollout_token };
  const write = await call(
    base,
    "POST",
    "/step",
    {
      ...ids,
      action: { type: "call_tool", tool_name: "write_file", arguments: { path: "answer.txt", content: gold(i) } },
    },
    headers,
    VICTIM,
  );
  expect(write.status, write.text).toBe(200);
  const end = await call(
    base,
    "POST",
    "/step",
    { ...ids, action: { type: "message", content: "done" } },
    headers,
    VICTIM,
  );
  expect(end.status, end.text).toBe(200);
  expect(end.json.done).toBe(true);
  return end.json.reward;
}

/** The victim over OpenEnv's WebSocket. */
async function victimWs(base: string, i: number, headers: Record<string, string> = {}): Promise<number> {
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}/ws`, { localAddress: VICTIM, headers });
  const replies: any[] = [];
  const waiters: Array<(m: any) => void> = [];
  ws.on("message", (d) => {
    const m = JSON.parse(String(d));
    const w = waiters.shift();
    if (w) w(m);
    else replies.push(m);
  });
  await new Promise<void>((res, rej) => {
    ws.once("open", () => res());
    ws.once("error", rej);
  });
  const send = (m: unknown) =>
    new Promise<any>((res) => {
      waiters.push(res);
      ws.send(JSON.stringify(m));
    });
  try {
    const r = await send({ type: "reset", data: { task_id: `note-${i}` } });
    expect(r.type).toBe("observation");
    await send({
      type: "step",
      data: { type: "call_tool", tool_name: "write_file", arguments: { path: "answer.txt", content: gold(i) } },
    });
    const end = await send({ type: "step", data: { type: "message", content: "done" } });
    expect(end.data.done).toBe(true);
    // the final state reads back after done
    const state = await send({ type: "state" });
    expect(state.data.episode_id).toBe(r.data.observation.episode_id);
    expect(state.data.step_count).toBe(2);
    return end.data.reward;
  } finally {
    ws.close();
  }
}

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "h", version: "1" } },
};

/** The victim over MCP streamable HTTP: an operator session on task `i`, solved, scored on the harness channel. */
async function victimMcp(url: string, i: number, token = TOKEN): Promise<number> {
  const base = url.replace(/\/mcp$/, "");
  const op = { authorization: `Bearer ${token}` };
  const created = await call(base, "POST", "/v1/rollouts", { taskId: `note-${i}` }, op, VICTIM);
  expect(created.status, created.text).toBe(201);
  const asRollout = { authorization: `Bearer ${created.json.token}` };
  const init = await call(base, "POST", "/mcp", INIT, asRollout, VICTIM);
  expect(init.status, init.text).toBe(200);
  const sid = { "mcp-session-id": String(init.headers["mcp-session-id"]), "mcp-protocol-version": "2025-06-18" };
  const write = await call(
    base,
    "POST",
    "/mcp",
    {
      jsonrpc: "2.0",
      id: 2,
      method: "tools/call",
      params: { name: "write_file", arguments: { path: "answer.txt", content: gold(i) } },
    },
    { ...asRollout, ...sid },
    VICTIM,
  );
  expect(write.json?.result?.isError, write.text).toBe(false);
  const score = await call(
    base,
    "POST",
    `/v1/rollouts/${created.json.rolloutId}/reward`,
    { completion: "done" },
    { ...op, "x-rollout-token": created.json.token },
    VICTIM,
  );
  expect(score.status, score.text).toBe(200);
  return score.json.reward;
}

function openIdle(base: string, n: number): Promise<Socket[]> {
  const u = new URL(base);
  return Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<Socket>((res, rej) => {
          const s = connect(Number(u.port), u.hostname, () => res(s));
          s.on("error", () => {});
          s.once("error", rej);
        }),
    ),
  );
}

const closed = (s: Socket) => (s.destroyed ? Promise.resolve() : new Promise<void>((r) => s.once("close", () => r())));

describe.skipIf(!!reason)("hostile clients at the transport edge", () => {
  let env: Env;
  const serveEnv = server.mod?.serveEnv as Serve;
  const serveMcpHttp = mcp.mod?.serveMcpHttp as Serve;
  beforeAll(() => {
    env = notesEnv({ tasks });
  });
  afterAll(async () => {
    await env?.close();
  });

  it("MCP: 1,500 initializes from one rollout token keep at most 4 sessions; the victim scores", async () => {
    const s = await serveMcpHttp(env, { port: 0, token: TOKEN, tasks, maxRollouts: 64 });
    const base = s.url.replace(/\/mcp$/, "");
    try {
      const op = { authorization: `Bearer ${TOKEN}` };
      const a = (await call(base, "POST", "/v1/rollouts", { taskId: "note-0" }, op)).json;
      const asA = { authorization: `Bearer ${a.token}` };
      let ok = 0;
      for (let k = 0; k < 1500; k += 50) {
        const batch = await Promise.all(Array.from({ length: 50 }, () => call(base, "POST", "/mcp", INIT, asA)));
        ok += batch.filter((r) => r.status === 200).length;
        if (k === 750) expect(await victimMcp(s.url, 1)).toBe(1);
      }
      const health = (await call(base, "GET", "/health")).json;
      console.log(`[hostile] mcp session flood: ${ok} initializes answered, ${health.sessions} sessions live`);
      // the attacker's 4 at most, and the victim's own session
      expect(health.sessions).toBeLessThanOrEqual(5);
      expect(health.activeRollouts).toBeLessThanOrEqual(2);
      expect(await victimMcp(s.url, 2)).toBe(1);
    } finally {
      await s.close();
    }
  });

  it("MCP: operator-token sessions count against maxRollouts and a flood cannot lock the victim out", async () => {
    const s = await serveMcpHttp(env, { port: 0, token: TOKEN, clientTokens: [VICTIM_TOKEN], tasks, maxRollouts: 32 });
    const base = s.url.replace(/\/mcp$/, "");
    try {
      const op = { authorization: `Bearer ${TOKEN}` };
      const flood = await Promise.all(Array.from({ length: 200 }, () => call(base, "POST", "/mcp", INIT, op)));
      const opened = flood.filter((r) => r.status === 200).length;
      expect(opened).toBeLessThanOrEqual(32);
      expect(flood.some((r) => r.status === 503)).toBe(true);
      // the attacker's rollouts give way at once to another client (its own token) within its fair share
      expect(await victimMcp(s.url, 0, VICTIM_TOKEN)).toBe(1);
      expect(await victimMcp(s.url, 1, VICTIM_TOKEN)).toBe(1);
    } finally {
      await s.close();
    }
  });

  it("POST /mcp: a batch of 1,100 session creates is refused, and batches that fill the server don't lock others out", async () => {
    const s = await serveEnv(env, { token: TOKEN, clientTokens: [VICTIM_TOKEN], tasks, maxRollouts: 128 });
    const op = { authorization: `Bearer ${TOKEN}` };
    const create = (id: number) => ({ jsonrpc: "2.0", id, method: "openenv/session/create", params: {} });
    try {
      const big = await call(
        s.url,
        "POST",
        "/mcp",
        Array.from({ length: 1100 }, (_, i) => create(i)),
        op,
      );
      expect(big.json.error.code).toBe(-32600);
      expect(big.json.error.message).toMatch(/at most 64/);
      let sessions = 0;
      for (let k = 0; k < 1100; k += 64) {
        const r = await call(
          s.url,
          "POST",
          "/mcp",
          Array.from({ length: 64 }, (_, i) => create(k + i)),
          op,
        );
        sessions += (r.json as any[]).filter((x) => x.result?.session_id).length;
      }
      expect(sessions).toBe(128);
      // the attacker holds every slot; the victim (another client) still plays and scores, on HTTP and WebSocket
      const victim = { authorization: `Bearer ${VICTIM_TOKEN}` };
      expect(await victimHttp(s.url, 0, victim)).toBe(1);
      expect(await victimWs(s.url, 1, victim)).toBe(1);
      expect(s.metrics!.rolloutsReclaimed).toBeGreaterThanOrEqual(1);
      // the attacker, over its share, gets 503 rather than the victim's slots
      // the attacker takes back the slot the victim's finished episode freed, and no more
      expect((await call(s.url, "POST", "/mcp", create(9998), op)).json.result.session_id).toBeTruthy();
      const again = await call(s.url, "POST", "/mcp", create(9999), op);
      expect(again.json.error.message).toMatch(/capacity/);
    } finally {
      await s.close();
    }
  });

  it("1,000 idle sockets neither starve the victim nor stay open; at the connection cap idle ones give way", async () => {
    const s = await serveEnv(env, { tasks, maxConnections: 500, firstByteTimeoutMs: 300 });
    try {
      const idle = await openIdle(s.url, 1000);
      expect(await victimHttp(s.url, 0)).toBe(1);
      expect(await victimWs(s.url, 1)).toBe(1);
      // sockets that never send a byte are closed (the cap evicted some, the first-byte timeout the rest)
      await Promise.all(idle.map(closed));
      console.log("[hostile] 1,000 idle sockets: all closed by the server; the victim scored over HTTP and WS");
    } finally {
      await s.close();
    }
  });

  it("1,000 idle WebSockets (no episode) at a 500-socket cap give way to the victim's sessions", async () => {
    const s = await serveEnv(env, { tasks, maxConnections: 500 });
    try {
      const url = `${s.url.replace(/^http/, "ws")}/ws`;
      const idle: WebSocket[] = [];
      let cut = 0;
      for (let k = 0; k < 1000; k += 100) {
        const batch = Array.from({ length: 100 }, () => new WebSocket(url));
        await Promise.all(
          batch.map(
            (w) =>
              new Promise<void>((res) => {
                w.once("open", () => res());
                w.once("close", () => {
                  cut++;
                  res();
                });
                w.on("error", () => {});
              }),
          ),
        );
        idle.push(...batch);
      }
      expect(cut).toBeGreaterThanOrEqual(500);
      expect(await victimWs(s.url, 0)).toBe(1);
      expect(await victimHttp(s.url, 1)).toBe(1);
      console.log(`[hostile] 1,000 idle WebSockets at a 500 cap: ${cut} cut; the victim scored over WS and HTTP`);
      for (const w of idle) w.terminate();
    } finally {
      await s.close();
    }
  });

  it("MCP server: 1,000 idle sockets at a 500-socket cap; the victim scores", async () => {
    const s = await serveMcpHttp(env, { port: 0, token: TOKEN, tasks, maxConnections: 500, firstByteTimeoutMs: 300 });
    try {
      const idle = await openIdle(s.url, 1000);
      expect(await victimMcp(s.url, 2)).toBe(1);
      await Promise.all(idle.map(closed));
    } finally {
      await s.close();
    }
  });

  it("a slowloris client (headers a line at a time) is cut with 408 while the victim scores", async () => {
    const s = await serveEnv(env, { tasks, headersTimeoutMs: 300 });
    const u = new URL(s.url);
    try {
      const slow = connect(Number(u.port), u.hostname);
      slow.on("error", () => {});
      let answer = "";
      slow.on("data", (d) => {
        answer += String(d);
      });
      slow.write("POST /reset HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      const drip = setInterval(() => slow.writable && slow.write("X-Slow: 1\r\n"), 20);
      try {
        expect(await victimHttp(s.url, 0)).toBe(1);
        await closed(slow);
      } finally {
        clearInterval(drip);
      }
      expect(answer).toMatch(/^HTTP\/1.1 408/);
    } finally {
      await s.close();
    }
  });

  it("no token: cross-origin pages, `Origin: null` and DNS-rebinding hosts are refused on HTTP and WebSocket", async () => {
    const s = await serveEnv(env, { tasks });
    const m = await serveMcpHttp(env, { port: 0, tasks });
    const mbase = m.url.replace(/\/mcp$/, "");
    try {
      for (const origin of ["https://evil.example", "null", "http://127.0.0.1.evil.example"]) {
        const r = await call(s.url, "POST", "/reset", {}, { origin });
        expect(r.status, origin).toBe(403);
        expect(r.json.error.code).toBe("ORIGIN_REFUSED");
        expect((await call(mbase, "POST", "/mcp", INIT, { origin })).status).toBe(403);
      }
      const rebound = await call(s.url, "POST", "/reset", {}, { host: "attacker.example:8000" });
      expect(rebound.status).toBe(403);
      expect(rebound.json.error.code).toBe("HOST_REFUSED");
      expect((await call(mbase, "POST", "/mcp", INIT, { host: "attacker.example" })).status).toBe(403);
      const ws = new WebSocket(`${s.url.replace(/^http/, "ws")}/ws`, { origin: "https://evil.example" });
      const status = await new Promise<number>((res) => {
        ws.on("unexpected-response", (_req, r) => res(r.statusCode ?? 0));
        ws.on("open", () => res(101));
        ws.on("error", () => {});
      });
      expect(status).toBe(403);
      // loopback pages and non-browser clients are fine
      expect((await call(s.url, "GET", "/metadata", undefined, { origin: "http://localhost:3000" })).status).toBe(200);
      expect(await victimHttp(s.url, 0, { origin: "http://127.0.0.1:8888" })).toBe(1);
      expect(await victimWs(s.url, 1, { origin: "http://localhost:5173" })).toBe(1);
    } finally {
      await s.close();
      await m.close();
    }
  });

  it("a non-loopback bind with no token is refused unless insecure", async () => {
    await expect(serveEnv(env, { host: "0.0.0.0", tasks })).rejects.toThrow(/--insecure/);
    await expect(serveMcpHttp(env, { host: "0.0.0.0", port: 0, tasks })).rejects.toThrow(/--insecure/);
    const open = await serveEnv(env, { host: "0.0.0.0", tasks, insecure: true });
    await open.close();
    const withToken = await serveMcpHttp(env, { host: "0.0.0.0", port: 0, token: TOKEN, tasks });
    await withToken.close();
  });

  it("OpenEnv HTTP: GET /state after done reads the final state back; an unknown action type is 422 {detail}", async () => {
    const s = await serveEnv(env, { tasks });
    try {
      const reset = (await call(s.url, "POST", "/reset", { task_id: "note-0" })).json.observation;
      const ids = { episode_id: reset.episode_id, rollout_token: reset.rollout_token };
      const bad = await call(s.url, "POST", "/step", { ...ids, action: { type: "explode" } });
      expect(bad.status).toBe(422);
      expect(bad.json.detail[0].loc).toEqual(["body", "action", "type"]);
      expect(bad.json.detail[0].input).toBe("explode");
      await call(s.url, "POST", "/step", {
        ...ids,
        action: { type: "call_tool", tool_name: "write_file", arguments: { path: "answer.txt", content: gold(0) } },
      });
      const end = await call(s.url, "POST", "/step", { ...ids, action: { type: "message", content: "done" } });
      expect(end.json).toMatchObject({ done: true, reward: 1 });
      const named = await call(s.url, "GET", `/state?episode_id=${encodeURIComponent(ids.episode_id)}`, undefined, {
        "x-rollout-token": ids.rollout_token,
      });
      expect(named.json).toMatchObject({ episode_id: ids.episode_id, step_count: 2, done: true, reward: 1 });
      // OpenEnv's client asks with no id: the last finished /reset episode
      const plain = await call(s.url, "GET", "/state");
      expect(plain.json).toMatchObject({ episode_id: ids.episode_id, step_count: 2 });
      // someone else's token reads nothing
      const other = await call(s.url, "GET", `/state?episode_id=${ids.episode_id}`, undefined, {
        "x-rollout-token": "nope",
      });
      expect(other.status).toBe(403);
    } finally {
      await s.close();
    }
  });
});

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, "../../cli/bin/benchmax.js");
const noCli = existsSync(join(here, "../../cli/dist/cli.js")) ? undefined : "the CLI is not built (packages/cli/dist)";
warnSkip("serve --mcp over stdio with BENCHMAX_TOKEN", noCli);

describe.skipIf(!!noCli)("benchmax serve --mcp over stdio", () => {
  it("refuses BENCHMAX_TOKEN like --token (a token over stdio would protect nothing)", () => {
    const r = spawnSync(process.execPath, [cli, "serve", "math", "--mcp"], {
      env: { ...process.env, BENCHMAX_TOKEN: "t0k3n" },
      input: "",
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/BENCHMAX_TOKEN/);
    expect(r.stderr).toMatch(/MCP over HTTP only/);
  });
});
