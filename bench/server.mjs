#!/usr/bin/env node
// Server benchmarks (issue 8): tool-call throughput of `benchmax serve` on keep-alive loopback against a raw
// node:http echo server and a FastAPI + uvicorn no-op step server measured in the same run, and the WebSocket
// step latency. Each server runs in its own child process; one load generator drives them all the same way.
// Issue 17 adds: whole-episode throughput (reset, three tool steps, final answer, reward) over HTTP and over WebSocket
// against a FastAPI + uvicorn server running the same episodes, and POST /mcp tools/call against the node:http echo.
// A/B of two builds in one run: BENCH_ONLY=mcp (/v1 tool calls and /mcp tools/call) or BENCH_ONLY=episodes-ab (whole
// episodes over HTTP and WebSocket) with BENCH_SERVER_MODULE_B=<other build's dist/index.js>: each target and its B
// twin run back to back, and the figure is the median of the per-round server-CPU ratios, with the load average.
// Prints one JSON line on stdout (bench/README.md).
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { Agent, createServer, request } from "node:http";
import { createRequire } from "node:module";
import { connect, createServer as createNetServer } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const log = (...a) => console.error("[server]", ...a);
const self = fileURLToPath(import.meta.url);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const WARMUP_MS = Number(process.env.BENCH_WARMUP_MS ?? 2000);
const MEASURE_MS = Number(process.env.BENCH_MEASURE_MS ?? 1000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 8);
const BODY = JSON.stringify({ name: "noop", arguments: { x: 1 } });

// ---------------------------------------------------------------------------------------------- children
async function childBenchmax(kind) {
  // BENCH_SERVER_MODULE=<path>: another build of @benchmax/server (A/B of a change in one run)
  const server = process.env.BENCH_SERVER_MODULE;
  const { serveEnv } = await import(server ? pathToFileURL(server).href : "@benchmax/server");
  if (kind === "define-env") {
    // the same no-op tool written with core's defineEnv (zod validation, per-call timeout)
    const { defineEnv, tool } = await import("@benchmax/core");
    const { z } = await import("zod");
    const env = defineEnv({
      name: "noop",
      systemPrompt: "",
      tools: [
        tool({ name: "noop", description: "no-op", parameters: z.object({ x: z.number() }), execute: () => "ok" }),
      ],
      reward: () => ({ r: 1 }),
      loadTasks: async () => [{ id: "t", prompt: "x", groundTruth: null }],
    });
    const s = await serveEnv(env, { port: 0, token: "bench-token" });
    process.send?.({ port: s.port });
    return;
  }
  // a no-op Env written by hand, so the figure is the server's own cost (defineEnv's zod + timer are core's)
  const live = new Set();
  const result = { content: "ok", isError: false };
  const env = {
    name: "noop",
    systemPrompt: "",
    listTools: () => [{ name: "noop", description: "no-op", parameters: { type: "object" } }],
    init: async (id) => void live.add(id),
    runTool: async (id) => {
      if (!live.has(id)) throw new Error("unknown rollout");
      return result;
    },
    computeReward: async () => ({ r: 1 }),
    release: async (id) => void live.delete(id),
    close: async () => {},
    capabilities: {
      reward: { weights: { r: 1 } },
      tasks: { loadTasks: async () => [{ id: "t", prompt: "x", groundTruth: null }] },
    },
  };
  const s = await serveEnv(env, { port: 0, token: "bench-token" });
  process.send?.({ port: s.port });
}

function childEcho() {
  // the floor: parse the JSON body, answer a fixed JSON result, nothing else
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      JSON.parse(Buffer.concat(chunks).toString("utf8"));
      const text = JSON.stringify({ content: "ok", isError: false });
      res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    });
  });
  server.keepAliveTimeout = 65_000;
  server.listen(0, "127.0.0.1", () => process.send?.({ port: server.address().port }));
}

const FASTAPI_APP = `
import sys
from fastapi import FastAPI, Request
import uvicorn

app = FastAPI()

@app.post("/v1/rollouts/{rollout_id}/call")
async def call(rollout_id: str, request: Request):
    body = await request.json()
    return {"content": "ok", "isError": False}

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False)
`;

function findFastapiPython() {
  for (const py of ["python3", "/usr/bin/python3"]) {
    const r = spawnSync(py, ["-c", "import fastapi, uvicorn"], { encoding: "utf8" });
    if (r.status === 0) return py;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------- whole episodes
// The same episode on both servers: reset → three replies each with one Hermes <tool_call> of the no-op tool → a
// final answer without a call, scored by exact match on <answer>. benchmax runs it through its engine (core's
// Episode); the FastAPI app does the same work in the least Python it takes: the bearer check on every request, a
// per-episode rollout token checked in constant time on every /step, the same observations (the reset carries the
// Hermes system prompt, the task and the tool list; a step carries the tool results and the tool messages; the last
// step the reward components and `passed`), tool calls decoded and checked (name, arguments object), plain dicts
// (no pydantic models) and one regex per reply.
const FASTAPI_EPISODES = `
import json, re, secrets, sys
from fastapi import FastAPI, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
import uvicorn

TOKEN = sys.argv[2]
SYSTEM = json.loads(sys.argv[3])
TOOLS = [{"name": "noop", "description": "no-op", "input_schema": {"type": "object", "properties": {"x": {"type": "number"}}}}]
TOOL_NAMES = {t["name"] for t in TOOLS}
TASK = {"id": "t", "prompt": "Say ok", "gold": "ok"}
CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.S)
ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)

app = FastAPI()
episodes = {}

def authorized(header):
    return header is not None and header.startswith("Bearer ") and secrets.compare_digest(header[7:], TOKEN)

def unauthorized():
    return JSONResponse({"detail": "wrong bearer token"}, status_code=401)

def reset(data):
    eid = data.get("episode_id") or "r_" + secrets.token_urlsafe(12)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK["prompt"]}]
    token = secrets.token_urlsafe(24)
    episodes[eid] = {"messages": messages, "token": token, "steps": 0}
    observation = {"episode_id": eid, "rollout_token": token, "task_id": TASK["id"], "messages": messages, "tools": TOOLS}
    return {"observation": observation, "reward": None, "done": False}

def run_call(i, turn, raw):
    cid = "call_%d_%d" % (turn, i)
    try:
        call = json.loads(raw.strip())
    except ValueError as e:
        return cid, None, "Error: tool call is not valid JSON (%s)" % e, True
    name = call.get("name") if isinstance(call, dict) else None
    args = call.get("arguments", {}) if isinstance(call, dict) else None
    if not isinstance(name, str) or not isinstance(args, dict):
        return cid, name, "Error: a tool call is {name, arguments}", True
    if name not in TOOL_NAMES:
        return cid, name, "Error: unknown tool " + name, True
    return cid, name, "ok", False

def step(ep, eid, action):
    text = action.get("content")
    if not isinstance(text, str):
        return JSONResponse({"detail": "a message action needs content"}, status_code=422)
    ep["messages"].append({"role": "assistant", "content": text})
    turn = ep["steps"]
    ep["steps"] += 1
    calls = CALL.findall(text)
    if calls:
        results, messages = [], []
        for i, raw in enumerate(calls):
            cid, name, out, failed = run_call(i, turn, raw)
            msg = {"role": "tool", "tool_call_id": cid, "content": out, "name": name}
            ep["messages"].append(msg)
            messages.append(msg)
            result = {"tool_call_id": cid, "tool_name": name, "result": out}
            if failed:
                result["error"] = {"error_type": "execution_error", "message": out}
            results.append(result)
        return {"observation": {"tool_results": results, "messages": messages}, "reward": None, "done": False}
    m = ANSWER.findall(text)
    reward = 1.0 if m and m[-1].strip() == TASK["gold"] else 0.0
    del episodes[eid]
    return {"observation": {"rewards": {"exact_match": reward}, "passed": reward >= 1}, "reward": reward, "done": True}

@app.post("/reset")
async def http_reset(request: Request, body: dict):
    if not authorized(request.headers.get("authorization")):
        return unauthorized()
    return reset(body)

@app.post("/step")
async def http_step(request: Request, body: dict):
    if not authorized(request.headers.get("authorization")):
        return unauthorized()
    eid = body.get("episode_id")
    ep = episodes.get(eid)
    if ep is None:
        return JSONResponse({"detail": "unknown episode"}, status_code=404)
    token = body.get("rollout_token")
    if not isinstance(token, str) or not secrets.compare_digest(token, ep["token"]):
        return JSONResponse({"detail": "wrong rollout token"}, status_code=403)
    action = body.get("action")
    if not isinstance(action, dict):
        return JSONResponse({"detail": "action must be an object"}, status_code=422)
    return step(ep, eid, action)

@app.websocket("/ws")
async def ws(socket: WebSocket):
    if not authorized(socket.headers.get("authorization")):
        await socket.close(code=1008)
        return
    await socket.accept()
    eid = None
    try:
        while True:
            msg = json.loads(await socket.receive_text())
            if msg.get("type") == "reset":
                out = reset(msg.get("data") or {})
                eid = out["observation"]["episode_id"]
            else:
                ep = episodes.get(eid)
                out = step(ep, eid, msg.get("data") or {}) if ep is not None else {"error": "send reset first"}
            await socket.send_text(json.dumps({"type": "observation", "data": out}))
    except WebSocketDisconnect:
        pass

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", access_log=False, ws="wsproto")
`;

const TOOL_REPLY = '<tool_call>\n{"name": "noop", "arguments": {"x": 1}}\n</tool_call>';
// BENCH_TOOL_STEPS=<n>: tool steps per whole episode (default 3); runs with two values split the A/B gap into per-step and per-episode parts
const TOOL_STEPS = Number(process.env.BENCH_TOOL_STEPS ?? 3);
const FINAL_REPLY = "<answer>ok</answer>";

const EPISODE_TOOLS = [
  { name: "noop", description: "no-op", parameters: { type: "object", properties: { x: { type: "number" } } } },
];

async function childEpisodes() {
  // BENCH_SERVER_MODULE=<path>: another build of @benchmax/server (the episodes A/B)
  const server = process.env.BENCH_SERVER_MODULE;
  const { serveEnv } = await import(server ? pathToFileURL(server).href : "@benchmax/server");
  const live = new Set();
  const result = { content: "ok", isError: false };
  const env = {
    name: "noop",
    systemPrompt: "Call noop, then answer.",
    // one tool list, as defineEnv's listTools gives (core caches the Hermes system prompt per list)
    listTools: () => EPISODE_TOOLS,
    init: async (id) => void live.add(id),
    runTool: async (id) => {
      if (!live.has(id)) throw new Error("unknown rollout");
      return result;
    },
    computeReward: async (_id, messages) => {
      const last = messages.at(-1)?.content ?? "";
      return { exact_match: /<answer>\s*ok\s*<\/answer>/.test(last) ? 1 : 0 };
    },
    release: async (id) => void live.delete(id),
    close: async () => {},
    capabilities: {
      reward: { weights: { exact_match: 1 } },
      tasks: { loadTasks: async () => [{ id: "t", prompt: "Say ok", groundTruth: "ok" }] },
    },
  };
  // BENCH_SERVE_OPTIONS=<json>: more serveEnv options for this child (an ablation: e.g. {"initTimeoutMs": 0})
  const more = process.env.BENCH_SERVE_OPTIONS ? JSON.parse(process.env.BENCH_SERVE_OPTIONS) : {};
  const s = await serveEnv(env, { port: 0, token: "bench-token", maxRollouts: 100_000, ...more });
  process.send?.({ port: s.port });
}

/**
 * Reference servers: the same episodes as `childEpisodes` (the same bearer and rollout-token checks, answers with the
 * same fields and types) from minimal Node code with no engine: node:http and the `ws` library, as benchmax uses, on
 * one port; a WebSocket server on a bare `net` socket (handshake and framing by hand, no library) on a second; and on
 * a third, a bare socket that replays one episode's precomputed frames and does no work at all. The replay bounds
 * what any server can show against the same FastAPI run on this machine with this load generator.
 */
async function childFloor() {
  const { hermesSystemPrompt } = await import("@benchmax/core");
  const require = createRequire(fileURLToPath(import.meta.resolve("@benchmax/server")));
  const { WebSocketServer } = require("ws");
  const system = hermesSystemPrompt("Call noop, then answer.", EPISODE_TOOLS);
  const tools = EPISODE_TOOLS.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
  const bearer = Buffer.from("Bearer bench-token");
  const authorized = (h) => {
    const got = typeof h === "string" ? Buffer.from(h) : undefined;
    return got !== undefined && got.length === bearer.length && timingSafeEqual(got, bearer);
  };
  const episodes = new Map();
  const reset = () => {
    const id = `r_${randomBytes(12).toString("base64url")}`;
    const token = randomBytes(24).toString("base64url");
    const messages = [
      { role: "system", content: system },
      { role: "user", content: "Say ok" },
    ];
    episodes.set(id, { token: Buffer.from(token), messages, steps: 0 });
    return {
      observation: { episode_id: id, rollout_token: token, task_id: "t", messages, tools },
      reward: null,
      done: false,
    };
  };
  const step = (id, ep, content) => {
    ep.messages.push({ role: "assistant", content });
    const turn = ep.steps++;
    const calls = [...content.matchAll(/<tool_call>([\s\S]*?)<\/tool_call>/g)];
    if (calls.length) {
      const tool_results = [];
      const messages = [];
      calls.forEach((m, i) => {
        const call = JSON.parse(m[1]);
        if (call.name !== "noop" || typeof call.arguments !== "object") throw new Error("bad call");
        const tool_call_id = `call_${turn}_${i}`;
        const msg = { role: "tool", tool_call_id, content: "ok", name: call.name };
        ep.messages.push(msg);
        messages.push(msg);
        tool_results.push({ tool_call_id, tool_name: call.name, result: "ok" });
      });
      return { observation: { tool_results, messages }, reward: null, done: false };
    }
    const answer = /<answer>([\s\S]*?)<\/answer>/.exec(content);
    const reward = answer?.[1].trim() === "ok" ? 1 : 0;
    episodes.delete(id);
    return { observation: { rewards: { exact_match: reward }, passed: reward >= 1 }, reward, done: true };
  };
  const checked = (id, token) => {
    const ep = episodes.get(id);
    const got = typeof token === "string" ? Buffer.from(token) : undefined;
    if (!ep || got === undefined || got.length !== ep.token.length) return undefined;
    return timingSafeEqual(got, ep.token) ? ep : undefined;
  };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      let status = 200;
      let out;
      if (!authorized(req.headers.authorization)) [status, out] = [401, { detail: "wrong bearer token" }];
      else {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        if (req.url === "/reset") out = reset();
        else {
          const ep = checked(body.episode_id, body.rollout_token);
          if (!ep) [status, out] = [403, { detail: "wrong episode or rollout token" }];
          else out = step(body.episode_id, ep, body.action.content);
        }
      }
      const text = JSON.stringify(out);
      res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
      res.end(text);
    });
  });
  server.keepAliveTimeout = 65_000;
  // one episode per WebSocket session at a time, as OpenEnv's /ws
  const session = () => {
    let id;
    return (text) => {
      const msg = JSON.parse(text);
      let data;
      if (msg.type === "reset") {
        data = reset();
        id = data.observation.episode_id;
      } else data = step(id, episodes.get(id), msg.data.content);
      return JSON.stringify({ type: "observation", data });
    };
  };
  const wss = new WebSocketServer({ noServer: true });
  server.on("upgrade", (req, socket, head) => {
    if (!authorized(req.headers.authorization)) return socket.destroy();
    wss.handleUpgrade(req, socket, head, (ws) => {
      const answer = session();
      ws.on("message", (d) => ws.send(answer(d.toString())));
    });
  });
  const frameOf = (text) => {
    const out = Buffer.from(text);
    const n = out.length;
    return Buffer.concat([n < 126 ? Buffer.from([0x81, n]) : Buffer.from([0x81, 126, n >> 8, n & 255]), out]);
  };
  // a WebSocket server on a bare net socket; `open()` makes a connection's handler, which gets each client frame's
  // mask and (masked) payload and returns the frame to send back
  const rawWs = (open) =>
    createNetServer((sock) => {
      sock.setNoDelay(true);
      const reply = open();
      sock.on("error", () => {});
      readWsStream(
        sock,
        (head) => {
          const key = /\r\nsec-websocket-key: *(\S+)/i.exec(head)?.[1];
          if (!key || !authorized(/\r\nauthorization: *([^\r]*)/i.exec(head)?.[1])) return void sock.destroy();
          const accept = createHash("sha1").update(`${key}258EAFA5-E914-47DA-95CA-C5AB0DC11B65`).digest("base64");
          sock.write(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
              `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
          );
          return true;
        },
        (opcode, payload, mask) => {
          if (opcode === 8) sock.end();
          else sock.write(reply(mask, payload));
        },
      );
    });
  const raw = rawWs(() => {
    const answer = session();
    return (mask, masked) => {
      const payload = Buffer.from(masked);
      for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i & 3];
      return frameOf(answer(payload.toString("utf8")));
    };
  });
  // replay: one episode's five answers, framed once and sent in order whatever the client sends (no work at all but
  // the I/O: what the machine's loopback and Node's sockets allow)
  const first = reset();
  const { episode_id: id, rollout_token: token } = first.observation;
  const script = [
    first,
    ...[1, 2, 3].map(() => step(id, checked(id, token), TOOL_REPLY)),
    step(id, checked(id, token), FINAL_REPLY),
  ].map((data) => frameOf(JSON.stringify({ type: "observation", data })));
  const replay = rawWs(() => {
    let i = 0;
    return () => script[i++ % script.length];
  });
  await Promise.all([server, raw, replay].map((s) => new Promise((r) => s.listen(0, "127.0.0.1", r))));
  process.send?.({
    port: server.address().port,
    rawWsPort: raw.address().port,
    replayWsPort: replay.address().port,
  });
}

async function startFastapiEpisodes(py) {
  const dir = mkdtempSync(join(tmpdir(), "bmx-fastapi-ep-"));
  const file = join(dir, "episodes.py");
  writeFileSync(file, FASTAPI_EPISODES);
  const port = await freePort();
  // the same system prompt benchmax sends (core's Hermes tool section for the same tool)
  const { hermesSystemPrompt } = await import("@benchmax/core");
  const system = hermesSystemPrompt("Call noop, then answer.", EPISODE_TOOLS);
  const child = spawn(py, [file, String(port), "bench-token", JSON.stringify(system)], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  for (let i = 0; i < 100; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/reset`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer bench-token" },
        body: "{}",
      });
      if (r.ok) return { port, stop: () => stopChild(child) };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill("SIGTERM");
  throw new Error("uvicorn (episodes) did not start");
}

/** `name: value\r\n` per header. */
const headerLines = (headers) =>
  Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join("");

/** A loopback TCP socket with Nagle off, once connected. */
function connectRaw(port) {
  return new Promise((resolve, reject) => {
    const s = connect(port, "127.0.0.1", () => resolve(s));
    s.setNoDelay(true);
    s.once("error", reject);
  });
}

/**
 * Events per second of a running load: skip its first 100 ms (connections opening on the server side), then count
 * `count()`'s growth over `ms`.
 */
async function ratePerSecond(count, ms) {
  await new Promise((r) => setTimeout(r, 100));
  const c0 = count();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return (count() - c0) / ((performance.now() - t0) / 1000);
}

/**
 * A keep-alive HTTP/1.1 client on one raw socket (Content-Length framing, one request at a time), so the load
 * generator costs little CPU and the servers are what is measured.
 */
async function rawHttpClient(port, headers) {
  const sock = await connectRaw(port);
  const extra = headerLines(headers);
  let buf = Buffer.alloc(0);
  let waiting;
  sock.on("data", (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    const end = buf.indexOf("\r\n\r\n");
    if (end < 0 || !waiting) return;
    const head = buf.subarray(0, end).toString("latin1");
    const m = /content-length: *(\d+)/i.exec(head);
    const total = end + 4 + (m ? Number(m[1]) : 0);
    if (buf.length < total) return;
    const body = buf.subarray(end + 4, total).toString("utf8");
    buf = buf.subarray(total);
    const w = waiting;
    waiting = undefined;
    if (!head.startsWith("HTTP/1.1 200")) w.reject(new Error(`${head.split("\r\n")[0]} ${body}`));
    else w.resolve(JSON.parse(body));
  });
  return {
    post(path, body) {
      const text = JSON.stringify(body);
      return new Promise((resolve, reject) => {
        waiting = { resolve, reject };
        sock.write(
          `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\nContent-Type: application/json\r\n` +
            `Content-Length: ${Buffer.byteLength(text)}\r\n${extra}\r\n${text}`,
        );
      });
    },
    close: () => sock.destroy(),
  };
}

/** The key paths of a JSON value (`observation.messages[].content`, …): what two servers' answers must share. */
function shapeOf(v, path = "", out = new Set()) {
  if (Array.isArray(v)) for (const x of v) shapeOf(x, `${path}[]`, out);
  else if (v && typeof v === "object")
    for (const [k, x] of Object.entries(v)) shapeOf(x, path ? `${path}.${k}` : k, out);
  else out.add(`${path}:${v === null ? "null" : typeof v}`);
  return out;
}

/** One episode's answers (reset, a tool step, the final step) as key paths, to check both servers send the same. */
async function episodeShapes(client) {
  const reset = await client.post("/reset", {});
  const { episode_id, rollout_token } = reset.observation;
  const step = (content) => client.post("/step", { episode_id, rollout_token, action: { type: "message", content } });
  const tool = await step(TOOL_REPLY);
  for (let i = 0; i < 2; i++) await step(TOOL_REPLY);
  const fin = await step(FINAL_REPLY);
  return [reset, tool, fin].map((x) => [...shapeOf(x)].sort().join(" "));
}

/** One whole episode over HTTP: reset, three tool steps, the final answer (scored). */
async function httpEpisode(client) {
  const reset = await client.post("/reset", {});
  const { episode_id, rollout_token } = reset.observation;
  const step = (content) => client.post("/step", { episode_id, rollout_token, action: { type: "message", content } });
  for (let i = 0; i < TOOL_STEPS; i++) await step(TOOL_REPLY);
  const fin = await step(FINAL_REPLY);
  if (fin.done !== true || fin.reward !== 1) throw new Error(`episode not scored 1: ${JSON.stringify(fin)}`);
}

/**
 * Reads a raw WebSocket stream on `sock`: first the HTTP head, handed to `onHead` (true: go on to frames), then each
 * frame, handed to `onFrame(opcode, payload, mask)` (`mask` undefined when the frame is not masked; the payload as
 * sent). Enough for the load generators and minimal servers here: whole frames, no fragmentation.
 */
function readWsStream(sock, onHead, onFrame) {
  let buf = Buffer.alloc(0);
  let upgraded = false;
  sock.on("data", (chunk) => {
    buf = buf.length ? Buffer.concat([buf, chunk]) : chunk;
    if (!upgraded) {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString("latin1");
      buf = buf.subarray(end + 4);
      if (!onHead(head)) return;
      upgraded = true;
    }
    while (buf.length >= 2) {
      let len = buf[1] & 127;
      let at = 2;
      if (len === 126) {
        if (buf.length < 4) return;
        len = buf.readUInt16BE(2);
        at = 4;
      } else if (len === 127) {
        if (buf.length < 10) return;
        len = Number(buf.readBigUInt64BE(2));
        at = 10;
      }
      const mask = buf[1] & 128 ? buf.subarray(at, at + 4) : undefined;
      const start = mask ? at + 4 : at;
      if (buf.length < start + len) return;
      const opcode = buf[0] & 15;
      const payload = buf.subarray(start, start + len);
      buf = buf.subarray(start + len);
      onFrame(opcode, payload, mask);
    }
  });
}

/**
 * A WebSocket client on one raw socket, as light as `rawHttpClient`: RFC 6455 handshake, then text frames. The
 * episode's messages never change, so each is masked once per connection (a random key per connection, as a client
 * must) and sent as is; the server's frames (never masked) are cut from the stream by their length and parsed.
 */
async function rawWsClient(port, headers, messages) {
  const sock = await connectRaw(port);
  const key = randomBytes(16).toString("base64");
  const extra = headerLines(headers);
  sock.write(
    `GET /ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n${extra}\r\n`,
  );
  const mask = randomBytes(4);
  const frame = (text) => {
    const payload = Buffer.from(text);
    const n = payload.length;
    const head = n < 126 ? Buffer.from([0x81, 0x80 | n]) : Buffer.from([0x81, 0x80 | 126, n >> 8, n & 255]);
    if (n >= 65536) throw new Error("message too long for this client");
    for (let i = 0; i < n; i++) payload[i] ^= mask[i & 3];
    return Buffer.concat([head, mask, payload]);
  };
  const frames = Object.fromEntries(Object.entries(messages).map(([k, m]) => [k, frame(JSON.stringify(m))]));
  let waiting;
  let opened;
  const open = new Promise((resolve, reject) => {
    opened = { resolve, reject };
  });
  readWsStream(
    sock,
    (head) => {
      if (!head.startsWith("HTTP/1.1 101"))
        return void opened.reject(new Error(`no upgrade: ${head.split("\r\n")[0]}`));
      opened.resolve();
      return true;
    },
    (opcode, payload) => {
      if (opcode !== 1) return;
      const w = waiting;
      waiting = undefined;
      w?.(JSON.parse(payload.toString("utf8")));
    },
  );
  await open;
  return {
    ask(name) {
      return new Promise((resolve) => {
        waiting = resolve;
        sock.write(frames[name]);
      });
    },
    // a close frame (status 1000), masked, then the end of the stream: a clean WebSocket close
    close: () => {
      const code = Buffer.from([0x03, 0xe8]);
      for (let i = 0; i < 2; i++) code[i] ^= mask[i];
      sock.end(Buffer.concat([Buffer.from([0x88, 0x82]), mask, code]));
    },
  };
}

async function wsClientClass() {
  const require = createRequire(fileURLToPath(import.meta.resolve("@benchmax/server")));
  return (await import(pathToFileURL(require.resolve("ws")).href)).default;
}

/** The same episodes through the `ws` library's client (a real client library's costs on the shared cores). */
async function wsLibEpisodes(WebSocket, port, headers) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers });
  await once(ws, "open");
  const waiters = [];
  ws.on("message", (d) => waiters.shift()?.(JSON.parse(d.toString())));
  const ask = (m) =>
    new Promise((resolve) => {
      waiters.push(resolve);
      ws.send(JSON.stringify(m));
    });
  return {
    async episode() {
      await ask({ type: "reset", data: {} });
      for (let i = 0; i < 3; i++) await ask({ type: "step", data: { type: "message", content: TOOL_REPLY } });
      const fin = await ask({ type: "step", data: { type: "message", content: FINAL_REPLY } });
      if (fin.data?.done !== true || fin.data?.reward !== 1)
        throw new Error(`ws episode not scored 1: ${JSON.stringify(fin)}`);
    },
    close: () => ws.close(),
  };
}

/** A WebSocket session (raw-socket client) that runs whole episodes back to back. */
async function wsEpisodes(port, headers) {
  const c = await rawWsClient(port, headers, {
    reset: { type: "reset", data: {} },
    tool: { type: "step", data: { type: "message", content: TOOL_REPLY } },
    final: { type: "step", data: { type: "message", content: FINAL_REPLY } },
  });
  return {
    async episode() {
      const reset = await c.ask("reset");
      if (reset.type !== "observation") throw new Error(`ws reset failed: ${JSON.stringify(reset)}`);
      for (let i = 0; i < TOOL_STEPS; i++) await c.ask("tool");
      const fin = await c.ask("final");
      if (fin.data?.done !== true || fin.data?.reward !== 1)
        throw new Error(`ws episode not scored 1: ${JSON.stringify(fin)}`);
    },
    close: c.close,
  };
}

/** Whole episodes per second with `clients` concurrent clients running episodes back to back for `ms`. */
async function episodesPerSecond(makeClient, clients, ms, counted) {
  const cs = await Promise.all(Array.from({ length: clients }, makeClient));
  let count = 0;
  let stop = false;
  // BENCH_SPIN=1: the load generator busy-polls (never sleeps in epoll), so a server's replies need not wake it. Not
  // the default: it moved the FastAPI WebSocket baseline erratically; kept to reproduce that comparison.
  if (process.env.BENCH_SPIN === "1") {
    const spin = () => {
      if (!stop) setImmediate(spin);
    };
    spin();
  }
  const loops = cs.map(async (c) => {
    while (!stop) {
      await c.episode();
      count++;
    }
  });
  const rate = await ratePerSecond(() => count, ms);
  stop = true;
  await Promise.all(loops);
  for (const c of cs) c.close?.();
  if (counted) counted.n = count; // every episode, ramp included (for CPU per episode)
  return rate;
}

async function episodeBench(py, figures, round2) {
  const EP_CLIENTS = Number(process.env.BENCH_EPISODE_CLIENTS ?? 16);
  const [bmx, floor] = await Promise.all([startChild("episodes"), startChild("floor")]);
  let fast;
  try {
    fast = await startFastapiEpisodes(py);
  } catch (e) {
    await Promise.all([bmx.stop(), floor.stop()]);
    throw e;
  }
  const auth = { authorization: "Bearer bench-token" };
  const WebSocket = await wsClientClass();
  const kinds = {
    benchmaxHttp: async () => {
      const c = await rawHttpClient(bmx.port, auth);
      return { episode: () => httpEpisode(c), close: c.close };
    },
    fastapiHttp: async () => {
      const c = await rawHttpClient(fast.port, auth);
      return { episode: () => httpEpisode(c), close: c.close };
    },
    benchmaxWs: () => wsEpisodes(bmx.port, auth),
    fastapiWs: () => wsEpisodes(fast.port, auth),
    benchmaxWsLib: () => wsLibEpisodes(WebSocket, bmx.port, auth),
    fastapiWsLib: () => wsLibEpisodes(WebSocket, fast.port, auth),
    floorHttp: async () => {
      const c = await rawHttpClient(floor.port, auth);
      return { episode: () => httpEpisode(c), close: c.close };
    },
    floorWs: () => wsEpisodes(floor.port, auth),
    floorWsNet: () => wsEpisodes(floor.rawWsPort, auth),
    floorWsReplay: () => wsEpisodes(floor.replayWsPort, auth),
  };
  try {
    // the same episodes: both servers' answers have the same fields and types (values differ: ids, tokens)
    const shapes = [];
    for (const port of [bmx.port, fast.port, floor.port]) {
      const c = await rawHttpClient(port, auth);
      shapes.push(await episodeShapes(c));
      c.close();
    }
    for (const [i, what] of ["reset", "tool step", "final step"].entries()) {
      for (const [j, other] of [
        [1, "fastapi"],
        [2, "floor"],
      ]) {
        if (shapes[0][i] !== shapes[j][i])
          throw new Error(
            `the servers answer a ${what} differently:\n  benchmax ${shapes[0][i]}\n  ${other} ${shapes[j][i]}`,
          );
      }
    }
    const names = Object.keys(kinds);
    for (const k of names) {
      log(`warm-up ${k}`);
      await episodesPerSecond(kinds[k], EP_CLIENTS, Math.min(WARMUP_MS, 1500));
    }
    const eps = Object.fromEntries(names.map((k) => [k, []]));
    const rounds = Math.max(3, Math.floor(ROUNDS / 2));
    for (let round = 0; round < rounds; round++) {
      for (const k of names.map((_, i) => names[(i + round) % names.length])) {
        eps[k].push(await episodesPerSecond(kinds[k], EP_CLIENTS, MEASURE_MS));
      }
      log(`episodes round ${round + 1}: ${names.map((k) => `${k} ${eps[k][round].toFixed(0)}`).join(", ")} episodes/s`);
    }
    const ratio = (a, b) => median(eps[a].map((x, i) => x / eps[b][i]));
    for (const [id, transport, client, a, b] of [
      ["http", "HTTP", "raw-socket HTTP/1.1 keep-alive client", "benchmaxHttp", "fastapiHttp"],
      ["ws", "WebSocket", "raw-socket WebSocket client", "benchmaxWs", "fastapiWs"],
      ["ws_lib", "WebSocket", "the ws library's client", "benchmaxWsLib", "fastapiWsLib"],
    ]) {
      const r = ratio(a, b);
      figures.push({
        id: `server.episode_${id}_vs_fastapi`,
        label: `whole episodes/s over ${transport} (reset, 3 tool steps, final answer, reward; ${EP_CLIENTS} clients, ${client}) vs FastAPI + uvicorn running the same episodes`,
        value: Math.round(median(eps[a])),
        unit: "episodes/s",
        note:
          `medians of ${rounds} interleaved ${MEASURE_MS} ms rounds; both servers check the bearer and rollout tokens ` +
          "and send the same observations; the load generator shares the machine's cores with the server",
        goal: ">= 5x FastAPI + uvicorn",
        pass: r >= 5,
        baseline: {
          label: `FastAPI + uvicorn (1 worker, ${transport === "HTTP" ? "h11" : "wsproto"})`,
          value: Math.round(median(eps[b])),
        },
        ratio: round2(r),
      });
    }
    // reference points: the same episodes from minimal Node servers with no engine, against the same FastAPI run
    for (const [id, server, a, bmxKind] of [
      ["http", "a minimal node:http server", "floorHttp", "benchmaxHttp"],
      ["ws", "a minimal node:http + ws server", "floorWs", "benchmaxWs"],
      [
        "ws_net",
        "a minimal WebSocket server on a bare net socket (framing by hand, no library)",
        "floorWsNet",
        "benchmaxWs",
      ],
      [
        "ws_replay",
        "a bare net socket replaying one episode's precomputed frames in order (no parsing, no work: I/O only)",
        "floorWsReplay",
        "benchmaxWs",
      ],
    ]) {
      const transport = id === "http" ? "HTTP" : "WebSocket";
      figures.push({
        id: `server.episode_${id}_floor_vs_fastapi`,
        label: `reference: the same episodes over ${transport} from ${server}, no engine (raw-socket client, ${EP_CLIENTS} clients) vs FastAPI + uvicorn`,
        value: Math.round(median(eps[a])),
        unit: "episodes/s",
        note:
          "no goal: what Node's own I/O reaches against this baseline on this machine and load generator; " +
          `benchmax reaches ${round2(ratio(bmxKind, a))} of it`,
        baseline: {
          label: "FastAPI + uvicorn, the same episodes",
          value: Math.round(median(eps[id === "http" ? "fastapiHttp" : "fastapiWs"])),
        },
        ratio: round2(ratio(a, id === "http" ? "fastapiHttp" : "fastapiWs")),
      });
    }
  } finally {
    await Promise.all([bmx.stop(), fast.stop(), floor.stop()]);
  }
}

/**
 * BENCH_ONLY=episodes-ab: whole episodes over HTTP and over WebSocket (raw-socket clients) on this build and on
 * BENCH_SERVER_MODULE_B's, in alternating rounds (A and B back to back, which goes first alternating): episodes/s and
 * each server child's CPU per episode, with the median of the per-round CPU ratios (nearly the same moment, so nearly
 * the same outside load).
 */
async function episodeAB(figures, round2) {
  const moduleB = process.env.BENCH_SERVER_MODULE_B;
  if (!moduleB) throw new Error("BENCH_ONLY=episodes-ab needs BENCH_SERVER_MODULE_B=<path of the other build>");
  const EP_CLIENTS = Number(process.env.BENCH_EPISODE_CLIENTS ?? 16);
  // BENCH_EP_KINDS=http: measure only that transport (a CPU profile of one path)
  const KINDS = (process.env.BENCH_EP_KINDS ?? "http,ws").split(",");
  const load0 = loadavg()[0];
  const [a, b] = await Promise.all([
    startChild("episodes"),
    startChild("episodes", { ...process.env, BENCH_SERVER_MODULE: moduleB }),
  ]);
  const auth = { authorization: "Bearer bench-token" };
  const http = (port) => async () => {
    const c = await rawHttpClient(port, auth);
    return { episode: () => httpEpisode(c), close: c.close };
  };
  const targets = {
    http: { child: a, make: http(a.port) },
    httpB: { child: b, make: http(b.port) },
    ws: { child: a, make: () => wsEpisodes(a.port, auth) },
    wsB: { child: b, make: () => wsEpisodes(b.port, auth) },
  };
  try {
    // the two builds' answers: the same fields and types, or the difference is reported beside the figures
    const shapes = [];
    for (const port of [a.port, b.port]) {
      const c = await rawHttpClient(port, auth);
      shapes.push(await episodeShapes(c));
      c.close();
    }
    const differ = ["reset", "tool step", "final step"]
      .map((what, i) => (shapes[0][i] === shapes[1][i] ? "" : `${what}: A ${shapes[0][i]} | B ${shapes[1][i]}`))
      .filter(Boolean);
    const names = Object.keys(targets).filter((k) => KINDS.includes(k.replace(/B$/, "")));
    for (const k of names) await episodesPerSecond(targets[k].make, EP_CLIENTS, WARMUP_MS);
    const eps = Object.fromEntries(names.map((k) => [k, []]));
    const cpu = Object.fromEntries(names.map((k) => [k, []]));
    const gc = {};
    for (let round = 0; round < ROUNDS; round++) {
      // each kind's A and B back to back (the closest moments, so the closest outside load), A first every other round
      const order = KINDS.flatMap((k) => (round % 2 ? [`${k}B`, k] : [k, `${k}B`]));
      for (const k of order) {
        const t = targets[k];
        const counted = { n: 0 };
        const c0 = await t.child.cpu();
        const g0 = t.child.gc();
        eps[k].push(await episodesPerSecond(t.make, EP_CLIENTS, MEASURE_MS, counted));
        cpu[k].push(((await t.child.cpu()) - c0) / counted.n);
        (gc[k] ??= []).push(((t.child.gc() - g0) * 1000) / counted.n);
        t.total = (t.total ?? 0) + counted.n;
      }
      log(`episodes A/B round ${round + 1}: ${names.map((k) => `${k} ${cpu[k][round].toFixed(0)} µs`).join(", ")}`);
    }
    log(`episodes counted: ${names.map((k) => `${k} ${targets[k].total}`).join(", ")}`);
    for (const k of KINDS) {
      const ratios = cpu[k].map((x, i) => x / cpu[`${k}B`][i]);
      figures.push({
        id: `server.episode_ab.${k}`,
        label: `whole episodes over ${k === "http" ? "HTTP" : "WebSocket"}: this build vs BENCH_SERVER_MODULE_B (${EP_CLIENTS} clients)`,
        value: Math.round(median(eps[k])),
        valueB: Math.round(median(eps[`${k}B`])),
        unit: "episodes/s",
        server_cpu_us_per_episode: round2(median(cpu[k])),
        server_cpu_us_per_episode_B: round2(median(cpu[`${k}B`])),
        // GC pauses per episode (µs), part of the CPU above
        gc_us_per_episode: round2(median(gc[k])),
        gc_us_per_episode_B: round2(median(gc[`${k}B`])),
        server_cpu_ratio_to_B: Math.round(median(ratios) * 1000) / 1000,
        server_cpu_ratios_to_B: ratios.map((x) => Math.round(x * 1000) / 1000),
        rps_ratio_to_B: round2(median(eps[k].map((x, i) => x / eps[`${k}B`][i]))),
        load: [round2(load0), round2(loadavg()[0])],
        ...(differ.length ? { answers_differ: differ } : {}),
      });
    }
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

// ---------------------------------------------------------------------------------------------- driver
/** SIGTERM, and SIGKILL if it has not exited 5 s later (uvicorn's graceful shutdown can wait on a connection). */
function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = once(child, "exit");
  child.kill("SIGTERM");
  const force = setTimeout(() => child.kill("SIGKILL"), 5000);
  return exited.finally(() => clearTimeout(force));
}

function startChild(kind, env = process.env) {
  // BENCH_CPU_PROF=<dir>: each server child writes a V8 CPU profile there when it stops
  const prof = process.env.BENCH_CPU_PROF ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  // BENCH_CHILD_FLAGS="--trace-gc-nvp …": more node/V8 flags for each server child (a diagnostic run)
  const flags = (process.env.BENCH_CHILD_FLAGS ?? "").split(" ").filter(Boolean);
  const child = spawn(process.execPath, [...prof, ...flags, self, `--child=${kind}`], {
    stdio: ["ignore", "inherit", "inherit", "ipc"],
    env,
  });
  // cpu(): the child's own process.cpuUsage() (user + system µs), asked over IPC
  let gcMs = 0;
  const cpu = () =>
    new Promise((resolve) => {
      child.once("message", (m) => {
        gcMs = m.gcMs;
        resolve(m.cpu.user + m.cpu.system);
      });
      child.send({ cpu: true });
    });
  // gc(): GC pause ms so far, as of the last cpu() answer
  const gc = () => gcMs;
  return once(child, "message").then(([m]) => ({ ...m, cpu, gc, stop: () => stopChild(child) }));
}

async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

async function startFastapi(py) {
  const dir = mkdtempSync(join(tmpdir(), "bmx-fastapi-"));
  const file = join(dir, "app.py");
  writeFileSync(file, FASTAPI_APP);
  const port = await freePort();
  const child = spawn(py, [file, String(port)], { stdio: ["ignore", "ignore", "inherit"] });
  for (let i = 0; i < 100; i++) {
    try {
      await post({ port, path: "/v1/rollouts/x/call", headers: {} }, new Agent({ keepAlive: false }));
      return { port, stop: () => stopChild(child) };
    } catch {
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  child.kill("SIGTERM");
  throw new Error("uvicorn did not start");
}

function post(target, agent) {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: target.port,
        path: target.path,
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(BODY), ...target.headers },
      },
      (res) => {
        res.on("data", () => {});
        res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on("error", reject);
    req.end(BODY);
  });
}

/**
 * Requests per second with CONCURRENCY keep-alive connections, each sending back to back, for `ms`. A raw-socket
 * HTTP/1.1 client (pre-encoded request, Content-Length framing) so the load generator costs little CPU and the
 * servers, not the client, are what is measured.
 */
async function throughput(target, ms = MEASURE_MS) {
  const head =
    `POST ${target.path} HTTP/1.1\r\nHost: 127.0.0.1:${target.port}\r\nConnection: keep-alive\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(target.body ?? BODY)}\r\n` +
    headerLines(target.headers) +
    "\r\n";
  const req = Buffer.from(head + (target.body ?? BODY));
  let count = 0;
  let failures = 0;
  let stop = false;
  const conns = await Promise.all(Array.from({ length: CONCURRENCY }, () => connectRaw(target.port)));
  const done = conns.map(
    (sock) =>
      new Promise((resolve) => {
        let buf = "";
        sock.on("data", (chunk) => {
          buf += chunk.toString("latin1");
          for (;;) {
            const end = buf.indexOf("\r\n\r\n");
            if (end < 0) return;
            const m = /content-length: *(\d+)/i.exec(buf.slice(0, end));
            const total = end + 4 + (m ? Number(m[1]) : 0);
            if (buf.length < total) return;
            if (!buf.startsWith("HTTP/1.1 200")) failures++;
            buf = buf.slice(total);
            count++;
            if (stop) {
              sock.end();
              resolve();
              return;
            }
            sock.write(req);
          }
        });
        sock.on("close", resolve);
        sock.write(req);
      }),
  );
  const rate = await ratePerSecond(() => count, ms);
  stop = true;
  await Promise.all(done);
  if (failures) throw new Error(`${failures} requests to ${target.path} did not answer 200`);
  if (target.counted) target.counted.n = count; // every answer, ramp included (for CPU per call)
  return rate;
}

const median = (xs) => {
  const v = [...xs].sort((a, b) => a - b);
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};

async function createRollout(port) {
  const r = await fetch(`http://127.0.0.1:${port}/v1/rollouts`, {
    method: "POST",
    headers: { authorization: "Bearer bench-token", "content-type": "application/json" },
    body: "{}",
  });
  return r.json();
}

async function wsLatency(port, n = 3000) {
  // ws is @benchmax/server's dependency: resolve it from there
  const require = createRequire(fileURLToPath(import.meta.resolve("@benchmax/server")));
  const { default: WebSocket } = await import(pathToFileURL(require.resolve("ws")).href);
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers: { authorization: "Bearer bench-token" } });
  await once(ws, "open");
  const ask = (m) =>
    new Promise((resolve) => {
      ws.once("message", (d) => resolve(JSON.parse(d.toString())));
      ws.send(JSON.stringify(m));
    });
  await ask({ type: "reset", data: {} });
  const step = { type: "step", data: { type: "call_tool", tool_name: "noop", arguments: { x: 1 } } };
  for (let i = 0; i < 300; i++) await ask(step);
  const times = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const m = await ask(step);
    times.push(performance.now() - t0);
    if (m.type !== "observation") throw new Error(`ws step failed: ${JSON.stringify(m)}`);
  }
  ws.close();
  times.sort((a, b) => a - b);
  return { p50: times[Math.floor(n * 0.5)], p99: times[Math.floor(n * 0.99)] };
}

/**
 * BENCH_ONLY=mcp: just `POST /mcp tools/call` and `/v1` tool calls against the echo floor, in interleaved rounds,
 * with the server child's CPU per answered call (user + system µs from its own process.cpuUsage(): less sensitive to
 * other load on the machine than requests/s).
 */
async function mcpBench(figures, round2) {
  log(`mcp only: concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${MEASURE_MS} ms each`);
  const load0 = loadavg()[0];
  const bmx = await startChild("benchmax");
  const echo = await startChild("echo");
  let other;
  try {
    const r = await createRollout(bmx.port);
    const targets = {
      echo: { port: echo.port, path: `/v1/rollouts/${r.rolloutId}/call`, headers: callHeaders(r), child: echo },
      benchmax: {
        port: bmx.port,
        path: `/v1/rollouts/${r.rolloutId}/call`,
        headers: callHeaders(r),
        child: bmx,
      },
      mcp: { ...(await mcpTarget(bmx.port)), child: bmx },
    };
    // BENCH_SERVER_MODULE_B=<path>: a second server child from another build, measured in the same rounds (mcpB, benchmaxB)
    if (process.env.BENCH_SERVER_MODULE_B) {
      other = await startChild("benchmax", { ...process.env, BENCH_SERVER_MODULE: process.env.BENCH_SERVER_MODULE_B });
      targets.mcpB = { ...(await mcpTarget(other.port)), child: other };
      const rB = await createRollout(other.port);
      targets.benchmaxB = {
        port: other.port,
        path: `/v1/rollouts/${rB.rolloutId}/call`,
        headers: callHeaders(rB),
        child: other,
      };
    }
    // BENCH_TARGETS=echo,mcp: measure only those (a CPU profile of one path)
    const only = process.env.BENCH_TARGETS?.split(",");
    const names = Object.keys(targets).filter((k) => !only || only.includes(k));
    for (const name of names) await throughput(targets[name], WARMUP_MS);
    const rps = Object.fromEntries(names.map((k) => [k, []]));
    const cpu = Object.fromEntries(names.map((k) => [k, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // with a B build, each target and its B twin run back to back (the closest moments), which goes first alternating
      const rotated = names.map((_, i) => names[(i + round) % names.length]);
      const order = other
        ? rotated
            .filter((k) => !k.endsWith("B"))
            .flatMap((k) => (names.includes(`${k}B`) ? (round % 2 ? [`${k}B`, k] : [k, `${k}B`]) : [k]))
        : rotated;
      for (const name of order) {
        const t = targets[name];
        t.counted = { n: 0 };
        const c0 = await t.child.cpu();
        rps[name].push(await throughput(t));
        cpu[name].push(((await t.child.cpu()) - c0) / t.counted.n);
      }
      log(`round ${round + 1}: ${names.map((k) => `${k} ${rps[k][round].toFixed(0)}`).join(", ")} req/s`);
    }
    const ratio = (a) => (rps.echo ? median(rps[a].map((x, i) => x / rps.echo[i])) : undefined);
    for (const name of names) {
      figures.push({
        id: `server.only_mcp.${name}`,
        value: Math.round(median(rps[name])),
        unit: "req/s",
        ratio: rps.echo ? round2(ratio(name)) : undefined,
        server_cpu_us_per_call: round2(median(cpu[name])),
        // a build against its B twin: the median over rounds of that round's CPU-per-call ratio (same moment, same load)
        server_cpu_ratio_to_B:
          cpu[`${name}B`] && cpu[name].length === cpu[`${name}B`].length
            ? Math.round(median(cpu[name].map((x, i) => x / cpu[`${name}B`][i])) * 1000) / 1000
            : undefined,
        // every round's ratio, to see the spread
        server_cpu_ratios_to_B: cpu[`${name}B`]?.map((x, i) => Math.round((cpu[name][i] / x) * 1000) / 1000),
        // the 1-minute load average at the start and at the end (2 cores shared with other work)
        load: [round2(load0), round2(loadavg()[0])],
      });
    }
  } finally {
    await Promise.all([bmx.stop(), echo.stop(), other?.stop()]);
  }
}

/** The headers a `/v1` tool call carries (bearer and rollout token): sent to the echo floor too, which ignores them. */
function callHeaders(r) {
  return { authorization: "Bearer bench-token", "x-rollout-token": r.token };
}

/** The tool-call figures' floor, as their baselines name it. */
const ECHO_FLOOR = "raw node:http JSON echo server, sent the same request (path, bearer and rollout-token headers)";

/** POST /mcp tools/call on one OpenEnv MCP session (session_id = episode id + rollout token). */
async function mcpTarget(port) {
  const mcpSession = await (
    await fetch(`http://127.0.0.1:${port}/mcp`, {
      method: "POST",
      headers: { authorization: "Bearer bench-token", "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "openenv/session/create" }),
    })
  ).json();
  return {
    port,
    path: "/mcp",
    headers: { authorization: "Bearer bench-token" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "noop", arguments: { x: 1 }, session_id: mcpSession.result.session_id },
    }),
  };
}

async function main() {
  const figures = [];
  const round2 = (x) => Math.round(x * 100) / 100;
  if (process.env.BENCH_ONLY === "mcp") {
    await mcpBench(figures, round2);
    process.stdout.write(`${JSON.stringify({ area: "server", figures })}\n`);
    return;
  }
  if (process.env.BENCH_ONLY === "episodes-ab") {
    await episodeAB(figures, round2);
    process.stdout.write(`${JSON.stringify({ area: "server", figures })}\n`);
    return;
  }
  if (process.env.BENCH_ONLY === "episodes") {
    // just the whole-episode comparison (for profiling it)
    const py = findFastapiPython();
    if (!py) throw new Error('python3 -c "import fastapi, uvicorn" fails');
    await episodeBench(py, figures, round2);
    process.stdout.write(`${JSON.stringify({ area: "server", figures })}\n`);
    return;
  }
  log(`concurrency ${CONCURRENCY}, ${ROUNDS} rounds of ${MEASURE_MS} ms each (after ${WARMUP_MS} ms warm-up)`);
  const bmx = await startChild("benchmax");
  const echo = await startChild("echo");
  const defined = await startChild("define-env");
  const py = findFastapiPython();
  let fastapi;
  let fastapiSkip;
  if (py) {
    try {
      fastapi = await startFastapi(py);
    } catch (e) {
      fastapiSkip = `FastAPI server failed to start: ${e.message}`;
    }
  } else fastapiSkip = 'python3 -c "import fastapi, uvicorn" fails (install python3-fastapi python3-uvicorn)';
  if (fastapiSkip) log(`skipping the FastAPI comparison: ${fastapiSkip}`);
  try {
    const r = await createRollout(bmx.port);
    const r2 = await createRollout(defined.port);
    const targets = {
      benchmax: {
        port: bmx.port,
        path: `/v1/rollouts/${r.rolloutId}/call`,
        headers: callHeaders(r),
      },
      // the floor gets the very request benchmax gets (its path, bearer and rollout-token headers): it ignores
      // them, but parsing them is I/O work every server does, not benchmax's overhead
      echo: { port: echo.port, path: `/v1/rollouts/${r.rolloutId}/call`, headers: callHeaders(r) },
      defineEnv: {
        port: defined.port,
        path: `/v1/rollouts/${r2.rolloutId}/call`,
        headers: callHeaders(r2),
      },
    };
    if (fastapi) targets.fastapi = { port: fastapi.port, path: `/v1/rollouts/x/call`, headers: {} };
    targets.mcp = await mcpTarget(bmx.port);
    // the machine is shared: warm every server up, then measure them in short interleaved rounds and compare
    // each server with the echo baseline measured in the same round (median of the per-round ratios)
    for (const [name, t] of Object.entries(targets)) {
      log(`warm-up ${name}`);
      await throughput(t, WARMUP_MS);
    }
    const rps = Object.fromEntries(Object.keys(targets).map((k) => [k, []]));
    const names = Object.keys(targets);
    for (let round = 0; round < ROUNDS; round++) {
      const order = names.map((_, i) => names[(i + round) % names.length]);
      for (const name of order) rps[name].push(await throughput(targets[name]));
      log(`round ${round + 1}: ${names.map((k) => `${k} ${rps[k][round].toFixed(0)}`).join(", ")} req/s`);
    }
    const ratios = (a, b) => rps[a].map((x, i) => x / rps[b][i]);
    const best = Object.fromEntries(names.map((k) => [k, median(rps[k])]));
    const ratio = median(ratios("benchmax", "echo"));
    figures.push({
      id: "server.tool_call_rps",
      label: `tool calls/s through benchmax serve (keep-alive loopback, ${CONCURRENCY} connections, bearer + rollout token, no-op env)`,
      value: Math.round(best.benchmax),
      unit: "req/s",
      note: `medians of ${ROUNDS} interleaved ${MEASURE_MS} ms rounds; ratio = median of per-round ratios`,
      goal: ">= 0.6x raw node:http echo",
      pass: ratio >= 0.6,
      baseline: { label: ECHO_FLOOR, value: Math.round(best.echo) },
      ratio: round2(ratio),
    });
    figures.push({
      id: "server.tool_call_rps_define_env",
      label: "the same, with the no-op tool written with core's defineEnv (zod validation + per-call timeout)",
      value: Math.round(best.defineEnv),
      unit: "req/s",
      baseline: { label: ECHO_FLOOR, value: Math.round(best.echo) },
      ratio: round2(median(ratios("defineEnv", "echo"))),
    });
    const rm = median(ratios("mcp", "echo"));
    figures.push({
      id: "server.mcp_tools_call_rps",
      label: "POST /mcp tools/call (JSON-RPC, one OpenEnv MCP session) through benchmax serve",
      value: Math.round(best.mcp),
      unit: "req/s",
      goal: ">= 0.5x raw node:http echo",
      pass: rm >= 0.5,
      baseline: { label: ECHO_FLOOR, value: Math.round(best.echo) },
      ratio: round2(rm),
    });
    if (fastapi) {
      const rf = median(ratios("benchmax", "fastapi"));
      figures.push({
        id: "server.vs_fastapi",
        label: "tool calls/s through benchmax serve vs a FastAPI + uvicorn no-op step server",
        value: Math.round(best.benchmax),
        unit: "req/s",
        goal: ">= 3x FastAPI + uvicorn",
        pass: rf >= 3,
        baseline: { label: "FastAPI + uvicorn (1 worker) no-op step", value: Math.round(best.fastapi) },
        ratio: round2(rf),
      });
    } else {
      figures[0].note += `; FastAPI comparison skipped: ${fastapiSkip}`;
    }
    // without FastAPI the comparison is skipped, and figures[0]'s note says why (a figure must carry a value)
    if (py) {
      try {
        await episodeBench(py, figures, round2);
      } catch (e) {
        log(`whole-episode comparison failed: ${e.message}`);
        throw e;
      }
    }
    const ws = await wsLatency(bmx.port);
    log(`ws step p50 ${ws.p50.toFixed(3)} ms, p99 ${ws.p99.toFixed(3)} ms`);
    figures.push({
      id: "server.ws_step_p50_ms",
      label: "WebSocket /ws step latency p50 (call_tool no-op, sequential)",
      value: Math.round(ws.p50 * 1000) / 1000,
      unit: "ms",
      note: `p99 ${ws.p99.toFixed(3)} ms`,
    });
  } finally {
    await Promise.all([bmx.stop(), echo.stop(), defined.stop(), fastapi?.stop()]);
  }
  process.stdout.write(`${JSON.stringify({ area: "server", figures })}\n`);
}

const child = process.argv.find((a) => a.startsWith("--child="))?.slice(8);
if (child) {
  // GC pauses (ms, summed) beside the CPU: a build that allocates or retains more pays it here
  let gcMs = 0;
  new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcMs += e.duration;
  }).observe({ entryTypes: ["gc"] });
  process.on("message", (m) => m?.cpu && process.send({ cpu: process.cpuUsage(), gcMs }));
  // exit (not die) on SIGTERM, so a child run with --cpu-prof writes its profile
  process.on("SIGTERM", () => process.exit(0));
}
if (child === "benchmax" || child === "define-env") await childBenchmax(child);
else if (child === "episodes") await childEpisodes();
else if (child === "floor") await childFloor();
else if (child === "echo") childEcho();
else await main();
