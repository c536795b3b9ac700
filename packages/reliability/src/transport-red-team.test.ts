import { PassThrough } from "node:stream";
import { type Env, type Policy, runRollout } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { replyJson } from "./http-client.js";
import { notesEnv, notesTasks } from "./notes-env.js";
import { importServers, warnSkip } from "./optional.js";

/**
 * The reward channel, attacked from the model's side on every transport: in-process, HTTP (the rollout API),
 * WebSocket (/ws), OpenEnv's POST /mcp, MCP over stdio and MCP over streamable HTTP. A model-side client holds what a
 * policy (or code it runs) could get hold of — the tools, its own rollout's capability at most — never the operator's
 * token. It tries to read the gold, pick its task, score more than once, and act on another rollout. Every attempt is
 * refused, and each refusal is printed as `[red-team] <transport>: <attempt> → refused (<how>)`.
 */

type AnyServer = { url: string; close(): Promise<void> };
type ServeEnv = (env: Env, o?: Record<string, unknown>) => Promise<AnyServer>;
type ServeMcpHttp = (env: Env, o: Record<string, unknown>) => Promise<AnyServer>;
type StdioHandle = {
  close(): Promise<void>;
  score(i: { completion?: string }): Promise<{ reward: number }>;
  rollout(): { id: string; taskId?: string };
};
type ServeMcpStdio = (env: Env, o: Record<string, unknown>) => Promise<StdioHandle>;

const { server, mcp, reason } = await importServers<
  { serveEnv?: ServeEnv },
  { serveMcpHttp?: ServeMcpHttp; serveMcpStdio?: ServeMcpStdio }
>();
warnSkip("reward channel red team across transports", reason);

const TOKEN = "operator-token-red-team";
const GOLD = /GOLD-\d+-\d+/;
const tasks = notesTasks(3);
/** What a model tries to call to get a score or a new task. */
const HARNESS_TOOL_NAMES = ["benchmax_reward", "benchmax_start", "reset", "reward", "score", "set_task"];

function refused(transport: string, attempt: string, how: string): void {
  console.log(`[red-team] ${transport}: ${attempt} → refused (${how})`);
}

async function http(url: string, method: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method,
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, json: replyJson(text) };
}

describe.skipIf(!!reason)("reward channel sealed on every transport", () => {
  let env: Env;
  beforeAll(() => {
    env = notesEnv({ tasks });
  });
  afterAll(async () => {
    await env?.close();
  });

  it("in-process: the model's replies cannot score, pick a task, or reach the gold", async () => {
    const task = tasks[1]!;
    const seen: string[] = [];
    let turn = 0;
    const policy: Policy = {
      name: "red-team",
      async act(input) {
        // what reaches the model: the conversation and the tool specs (input.task is the harness's, for scripts)
        seen.push(JSON.stringify([input.messages, input.tools]));
        turn++;
        if (turn === 1) {
          const calls = HARNESS_TOOL_NAMES.map(
            (name, i) =>
              `<tool_call>${JSON.stringify({ name, arguments: { answer: "x", task_id: "note-0", id: i } })}</tool_call>`,
          );
          return { message: { role: "assistant", content: calls.join("\n") } };
        }
        if (turn === 2) {
          return {
            message: {
              role: "assistant",
              content: `<tool_call>${JSON.stringify({ name: "read_file", arguments: { path: "../../../answer.txt" } })}</tool_call>`,
            },
          };
        }
        return { message: { role: "assistant", content: "GOLD-1-7919" } };
      },
    };
    const r = await runRollout(env, task, policy, { maxTurns: 5 });
    expect(r.taskId).toBe("note-1");
    const toolMessages = r.messages.filter((m) => m.role === "tool");
    for (const m of toolMessages.slice(0, HARNESS_TOOL_NAMES.length)) expect(String(m.content)).toMatch(/unknown tool/);
    refused("in-process", `tools ${HARNESS_TOOL_NAMES.join(", ")}`, "unknown tool errors");
    expect(seen.join("\n")).not.toMatch(GOLD);
    refused("in-process", "read the gold through prompts, tool specs and outputs", "never present");
    // the reward reads the rollout's answer file, not a claim in the reply
    expect(r.reward).toBe(0);
    refused("in-process", "claim the answer in the final text", "reward 0: the env scores its own state");
  });

  it("HTTP rollout API: no token, no tasks, no scores; one score per rollout; no cross-rollout calls", async () => {
    const s = await server.mod!.serveEnv!(env, { token: TOKEN, tasks });
    try {
      const op = { authorization: `Bearer ${TOKEN}` };
      const a = (await http(`${s.url}/v1/rollouts`, "POST", { taskId: "note-0" }, op)).json;
      const b = (await http(`${s.url}/v1/rollouts`, "POST", { taskId: "note-1" }, op)).json;
      const mine = { "x-rollout-token": a.token };
      // the model side has its rollout's token, not the operator's
      expect((await http(`${s.url}/v1/tasks`, "GET", undefined, mine)).status).toBe(401);
      refused("http", "GET /v1/tasks", "401");
      expect((await http(`${s.url}/v1/rollouts`, "POST", { taskId: "note-2" }, mine)).status).toBe(401);
      refused("http", "pick a task: POST /v1/rollouts {taskId}", "401");
      expect((await http(`${s.url}/v1/rollouts/${a.rolloutId}/reward`, "POST", { completion: "x" }, mine)).status).toBe(
        401,
      );
      refused("http", "score: POST /v1/rollouts/:id/reward with its rollout token", "401");
      const forged = await http(
        `${s.url}/v1/rollouts`,
        "POST",
        { task: { id: "x", prompt: "p", groundTruth: "/etc/passwd", init: { file: "/etc/shadow" } } },
        op,
      );
      expect(forged.status).toBe(403);
      refused("http", "a client task naming host files", `403 ${forged.json.error.code}`);
      // even with the operator's token: one score per rollout, and B needs B's token
      const call = await http(
        `${s.url}/v1/rollouts/${a.rolloutId}/call`,
        "POST",
        { name: "list_files", arguments: {} },
        { ...op, ...mine },
      );
      expect(JSON.stringify(call.json)).not.toMatch(GOLD);
      expect(
        (
          await http(
            `${s.url}/v1/rollouts/${b.rolloutId}/call`,
            "POST",
            { name: "list_files", arguments: {} },
            { ...op, ...mine },
          )
        ).status,
      ).toBe(403);
      refused("http", "act on another rollout with its own token", "403");
      expect(
        (await http(`${s.url}/v1/rollouts/${a.rolloutId}/reward`, "POST", { completion: "x" }, { ...op, ...mine }))
          .status,
      ).toBe(200);
      const twice = await http(
        `${s.url}/v1/rollouts/${a.rolloutId}/reward`,
        "POST",
        { completion: "y" },
        { ...op, ...mine },
      );
      expect(twice.status).toBe(409);
      refused("http", "score the same rollout twice", "409 ALREADY_SCORED");
    } finally {
      await s.close();
    }
  });

  it("WebSocket /ws: no session without the token; a session cannot score twice or name a harness tool", async () => {
    const s = await server.mod!.serveEnv!(env, { token: TOKEN, tasks });
    try {
      const ws = s.url.replace("http://", "ws://");
      const status = await new Promise<number>((resolve) => {
        const c = new WebSocket(`${ws}/ws`);
        c.on("unexpected-response", (_q, res) => resolve(res.statusCode ?? 0));
        c.on("open", () => resolve(101));
      });
      expect(status).toBe(401);
      refused("ws", "open a session without the token", "401 on the upgrade");
      const c = new WebSocket(`${ws}/ws`, { headers: { authorization: `Bearer ${TOKEN}` } });
      await new Promise((r) => c.once("open", r));
      const waiters: Array<(m: any) => void> = [];
      c.on("message", (d) => waiters.shift()?.(JSON.parse(d.toString())));
      const ask = (m: unknown) =>
        new Promise<any>((r) => {
          waiters.push(r);
          c.send(JSON.stringify(m));
        });
      const reset = await ask({ type: "reset", data: { task_id: "note-2" } });
      expect(JSON.stringify(reset)).not.toMatch(GOLD);
      const harnessCalls = HARNESS_TOOL_NAMES.map(
        (name) => `<tool_call>${JSON.stringify({ name, arguments: {} })}</tool_call>`,
      ).join("");
      const step = await ask({ type: "step", data: { type: "message", content: harnessCalls } });
      for (const t of step.data.observation.tool_results) expect(t.error.error_type).toBe("tool_not_found");
      refused("ws", `tools ${HARNESS_TOOL_NAMES.join(", ")}`, "tool_not_found");
      const mcpReward = await ask({
        type: "mcp",
        data: { jsonrpc: "2.0", id: 1, method: "benchmax/reward", params: {} },
      });
      expect(mcpReward.data.error.code).toBe(-32601);
      refused("ws", "a JSON-RPC reward method", "-32601 method not found");
      const fin = await ask({ type: "step", data: { type: "message", content: "done" } });
      expect(fin.data.done).toBe(true);
      const again = await ask({ type: "step", data: { type: "message", content: "done again" } });
      expect(again.type).toBe("error");
      refused("ws", "score the episode twice", `error ${again.data.code}`);
      c.close();
    } finally {
      await s.close();
    }
  });

  it("OpenEnv POST /mcp: no token, no forged sessions, no scoring or task methods", async () => {
    const s = await server.mod!.serveEnv!(env, { token: TOKEN, tasks });
    try {
      const rpc = (body: unknown, headers: Record<string, string> = { authorization: `Bearer ${TOKEN}` }) =>
        http(`${s.url}/mcp`, "POST", body, headers);
      expect((await rpc({ jsonrpc: "2.0", id: 1, method: "tools/list" }, {})).status).toBe(401);
      refused("openenv /mcp", "tools/list without the token", "401");
      const list = await rpc({ jsonrpc: "2.0", id: 1, method: "tools/list" });
      const names = list.json.result.tools.map((t: { name: string }) => t.name);
      for (const n of HARNESS_TOOL_NAMES) expect(names).not.toContain(n);
      for (const method of ["benchmax/reward", "openenv/reward", "tasks/set"]) {
        expect((await rpc({ jsonrpc: "2.0", id: 2, method })).json.error.code).toBe(-32601);
      }
      refused("openenv /mcp", "reward and task methods", "-32601");
      const created = (
        await rpc({ jsonrpc: "2.0", id: 3, method: "openenv/session/create", params: { task_id: "note-0" } })
      ).json.result;
      const other = (await rpc({ jsonrpc: "2.0", id: 4, method: "openenv/session/create" })).json.result;
      const [episode] = String(other.session_id).split(".");
      const forged = await rpc({
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: {
          name: "list_files",
          arguments: {},
          session_id: `${episode}.${String(created.session_id).split(".")[1]}`,
        },
      });
      expect(forged.json.error.code).toBe(-32602);
      refused("openenv /mcp", "act on another session with its own token", "-32602");
      const call = await rpc({
        jsonrpc: "2.0",
        id: 6,
        method: "tools/call",
        params: { name: "benchmax_reward", arguments: { answer: "x" }, session_id: created.session_id },
      });
      // a tool the env does not have is the model's own mistake: a result it reads (isError), never a score
      expect(call.json.result).toMatchObject({ isError: true });
      expect(call.json.result.content[0].text).toMatch(/unknown tool/);
      refused("openenv /mcp", "tools/call benchmax_reward", "isError: unknown tool");
    } finally {
      await s.close();
    }
  });

  it("MCP stdio: the model's client sees only the env's tools; scoring is the harness's, once", async () => {
    const stdin = new PassThrough();
    const stdout = new PassThrough();
    const handle = await mcp.mod!.serveMcpStdio!(env, { stdin, stdout, tasks, taskId: "note-0" });
    const replies: any[] = [];
    let buf = "";
    stdout.on("data", (c: Buffer) => {
      buf += c.toString();
      let nl = buf.indexOf("\n");
      while (nl >= 0) {
        replies.push(JSON.parse(buf.slice(0, nl)));
        buf = buf.slice(nl + 1);
        nl = buf.indexOf("\n");
      }
    });
    let id = 0;
    const ask = async (method: string, params: unknown = {}) => {
      const n = ++id;
      stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id: n, method, params })}\n`);
      await expect.poll(() => replies.some((r) => r.id === n)).toBe(true);
      return replies.find((r) => r.id === n);
    };
    try {
      await ask("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "model", version: "1" },
      });
      stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`);
      const names = (await ask("tools/list")).result.tools.map((t: { name: string }) => t.name);
      expect(names).toEqual(["write_file", "read_file", "list_files"]);
      for (const name of HARNESS_TOOL_NAMES) {
        const r = await ask("tools/call", { name, arguments: { answer: "x", task_id: "note-2" } });
        expect(r.result?.isError ?? !!r.error).toBe(true);
      }
      refused("mcp stdio", `tools ${HARNESS_TOOL_NAMES.join(", ")}`, "unknown tool");
      const resource = await ask("resources/read", { uri: "benchmax://rollout/task" });
      expect(JSON.stringify(resource)).not.toMatch(GOLD);
      refused("mcp stdio", "read the gold through the task resource", "not in it");
      expect(handle.rollout().taskId).toBe("note-0");
      refused("mcp stdio", "pick its task", "still note-0");
      await handle.score({ completion: "x" });
      await expect(handle.score({ completion: "y" })).rejects.toThrow(/already scored/);
      refused("mcp stdio", "score twice (through the harness's handle)", "already scored");
    } finally {
      await handle.close();
    }
  });

  it("MCP over HTTP: token required; a rollout token reaches its own session only and never the harness channel", async () => {
    const s = await mcp.mod!.serveMcpHttp!(env, { port: 0, token: TOKEN, tasks });
    const base = s.url.replace(/\/mcp$/, "");
    const op = { authorization: `Bearer ${TOKEN}` };
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "m", version: "1" } },
    };
    try {
      expect((await http(s.url, "POST", init)).status).toBe(401);
      refused("mcp http", "initialize without a token", "401");
      const a = (await http(`${base}/v1/rollouts`, "POST", { taskId: "note-0" }, op)).json;
      const b = (await http(`${base}/v1/rollouts`, "POST", { taskId: "note-1" }, op)).json;
      const asA = { authorization: `Bearer ${a.token}` };
      expect((await http(`${base}/v1/rollouts`, "POST", { taskId: "note-2" }, asA)).status).toBe(403);
      refused("mcp http", "pick a task with a rollout token", "403");
      expect(
        (
          await http(
            `${base}/v1/rollouts/${a.rolloutId}/reward`,
            "POST",
            { completion: "x" },
            { ...asA, "x-rollout-token": a.token },
          )
        ).status,
      ).toBe(403);
      refused("mcp http", "score with a rollout token", "403");
      const sa = await http(s.url, "POST", init, asA);
      const sb = await http(s.url, "POST", init, { authorization: `Bearer ${b.token}` });
      const session = (r: typeof sa) => ({
        "mcp-session-id": r.headers.get("mcp-session-id")!,
        "mcp-protocol-version": "2025-06-18",
      });
      const tools = await http(
        s.url,
        "POST",
        { jsonrpc: "2.0", id: 2, method: "tools/list" },
        { ...asA, ...session(sa) },
      );
      const names = tools.json.result.tools.map((t: { name: string }) => t.name);
      for (const n of HARNESS_TOOL_NAMES) expect(names).not.toContain(n);
      const rewardTool = await http(
        s.url,
        "POST",
        {
          jsonrpc: "2.0",
          id: 3,
          method: "tools/call",
          params: { name: "benchmax_reward", arguments: { answer: "x" } },
        },
        { ...asA, ...session(sa) },
      );
      expect(rewardTool.json.result.isError).toBe(true);
      refused("mcp http", "tools/call benchmax_reward", "unknown tool");
      const cross = await http(
        s.url,
        "POST",
        { jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "list_files", arguments: {} } },
        { ...asA, ...session(sb) },
      );
      expect(cross.status).toBe(403);
      refused("mcp http", "use another rollout's MCP session", "403");
      const read = await http(
        s.url,
        "POST",
        { jsonrpc: "2.0", id: 5, method: "resources/read", params: { uri: "benchmax://rollout/task" } },
        { ...asA, ...session(sa) },
      );
      expect(read.text).not.toMatch(GOLD);
      const score = (x: string) =>
        http(
          `${base}/v1/rollouts/${a.rolloutId}/reward`,
          "POST",
          { completion: x },
          { ...op, "x-rollout-token": a.token },
        );
      expect((await score("x")).status).toBe(200);
      expect((await score("y")).status).toBe(409);
      refused("mcp http", "score the same rollout twice", "409");
    } finally {
      await s.close();
    }
  });
});
