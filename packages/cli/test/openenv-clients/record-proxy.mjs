#!/usr/bin/env node
// A recording proxy between OpenEnv's Python clients and `benchmax serve`: every HTTP request/response and every
// WebSocket text message, in order, one JSON line each, to the file named. The replay test
// (../openenv-clients.e2e.test.ts) sends the clients' side again to a fresh server and compares the answers.
// Usage: node record-proxy.mjs <listen-port> <upstream http://127.0.0.1:PORT> <out.jsonl>
import { appendFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";

const require = createRequire(createRequire(import.meta.url).resolve("@benchmax/server/package.json"));
const { WebSocket, WebSocketServer } = require("ws");
const [port, upstream, out] = process.argv.slice(2);
writeFileSync(out, "");
const rec = (o) => appendFileSync(out, `${JSON.stringify(o)}\n`);
const parse = (t) => {
  try {
    return JSON.parse(t);
  } catch {
    return t;
  }
};
let conns = 0;

const server = createServer(async (req, res) => {
  const chunks = [];
  for await (const c of req) chunks.push(c);
  const body = Buffer.concat(chunks).toString("utf8");
  const headers = {};
  for (const h of ["content-type", "accept", "mcp-session-id", "mcp-protocol-version"]) {
    if (req.headers[h]) headers[h] = req.headers[h];
  }
  const r = await fetch(upstream + req.url, { method: req.method, headers, body: body || undefined });
  const text = await r.text();
  rec({
    kind: "http",
    method: req.method,
    path: req.url,
    headers,
    body: body ? parse(body) : null,
    status: r.status,
    reply: parse(text),
  });
  res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "application/json" });
  res.end(text);
});
const wss = new WebSocketServer({ noServer: true });
server.on("upgrade", (req, socket, head) => {
  wss.handleUpgrade(req, socket, head, (client) => {
    const conn = ++conns;
    rec({ kind: "ws-open", conn, path: req.url });
    const up = new WebSocket(upstream.replace("http", "ws") + req.url);
    const pending = [];
    up.on("open", () => {
      for (const m of pending.splice(0)) up.send(m);
    });
    client.on("message", (d) => {
      const t = d.toString();
      rec({ kind: "ws", conn, from: "client", message: parse(t) });
      if (up.readyState === WebSocket.OPEN) up.send(t);
      else pending.push(t);
    });
    up.on("message", (d) => {
      const t = d.toString();
      rec({ kind: "ws", conn, from: "server", message: parse(t) });
      client.send(t);
    });
    client.on("close", () => {
      rec({ kind: "ws-close", conn });
      up.close();
    });
    up.on("close", () => client.close());
  });
});
server.listen(Number(port), "127.0.0.1", () => console.error(`recording ${upstream} on :${port} to ${out}`));
