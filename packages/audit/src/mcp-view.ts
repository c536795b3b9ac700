import { randomUUID } from "node:crypto";
import {
  type Env,
  type EnvCapabilities,
  EnvError,
  errorMessage,
  InfraError,
  type Message,
  type RewardComponents,
  type Task,
  type ToolCallRequest,
  type ToolResult,
  type ToolSpec,
} from "@benchmax/core";
import { type HarnessRollout, McpHarnessClient, mcpResultToToolResult, serveMcp } from "@benchmax/mcp";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { modelInput, type Surface, servedView, type TransportView } from "./transport-view.js";

/** An MCP client session on one rollout, opened with that rollout's own token (what an agent's MCP client gets). */
async function connect(url: string, bearer: string): Promise<Client> {
  const client = new Client({ name: "benchmax-audit", version: "0.1.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      requestInit: { headers: { authorization: `Bearer ${bearer}` } },
    }),
  );
  return client;
}

/** End the session on the server too (DELETE), then close the client. */
async function closeClient(client: Client): Promise<void> {
  const t = client.transport;
  if (t instanceof StreamableHTTPClientTransport) await t.terminateSession().catch(() => {});
  await client.close().catch(() => {});
}

/** The MCP tool list as the OpenAI function shape the episode engine offers the model. */
function toSpecs(tools: Awaited<ReturnType<Client["listTools"]>>["tools"]): ToolSpec[] {
  return tools.map((t) => ({
    name: t.name,
    description: t.description ?? "",
    parameters: t.inputSchema as ToolSpec["parameters"],
  }));
}

interface Session {
  rollout: HarnessRollout;
  client: Client;
}

/**
 * An Env driven over MCP only: the harness channel of `serveMcp` (operator token) makes, scores and releases each
 * rollout; the rollout's MCP session (the SDK's Client over streamable HTTP, with the rollout's token) lists and calls
 * the tools. The episode engine runs on this side, as it does in a trainer that serves its env over MCP.
 */
class McpClientEnv implements Env {
  readonly name: string;
  readonly capabilities: EnvCapabilities;
  private readonly sessions = new Map<string, Session>();
  readonly prompts = new Map<string, string>();

  constructor(
    private readonly url: string,
    private readonly harness: McpHarnessClient,
    private readonly tools: ToolSpec[],
    inner: Env,
  ) {
    this.name = inner.name;
    // the episode's settings are the harness's: MCP carries tools, not weights or limits. The reward capability
    // passes on whole; of the rest, only what reads no rollout state here (the description, the episode limits)
    const own = inner.capabilities ?? {};
    const description = own.metadata?.description;
    const defaults = own.episode?.defaults;
    this.capabilities = {
      ...(own.reward ? { reward: own.reward } : {}),
      ...(description !== undefined ? { metadata: { description } } : {}),
      ...(defaults ? { episode: { defaults } } : {}),
    };
  }

  systemPrompt = (task: Task): string => this.prompts.get(task.id) ?? "";

  listTools(): ToolSpec[] {
    return this.tools;
  }

  private session(rolloutId: string): Session {
    const s = this.sessions.get(rolloutId);
    if (!s) throw new EnvError(`mcp: unknown rollout "${rolloutId}"`);
    return s;
  }

  async init(rolloutId: string, task: Task): Promise<void> {
    const rollout = await this.harness.create({ taskId: task.id });
    if (typeof rollout.systemPrompt === "string") this.prompts.set(task.id, rollout.systemPrompt);
    let client: Client;
    try {
      client = await connect(this.url, rollout.token);
    } catch (e) {
      await this.harness.release(rollout).catch(() => {});
      throw new InfraError(`mcp: could not open a session on rollout ${rollout.rolloutId}: ${errorMessage(e)}`);
    }
    this.sessions.set(rolloutId, { rollout, client });
  }

  async runTool(rolloutId: string, call: ToolCallRequest): Promise<ToolResult> {
    const { client } = this.session(rolloutId);
    try {
      const r = await client.callTool({ name: call.name, arguments: call.arguments as Record<string, unknown> });
      return mcpResultToToolResult(r as Parameters<typeof mcpResultToToolResult>[0]);
    } catch (e) {
      // a client's fault (unknown tool, bad arguments) is a JSON-RPC error the model reads, as MCP clients show it; an
      // internal error is the env's; anything else (a dropped connection, a time-out) the infrastructure's
      if (e instanceof McpError && (e.code === ErrorCode.InvalidParams || e.code === ErrorCode.MethodNotFound)) {
        return { content: `Error: ${e.message}`, isError: true };
      }
      if (e instanceof McpError && e.code === ErrorCode.InternalError) throw new EnvError(`mcp: ${e.message}`);
      throw new InfraError(`mcp: tools/call ${call.name}: ${errorMessage(e)}`);
    }
  }

  async computeReward(rolloutId: string, messages: Message[], _task: Task): Promise<RewardComponents> {
    return (await this.harness.score(this.session(rolloutId).rollout, { messages })).rewards;
  }

  async release(rolloutId: string): Promise<void> {
    const s = this.sessions.get(rolloutId);
    if (!s) return;
    this.sessions.delete(rolloutId);
    await closeClient(s.client);
    await this.harness.release(s.rollout).catch(() => {});
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions.keys()].map((id) => this.release(id)));
  }
}

/** Everything one MCP session shows its client besides tool results: instructions, tools, resources, prompts. */
async function sessionSurfaces(client: Client, task: Task): Promise<Surface[]> {
  const out: Surface[] = [];
  const add = (where: string, text: string | undefined) => {
    if (text) out.push({ where: `MCP ${where} (task ${task.id})`, text, taskId: task.id, input: modelInput(task) });
  };
  const caps = client.getServerCapabilities() ?? {};
  add("initialize instructions", client.getInstructions());
  add("tools/list", JSON.stringify(await client.listTools()));
  if (caps.resources) {
    const list = await client.listResources();
    add("resources/list", JSON.stringify(list));
    for (const r of list.resources) {
      const read = await client.readResource({ uri: r.uri });
      for (const c of read.contents) add(`resources/read ${r.uri}`, "text" in c ? String(c.text) : JSON.stringify(c));
    }
    try {
      add("resources/templates/list", JSON.stringify(await client.listResourceTemplates()));
    } catch {
      /* optional */
    }
  }
  if (caps.prompts) {
    const list = await client.listPrompts();
    add("prompts/list", JSON.stringify(list));
    for (const p of list.prompts) {
      try {
        add(`prompts/get ${p.name}`, JSON.stringify(await client.getPrompt({ name: p.name })));
      } catch (e) {
        add(`prompts/get ${p.name} (error)`, errorMessage(e));
      }
    }
  }
  return out;
}

/**
 * The env served over MCP (`serveMcp` on a free loopback port, streamable HTTP, with an operator token), driven by
 * the MCP SDK's own Client. Each audited task gets a session whose every client-visible text (instructions, tool list,
 * resources, prompts) is a leak-scan surface; the episodes then run over MCP sessions, scored through the harness
 * channel.
 */
export async function mcpView(env: Env, all: Task[], audited: Task[]): Promise<TransportView> {
  const token = randomUUID();
  const server = await serveMcp(env, { tasks: all, port: 0, token });
  const url = server.url!;
  return servedView(server, async () => {
    const harness = new McpHarnessClient(url, { token });
    const surfaces: Surface[] = [];
    let tools: ToolSpec[] | undefined;
    const prompts = new Map<string, string>();
    for (const task of audited) {
      const rollout = await harness.create({ taskId: task.id });
      prompts.set(task.id, rollout.systemPrompt);
      const client = await connect(url, rollout.token);
      try {
        tools ??= toSpecs((await client.listTools()).tools);
        surfaces.push(...(await sessionSurfaces(client, task)));
      } finally {
        await closeClient(client);
        await harness.release(rollout).catch(() => {});
      }
    }
    if (!tools) {
      // no task to audit: the tool list of a session on the server's first task
      const client = await connect(url, token);
      try {
        tools = toSpecs((await client.listTools()).tools);
      } finally {
        await closeClient(client);
      }
    }
    const mcpEnv = new McpClientEnv(url, harness, tools, env);
    for (const [id, p] of prompts) mcpEnv.prompts.set(id, p);
    return { transport: "mcp", env: mcpEnv, taskOf: (t) => t, surfaces };
  });
}
