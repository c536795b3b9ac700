#!/usr/bin/env node
// A small stateful MCP server for tests and benchmarks: a counter, files in its cwd (the workspace), and tools that
// misbehave on purpose (crash, hang). stdio by default; `--http` serves streamable HTTP on $PORT (0 = any) at /mcp
// and prints `LISTENING <url>` on stdout.
import { randomUUID } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

let count = 0;
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
const text = (t) => ({ content: [{ type: "text", text: String(t) }] });

function build() {
  const s = new McpServer({ name: "counter", version: "1.0.0" });
  s.registerTool(
    "increment",
    { description: "Add to the counter", inputSchema: { by: z.number().int().optional() } },
    ({ by }) => {
      count += by ?? 1;
      return text(count);
    },
  );
  s.registerTool("get", { description: "Read the counter" }, () => text(count));
  s.registerTool("reset", { description: "Reset the counter" }, () => {
    count = 0;
    return text("ok");
  });
  s.registerTool("pid", { description: "The server's process id" }, () => text(process.pid));
  s.registerTool(
    "env",
    { description: "Read an environment variable", inputSchema: { name: z.string() } },
    ({ name }) => text(process.env[name] ?? ""),
  );
  s.registerTool(
    "write_file",
    { description: "Write a file in the working directory", inputSchema: { path: z.string(), content: z.string() } },
    ({ path, content }) => {
      writeFileSync(path, content);
      return text(`wrote ${content.length} bytes to ${path}`);
    },
  );
  s.registerTool("read_file", { description: "Read a file", inputSchema: { path: z.string() } }, ({ path }) =>
    text(readFileSync(path, "utf8")),
  );
  s.registerTool("image", { description: "A 1x1 PNG" }, () => ({
    content: [
      { type: "text", text: "a pixel" },
      { type: "image", data: PNG, mimeType: "image/png" },
    ],
  }));
  s.registerTool("resource", { description: "An embedded text resource" }, () => ({
    content: [{ type: "resource", resource: { uri: "file:///notes.txt", mimeType: "text/plain", text: "hello" } }],
  }));
  s.registerTool("fail", { description: "A tool error" }, () => ({
    content: [{ type: "text", text: "it failed" }],
    isError: true,
  }));
  s.registerTool("crash", { description: "Exit mid-call" }, () => process.exit(3));
  s.registerTool("hang", { description: "Never answer" }, () => new Promise(() => {}));
  return s;
}

if (process.argv.includes("--http")) {
  const sessions = new Map();
  const http = createServer(async (req, res) => {
    if (!req.url?.startsWith("/mcp")) {
      res.writeHead(404).end();
      return;
    }
    const sid = req.headers["mcp-session-id"];
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => sessions.set(id, transport),
        onsessionclosed: (id) => sessions.delete(id),
      });
      await build().connect(transport);
    }
    await transport.handleRequest(req, res);
  });
  http.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => {
    process.stdout.write(`LISTENING http://127.0.0.1:${http.address().port}/mcp\n`);
  });
} else {
  await build().connect(new StdioServerTransport());
}
