import { type Env, errorMessage, type Task, type ToolSpec } from "@benchmax/core";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  type CallToolRequest,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  McpError,
  type Tool as McpTool,
  ReadResourceRequestSchema,
  type RequestId,
} from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { rpcCodeOf } from "../error-codes.js";
import type { RolloutService, ServedRollout } from "../service/index.js";
import { callToolResult } from "../tool-errors.js";

/** The resource holding the session's task prompt and system prompt (never the gold answer). */
export const TASK_RESOURCE = "benchmax://rollout/task";

/**
 * What one MCP request acts on. A session scope (stdio, a streamable-HTTP session) is one rollout; OpenEnv's
 * sessionless `POST /mcp` names one per request (`session_id`) or runs on a throwaway rollout.
 */
export interface McpScope {
  /**
   * The rollout a request acts on (started on first use): at once when it is known (a session id, a session's own),
   * else a promise.
   */
  rollout(): Held | Promise<Held>;
  /** OpenEnv's `openenv/session/create`: a session id (the rollout's capability) for later `session_id` params. */
  createSession?(): Promise<string>;
  /** OpenEnv's `openenv/session/close`. */
  closeSession?(sessionId: string): Promise<void>;
}

/** The rollout a request acts on. `temporary`: release it after the call (a sessionless call's throwaway rollout). */
export interface Held {
  rollout: ServedRollout;
  temporary?: boolean;
}

export interface McpServerOptions {
  service: RolloutService;
  /** The scope of a request: a session's own, or (one server, many callers) the caller's by request id. */
  scopeOf(requestId: RequestId): McpScope;
}

/**
 * The MCP error of a failure: its JSON-RPC code from the one map (`rpcCodeOf`: the caller's fault — bad input, an
 * unknown or forbidden rollout — is `-32602`, an env failure `-32603`, the rest `-32000`). A tool error the model
 * caused never gets here: it is a `CallToolResult` with `isError: true`.
 */
export function mcpErrorOf(e: unknown): McpError {
  if (e instanceof McpError) return e;
  return new McpError(rpcCodeOf(e), errorMessage(e));
}

/**
 * What `tools/call` is registered with: the method only. The SDK's `Server` checks every `tools/call` against its full
 * `CallToolRequestSchema` (and the result against `CallToolResultSchema`) around the handler whatever schema it is
 * registered with; its `Protocol` layer then parses the registered schema once more. Naming the method only saves that
 * second full parse per call (the `Server`'s own check stays: a malformed `tools/call` is still its -32602).
 */
export const ToolsCallMethodSchema = z.looseObject({ method: z.literal("tools/call") });

/** OpenEnv's session methods (MCPToolClient's production mode keeps one episode across calls with them). */
const SessionCreateSchema = z.object({
  method: z.literal("openenv/session/create"),
  params: z.looseObject({}).optional(),
});
const SessionCloseSchema = z.object({
  method: z.literal("openenv/session/close"),
  params: z.looseObject({}).optional(),
});

export function mcpTools(env: Env): McpTool[] {
  return env.listTools().map((t: ToolSpec) => ({
    name: t.name,
    description: t.description,
    inputSchema: { type: "object" as const, ...t.parameters },
  }));
}

/**
 * The rollout a request acts on (`scope.rollout()`: at once when it is known, else a promise); a failure to name or
 * start one is an `McpError` (`mcpErrorOf`).
 */
function holdIn(scope: McpScope): Held | Promise<Held> {
  try {
    const h = scope.rollout();
    return h instanceof Promise
      ? h.catch((e: unknown) => {
          throw mcpErrorOf(e);
        })
      : h;
  } catch (e) {
    throw mcpErrorOf(e);
  }
}

/** The parameters of a `tools/call` the handler reads. */
export interface ToolsCallParams {
  name: string;
  arguments?: Record<string, unknown>;
}

/**
 * One `tools/call` in a scope: the rollout the scope names (started on first use), the call through the rollout
 * service (its limits, its counters) and the MCP result. The model's own mistakes (unknown tool, bad arguments, a
 * failing call) are results it can read; the env's or the infrastructure's failure, or a rollout that is gone or done,
 * is an `McpError` (`mcpErrorOf`). A throwaway rollout is released after the call.
 *
 * The SDK `Server`'s `tools/call` handler is this function, and so is the direct answer to a plain call
 * (`answerToolsCall`).
 */
export async function callToolIn(
  service: RolloutService,
  scope: McpScope,
  params: ToolsCallParams,
): Promise<Record<string, unknown>> {
  const h = holdIn(scope);
  const held = h instanceof Promise ? await h : h;
  try {
    const out = await service.callTool(held.rollout, { name: params.name, arguments: params.arguments ?? {} });
    return callToolResult(out);
  } catch (e) {
    throw mcpErrorOf(e);
  } finally {
    if (held.temporary) await service.release(held.rollout).catch(() => {});
  }
}

/**
 * An MCP SDK `Server` for a served env. The model-facing surface is the env's tools, the task resource (prompt and
 * system prompt, never the gold) and an empty prompt list; nothing scores or picks tasks here (the harness does, on
 * its own channel). Every tool call goes through the rollout service (`callTool`: its limits, its counters).
 */
export function createMcpServer(options: McpServerOptions): Server {
  const { service } = options;
  const env = service.env;
  const server = new Server(
    { name: `benchmax-${env.name}`, version: "0.1.0" },
    {
      capabilities: { tools: { listChanged: false }, resources: {}, prompts: {} },
      instructions: typeof env.systemPrompt === "string" ? env.systemPrompt : undefined,
    },
  );
  const tools = mcpTools(env);
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  server.setRequestHandler(ToolsCallMethodSchema, (request, extra) => {
    const req = request as unknown as CallToolRequest; // checked by the Server's CallToolRequestSchema
    return callToolIn(service, options.scopeOf(extra.requestId), req.params);
  });
  // clients list prompts at start-up (some treat -32601 as a broken server): there are none to give
  server.setRequestHandler(ListPromptsRequestSchema, async () => ({ prompts: [] }));
  server.setRequestHandler(GetPromptRequestSchema, async (req) => {
    throw new McpError(ErrorCode.InvalidParams, `unknown prompt ${req.params.name}: this server has no prompts`);
  });
  server.setRequestHandler(ListResourcesRequestSchema, async () => ({
    resources: [
      {
        uri: TASK_RESOURCE,
        name: "task",
        description: "This session's task prompt and system prompt",
        mimeType: "application/json",
      },
    ],
  }));
  server.setRequestHandler(ReadResourceRequestSchema, async (req, extra) => {
    if (req.params.uri !== TASK_RESOURCE) {
      throw new McpError(ErrorCode.InvalidParams, `unknown resource ${req.params.uri}`);
    }
    const held = await holdIn(options.scopeOf(extra.requestId));
    try {
      const text = JSON.stringify(taskView(service, held.rollout.task));
      return { contents: [{ uri: TASK_RESOURCE, mimeType: "application/json", text }] };
    } finally {
      if (held.temporary) await service.release(held.rollout).catch(() => {});
    }
  });
  server.setRequestHandler(SessionCreateSchema, async (_req, extra) => {
    const scope = options.scopeOf(extra.requestId);
    if (!scope.createSession) throw new McpError(ErrorCode.MethodNotFound, "Method not found");
    try {
      return { session_id: await scope.createSession() };
    } catch (e) {
      throw mcpErrorOf(e);
    }
  });
  server.setRequestHandler(SessionCloseSchema, async (req, extra) => {
    const scope = options.scopeOf(extra.requestId);
    if (!scope.closeSession) throw new McpError(ErrorCode.MethodNotFound, "Method not found");
    const sid = req.params?.session_id;
    if (typeof sid !== "string" || !sid) {
      throw new McpError(ErrorCode.InvalidParams, "Invalid params - 'session_id' is required");
    }
    try {
      await scope.closeSession(sid);
    } catch (e) {
      throw mcpErrorOf(e);
    }
    return { session_id: sid, closed: true };
  });
  return server;
}

/** What the model may see of a task: its id, prompt (or messages) and the system prompt. Never `groundTruth`. */
export function taskView(
  service: RolloutService,
  task: Task,
): { id: string; systemPrompt: string; prompt?: string; messages?: unknown } {
  return { id: task.id, systemPrompt: service.systemPrompt(task), prompt: task.prompt, messages: task.messages };
}
