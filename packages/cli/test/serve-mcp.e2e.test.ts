import type { ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { cliArgv, root, spawnCli } from "./harness.js";

/**
 * `benchmax serve <env> --mcp` (stdio, and streamable HTTP with --port) and `benchmax serve <env>`'s `/mcp`, driven
 * by the MCP SDK's own Client: list the tools, call one, read the task resource; the harness scores a victim session
 * on its own channel while another session on the same server misbehaves.
 */

// the SDK is @benchmax/mcp's dependency: load the client from there
const fromMcp = createRequire(createRequire(import.meta.url).resolve("@benchmax/mcp/package.json"));
const load = (p: string) => import(pathToFileURL(fromMcp.resolve(`@modelcontextprotocol/sdk/${p}`)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");

const TASK = "benchmax://rollout/task";
const text = (r: { content: { text: string }[] }) => r.content[0]!.text;
const children: ChildProcess[] = [];
const clients: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => {});
  for (const c of children.splice(0)) c.kill("SIGTERM");
});

/** The CLI's environment without BENCHMAX_TOKEN (stdio refuses it). */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "BENCHMAX_TOKEN") env[k] = v;
  return env;
}

/** An SDK client session; `rollout`: the rollout `initialize`'s answer named (a session the operator opened). */
async function connectHttp(url: string, headers: Record<string, string>) {
  const client = new Client({ name: "e2e", version: "1" });
  const rollout: { id?: string; token?: string } = {};
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers },
    fetch: async (input: string | URL, init?: RequestInit) => {
      const res = await fetch(input, init);
      rollout.id ??= res.headers.get("x-benchmax-rollout-id") ?? undefined;
      rollout.token ??= res.headers.get("x-benchmax-rollout-token") ?? undefined;
      return res;
    },
  });
  await client.connect(transport);
  clients.push(client);
  return Object.assign(client, { rollout });
}

/** Start the CLI and wait for the line naming its URL. */
async function serve(args: string[], pattern: RegExp): Promise<string> {
  const child = spawnCli(args, { env: cleanEnv() });
  children.push(child);
  let out = "";
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL from benchmax ${args.join(" ")}: ${out}`)), 90_000);
    child.stdout!.on("data", (d) => {
      out += d;
      const m = pattern.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.stderr!.on("data", (d) => {
      out += d;
    });
    child.once("exit", (code) => reject(new Error(`benchmax exited ${code}: ${out}`)));
  });
}

/**
 * The victim's episode, as a model would run it: read the task, work it out with the calculator, answer. The harness
 * picks an arithmetic task (the calculator solves it) and scores the answer on its channel.
 */
async function victimSolves(client: any): Promise<string> {
  const task = JSON.parse((await client.readResource({ uri: TASK })).contents[0].text);
  expect(JSON.stringify(task)).not.toMatch(/groundTruth/);
  const r = await client.callTool({ name: "calculator", arguments: { expression: task.prompt } });
  expect(r.isError).toBe(false);
  return `<answer>${text(r)}</answer>`;
}

describe("benchmax serve --mcp, driven by the MCP SDK's Client", () => {
  it("over stdio: the env's tools, a tool call, the task resource; the session ends with the client", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: cliArgv(["serve", "math", "--mcp"]),
      cwd: root,
      env: cleanEnv(),
      stderr: "pipe",
    });
    const client = new Client({ name: "e2e", version: "1" });
    await client.connect(transport);
    clients.push(client);
    const { tools } = await client.listTools();
    expect(tools.map((t: { name: string }) => t.name)).toEqual(["calculator"]);
    expect(text(await client.callTool({ name: "calculator", arguments: { expression: "6 * 7" } }))).toBe("42");
    const bad = await client.callTool({ name: "calculator", arguments: { expression: "1 / 0" } });
    expect(bad.isError).toBe(true);
    expect((await client.callTool({ name: "benchmax_reward", arguments: {} })).isError).toBe(true);
    const task = JSON.parse((await client.readResource({ uri: TASK })).contents[0].text);
    expect(typeof task.prompt).toBe("string");
    expect((await client.listPrompts()).prompts).toEqual([]);
    await client.close();
  });

  it("over streamable HTTP: rollout tokens reach their own session; the harness scores the victim correctly", async () => {
    const url = await serve(
      ["serve", "math", "--mcp", "--port", "0", "--token", "op-token"],
      /as MCP at (http:\/\/\S+\/mcp)/,
    );
    const base = url.replace(/\/mcp$/, "");
    const harness = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
      const res = await fetch(base + path, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: "Bearer op-token", ...headers },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    // an arithmetic task for the victim
    let v: any;
    for (let i = 0; i < 30 && !v; i++) {
      const r = (await harness("/v1/rollouts", {})).body;
      if (/^arith-/.test(r.taskId)) v = r;
      else await harness(`/v1/rollouts/${r.rolloutId}/release`, {}, { "x-rollout-token": r.token });
    }
    expect(v).toBeDefined();
    const victim = await connectHttp(url, { authorization: `Bearer ${v.token}` });
    // another session, on its own rollout, floods calls and tries the harness's channel with its token
    const other = (await harness("/v1/rollouts", {})).body;
    const attacker = await connectHttp(url, { authorization: `Bearer ${other.token}` });
    const flood = Promise.all(
      Array.from({ length: 20 }, () => attacker.callTool({ name: "calculator", arguments: { expression: "2^10" } })),
    );
    const answer = await victimSolves(victim);
    await flood;
    const stolen = await harness(
      `/v1/rollouts/${v.rolloutId}/reward`,
      { completion: "<answer>0</answer>" },
      { authorization: `Bearer ${other.token}`, "x-rollout-token": other.token },
    );
    expect(stolen.status).toBe(403);
    const score = await harness(
      `/v1/rollouts/${v.rolloutId}/reward`,
      { completion: answer },
      { "x-rollout-token": v.token },
    );
    expect(score.status).toBe(200);
    expect(score.body).toMatchObject({ reward: 1, passed: true });
  });
});

describe("benchmax serve's /mcp, driven by the MCP SDK's Client over streamable HTTP", () => {
  it("lists and calls tools, reads the task resource; the session's rollout is scored on /v1, once", async () => {
    const base = await serve(["serve", "math", "--port", "0", "--token", "op-token"], /serving math at (http:\/\/\S+)/);
    const op = { authorization: "Bearer op-token" };
    const attacker = await connectHttp(`${base}/mcp`, op);
    expect((await attacker.callTool({ name: "nope", arguments: {} })).isError).toBe(true);
    const flood = Promise.all(
      Array.from({ length: 20 }, () => attacker.callTool({ name: "calculator", arguments: { expression: "9 % 4" } })),
    );
    // sessions take the next task in turn: the victim is the first on an arithmetic one
    let victim: Awaited<ReturnType<typeof connectHttp>> | undefined;
    let answer: string | undefined;
    for (let i = 0; i < 30 && !answer; i++) {
      victim = await connectHttp(`${base}/mcp`, op);
      expect((await victim.listTools()).tools.map((t: { name: string }) => t.name)).toEqual(["calculator"]);
      const task = JSON.parse((await victim.readResource({ uri: TASK })).contents[0].text);
      if (/^arith-/.test(task.id)) answer = await victimSolves(victim);
    }
    await flood;
    expect(answer).toBeDefined();
    const { id, token } = victim!.rollout;
    expect(id && token).toBeTruthy();
    const reward = (completion: string) =>
      fetch(`${base}/v1/rollouts/${id}/reward`, {
        method: "POST",
        headers: { ...op, "content-type": "application/json", "x-rollout-token": token! },
        body: JSON.stringify({ completion }),
      });
    const score = await reward(answer!);
    expect(score.status).toBe(200);
    expect(await score.json()).toMatchObject({ reward: 1 });
    expect((await reward("<answer>0</answer>")).status).toBe(409);
  });
});
