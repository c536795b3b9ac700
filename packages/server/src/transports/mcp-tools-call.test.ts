import { defineEnv, type Env, InfraError, type Task, ToolError, type ToolResult, tool } from "@benchmax/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { RolloutService, type RolloutServiceOptions, type ServedRollout } from "../service/index.js";
import { addTool, noteTool } from "../test-env.js";
import { McpExchange } from "./mcp-exchange.js";
import { McpJsonRpc, sessionIdOf } from "./mcp-json-rpc.js";
import { isPlainToolsCall } from "./mcp-tools-call.js";

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const c of closers.splice(0).reverse()) await c();
});

/** Tools with every kind of result and failure a call can have. */
function toolsEnv(): Env {
  const tasks: Task<string>[] = [{ id: "t1", prompt: "Use the tools.", groundTruth: "ok" }];
  return defineEnv<Task<string>, { notes: string[] }>({
    name: "calls",
    systemPrompt: "Call tools.",
    tools: [
      addTool,
      noteTool,
      tool({
        name: "pictures",
        description: "Text, an inline image and a linked one",
        parameters: z.object({}),
        execute: () => [
          { type: "text", text: "two pictures" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "image_url", image_url: { url: "https://example.org/p.png" } },
        ],
      }),
      tool({
        name: "structured",
        description: "A result with structured content",
        parameters: z.object({}),
        execute: (): ToolResult => ({
          content: '{"rows":2}',
          isError: false,
          metadata: { structuredContent: { rows: 2 } },
        }),
      }),
      tool({
        name: "refuse",
        description: "A tool error the model reads",
        parameters: z.object({}),
        execute: () => {
          throw new ToolError("not allowed");
        },
      }),
      tool({
        name: "crash",
        description: "The env's own failure",
        parameters: z.object({}),
        execute: () => {
          throw new Error("database is gone");
        },
      }),
      tool({
        name: "unreachable",
        description: "An infrastructure failure",
        parameters: z.object({}),
        execute: () => {
          throw new InfraError("sandbox unreachable");
        },
      }),
      tool({
        name: "hang",
        description: "Runs past the tool time limit",
        parameters: z.object({}),
        execute: () => new Promise<string>(() => {}),
      }),
    ],
    initState: () => ({ notes: [] }),
    reward: () => ({ ok: 1 }),
    loadTasks: async () => tasks,
  });
}

/** One step of a script: a `tools/call`'s params (`$SID` is the path's session id), or an action on its service. */
type Step = Record<string, unknown> | ((s: { service: RolloutService; session: ServedRollout }) => Promise<unknown>);

/**
 * Run the same script on two fresh services, one answering plain calls directly and one through the SDK `Server`
 * only, and give back both transcripts (each answer as its JSON text, with the path's own session and rollout ids
 * written as `$SID` and `$ID`).
 */
async function transcripts(steps: Step[], options: RolloutServiceOptions = {}): Promise<[string[], string[]]> {
  const out: string[][] = [];
  for (const sdkOnly of [false, true]) {
    const service = new RolloutService(toolsEnv(), { toolTimeoutMs: 50, ...options });
    const rpc = new McpJsonRpc(service, { sdkOnly });
    closers.push(
      () => service.close(),
      () => rpc.close(),
    );
    const created = (await rpc.handle({ jsonrpc: "2.0", id: 0, method: "openenv/session/create" })) as {
      result: { session_id: string };
    };
    const sid = created.result.session_id;
    const session = rpc.rolloutOfSession(sid);
    expect(sessionIdOf(session)).toBe(sid);
    const lines: string[] = [];
    let id = 1;
    for (const step of steps) {
      if (typeof step === "function") {
        await step({ service, session });
        continue;
      }
      const params = JSON.parse(JSON.stringify(step).replaceAll("$SID", sid));
      // alternate number and string ids: both come back as sent
      const reqId = id % 2 ? id : `r${id}`;
      id++;
      const answer = await rpc.handle({ jsonrpc: "2.0", id: reqId, method: "tools/call", params }, { client: "c" });
      lines.push(JSON.stringify(answer).replaceAll(sid, "$SID").replaceAll(session.id, "$ID"));
    }
    out.push(lines);
  }
  return out as [string[], string[]];
}

describe("a plain tools/call answered directly reads byte for byte as the MCP SDK Server's answer", () => {
  it("results: text, images, structured content, tool errors, unknown tools and bad arguments", async () => {
    const [direct, sdk] = await transcripts([
      { name: "add", arguments: { a: 1, b: 2 } }, // a throwaway rollout
      { name: "add", arguments: { a: 2, b: 2 }, session_id: "$SID" },
      { name: "note", arguments: { text: "x" }, session_id: "$SID" },
      { name: "note", arguments: { text: "y" }, session_id: "$SID", extra: [1] }, // params are loose
      { name: "pictures", session_id: "$SID" }, // no arguments
      { name: "structured", arguments: {}, session_id: "$SID" },
      { name: "refuse", arguments: {}, session_id: "$SID" },
      { name: "nope", arguments: {}, session_id: "$SID" },
      { name: "", arguments: {}, session_id: "$SID" },
      { name: "add", arguments: { a: "x" }, session_id: "$SID" },
      { name: "add", session_id: "$SID" },
      { name: "note", arguments: { text: "z" }, session_id: "$SID" },
      // a model's `__proto__` key is an own property of the parsed arguments on both paths, never a prototype
      { name: "note", arguments: JSON.parse('{"text": "p", "__proto__": {"text": "q"}}'), session_id: "$SID" },
    ]);
    expect(direct).toEqual(sdk);
    expect(direct[3]).toBe(
      '{"result":{"content":[{"type":"text","text":"x,y"}],"isError":false,"data":"x,y"},"jsonrpc":"2.0","id":"r4"}',
    );
    expect(direct[4]).toContain('{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}');
    expect(direct[5]).toContain('"structuredContent":{"rows":2}');
    for (const i of [6, 7, 8, 9, 10]) expect(JSON.parse(direct[i]!).result.isError).toBe(true);
    expect(JSON.parse(direct[11]!).result.data).toBe("x,y,z");
    expect(JSON.parse(direct[12]!).result.data).toBe("x,y,z,p"); // the key is dropped by the tool's own parse
  });

  it("errors: forged, malformed and unknown session ids, a scored rollout, a released one", async () => {
    const [direct, sdk] = await transcripts([
      { name: "add", arguments: { a: 1, b: 1 }, session_id: "$SID-x" },
      { name: "add", arguments: { a: 1, b: 1 }, session_id: "nodot" },
      { name: "add", arguments: { a: 1, b: 1 }, session_id: "zzz.AAAA" },
      ({ service, session }) => service.score(session, { completion: "ok" }),
      { name: "add", arguments: { a: 1, b: 1 }, session_id: "$SID" },
      ({ service, session }) => service.release(session),
      { name: "add", arguments: { a: 1, b: 1 }, session_id: "$SID" },
    ]);
    expect(direct).toEqual(sdk);
    expect(direct.map((line) => JSON.parse(line).error?.code)).toEqual([-32602, -32602, -32602, -32000, -32602]);
  });

  it("errors: the env's failure, the infrastructure's, a call past the tool time limit, and the call after each", async () => {
    for (const failing of ["crash", "unreachable", "hang"]) {
      const [direct, sdk] = await transcripts([
        { name: failing, arguments: {}, session_id: "$SID" },
        { name: "add", arguments: { a: 1, b: 1 }, session_id: "$SID" },
      ]);
      expect(direct).toEqual(sdk);
      const [first, after] = direct.map((line) => JSON.parse(line).error);
      // not the model's tool result: a JSON-RPC error, and the rollout is done
      expect(first.code).toBe(failing === "unreachable" ? -32000 : -32603);
      expect(after.message).toMatch(/is done/);
    }
  });

  it("capacity: a throwaway call with no room left is the same error on both paths", async () => {
    const [direct, sdk] = await transcripts([{ name: "add", arguments: { a: 1, b: 1 } }], { maxRollouts: 1 });
    expect(direct).toEqual(sdk);
    expect(JSON.parse(direct[0]!).error.message).toMatch(/capacity|rollouts/i);
  });

  it("only plain calls skip the SDK Server: _meta, task, malformed params and other methods go through it", async () => {
    const plain = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "add", arguments: { a: 1, b: 1 } } };
    expect(isPlainToolsCall(plain)).toBe(true);
    expect(isPlainToolsCall({ ...plain, id: "a" })).toBe(true);
    const notPlain: unknown[] = [
      null,
      [plain],
      { ...plain, jsonrpc: "1.0" },
      { ...plain, method: "tools/list" },
      { ...plain, id: undefined }, // a notification
      { ...plain, id: 1.5 },
      { ...plain, id: null },
      { ...plain, params: undefined },
      { ...plain, params: [] },
      { ...plain, params: { arguments: {} } },
      { ...plain, params: { name: 7 } },
      { ...plain, params: { name: "add", arguments: "x" } },
      { ...plain, params: { name: "add", arguments: [1] } },
      { ...plain, params: { name: "add", arguments: null } },
      { ...plain, params: { name: "add", _meta: { progressToken: 1 } } },
      { ...plain, params: { name: "add", task: { ttl: 1000 } } },
    ];
    for (const m of notPlain) expect(isPlainToolsCall(m)).toBe(false);

    // the SDK Server sees exactly the messages that are not plain calls
    const seen = vi.spyOn(McpExchange.prototype, "handle");
    const service = new RolloutService(toolsEnv());
    const rpc = new McpJsonRpc(service);
    closers.push(
      () => service.close(),
      () => rpc.close(),
    );
    const malformed = { ...plain, id: 2, params: { name: 7 } };
    const withMeta = {
      ...plain,
      id: 3,
      params: { name: "add", arguments: { a: 1, b: 2 }, _meta: { progressToken: 9 } },
    };
    const answers = (await rpc.handleBody([plain, malformed, withMeta], { client: "c" })) as Array<{
      id: number;
      result?: { data: string };
      error?: { code: number };
    }>;
    expect(seen.mock.calls.map(([m]) => (m as { id: number }).id)).toEqual([2, 3]);
    expect(answers.map((a) => [a.id, a.result?.data ?? a.error?.code])).toEqual([
      [1, "2"],
      [2, -32602],
      [3, "3"],
    ]);
  });
});
