import { type AssistantMessage, type Env, type Message, type ToolResult, textOf } from "@benchmax/core";
import { type FinalState, failureOf, type RolloutService, type ServedRollout } from "./service/rollout-service.js";
import { badRequest } from "./service/service-error.js";
import { errorTypeOf, frameworkErrorOf, observationResult } from "./tool-errors.js";

/** OpenEnv's step/reset answer. */
export interface StepResult {
  observation: Record<string, unknown>;
  reward: number | null;
  done: boolean;
}

type OpenEnvTool = { name: string; description: string; input_schema: unknown };
/** A tool list in OpenEnv's shape, the length it was built at, and its JSON once asked for. */
type ToolEntry = { length: number; tools: OpenEnvTool[]; json?: string };

/**
 * Per tool list (an env's `listTools` gives the same array each call): the OpenEnv shape, built once, and its JSON
 * once asked for; both rebuilt if the list grew or shrank in place (McpEnv fills its list as it discovers servers).
 */
const openEnvToolCache = new WeakMap<object, ToolEntry>();

function openEnvToolEntry(env: Env): ToolEntry {
  const specs = env.listTools();
  let hit = openEnvToolCache.get(specs);
  if (!hit || hit.length !== specs.length) {
    const tools = specs.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters }));
    hit = { length: specs.length, tools };
    openEnvToolCache.set(specs, hit);
  }
  return hit;
}

/** The MCP-shaped tool list OpenEnv tool envs return. */
export function openEnvTools(env: Env): OpenEnvTool[] {
  return openEnvToolEntry(env).tools;
}

/** System prompts' JSON: the long text a reset sends, shared by every task of an env (a few distinct ones). */
const systemJson = new Map<string, string>();

/** `JSON.stringify(messages)`, with a leading built system message's text serialized once per distinct prompt. */
function messagesJson(messages: readonly Message[]): string {
  const first = messages[0];
  if (first?.role !== "system" || typeof first.content !== "string" || Object.keys(first).length !== 2) {
    return JSON.stringify(messages);
  }
  let text = systemJson.get(first.content);
  if (text === undefined) {
    if (systemJson.size >= 64) systemJson.clear();
    text = JSON.stringify(first.content);
    systemJson.set(first.content, text);
  }
  const rest = messages.length > 1 ? `,${JSON.stringify(messages.slice(1)).slice(1, -1)}` : "";
  return `[{"role":"system","content":${text}}${rest}]`;
}

/**
 * The observation of a fresh episode, as JSON text: `{observation: {episode_id, rollout_token, task_id, messages,
 * tools}, reward: null, done: false}` (the conversation to start from and the tools). Built as text because a reset
 * is on the hot path: the Hermes system prompt (the long part) and the tool list are serialized once and reused;
 * memory stays bounded by the distinct prompts, not the dataset.
 */
export function resetObservationJson(service: RolloutService, r: ServedRollout): string {
  const entry = openEnvToolEntry(service.env);
  const tj = (entry.json ??= JSON.stringify(entry.tools));
  return `{"observation":{"episode_id":${JSON.stringify(r.id)},"rollout_token":${JSON.stringify(r.token)},"task_id":${JSON.stringify(r.task.id)},"messages":${messagesJson(r.messages)},"tools":${tj}},"reward":null,"done":false}`;
}

/** One entry of a message action's `tool_results`: the text, and for a failed call its OpenEnv ToolErrorType. */
function toolResultFields(res: ToolResult): Record<string, unknown> {
  const out: Record<string, unknown> = { result: typeof res.content === "string" ? res.content : textOf(res.content) };
  if (res.isError) out.error = { error_type: errorTypeOf(res), message: textOf(res.content) };
  return out;
}

/** The observation of a tool list (OpenEnv's `ListToolsObservation`); needs no episode. */
export function listToolsResult(env: Env): StepResult {
  return { observation: { tools: openEnvTools(env) }, reward: null, done: false };
}

/**
 * OpenEnv's `CallToolObservation` for one call: `result` holds what the tool returned, its own errors included (as
 * FastMCP's serialized CallToolResult, which OpenEnv's MCP envs send). A model's bad call (an unknown tool,
 * arguments the tool's schema refuses) is such a result too, `is_error` with the text the model reads: the same
 * answer as a `tools/call` on `POST /mcp` and a `/v1/rollouts/:id/call` give (OpenEnv's MCPToolClient returns
 * `result["data"]` for it on every wire; it raises on `error`). `error` is set only for a framework failure typed
 * with a `ToolErrorType` (a timeout, or a type the env declares), as src/openenv/core/env_server/mcp_types.py
 * defines it.
 */
export async function callToolObservation(
  service: RolloutService,
  r: ServedRollout,
  name: string,
  args: Record<string, unknown>,
): Promise<StepResult> {
  const res = await service.callTool(r, { name, arguments: args });
  const kind = frameworkErrorOf(res);
  const framework = kind !== undefined && kind !== "invalid_args" && kind !== "tool_not_found";
  const observation: Record<string, unknown> = { tool_name: name, result: framework ? null : observationResult(res) };
  if (framework) observation.error = { error_type: kind, message: textOf(res.content) };
  return { observation, reward: null, done: false };
}

/** The assistant text of a message action: `{type: "message", content}`, `{message}` or `{content}`. */
function assistantOf(action: Record<string, unknown>): AssistantMessage | undefined {
  const content = action.content ?? action.message;
  if (action.tool_calls !== undefined) {
    const ok =
      Array.isArray(action.tool_calls) &&
      action.tool_calls.every(
        (c) =>
          c &&
          typeof c === "object" &&
          (c as { function?: unknown }).function &&
          typeof (c as any).function === "object",
      );
    if (!ok)
      throw badRequest(`"action.tool_calls" must be OpenAI tool calls [{id, type, function: {name, arguments}}]`);
  }
  if (typeof content === "string" || Array.isArray(action.tool_calls)) {
    const msg: AssistantMessage = { role: "assistant", content: typeof content === "string" ? content : null };
    if (Array.isArray(action.tool_calls)) msg.tool_calls = action.tool_calls as AssistantMessage["tool_calls"];
    return msg;
  }
  return undefined;
}

/**
 * One OpenEnv step on a rollout. Actions:
 * - `{type: "list_tools"}` → `{tools}`;
 * - `{type: "call_tool", tool_name, arguments}` → `{tool_name, result, error?}`;
 * - `{type: "message", content}` (the model's reply): every tool call in it is run and the results come back;
 *   a reply without a tool call ends the episode with its reward.
 */
export async function stepRollout(service: RolloutService, r: ServedRollout, action: unknown): Promise<StepResult> {
  if (!action || typeof action !== "object" || Array.isArray(action)) {
    throw badRequest(
      `"action" must be an object, e.g. {"type": "message", "content": "..."}`,
      "VALIDATION_ERROR",
      ["body", "action"],
      action ?? null,
    );
  }
  const a = action as Record<string, unknown>;
  const type = a.type ?? (a.tool_name !== undefined ? "call_tool" : "message");
  if (type === "list_tools") return listToolsResult(service.env);
  if (type === "call_tool") {
    if (typeof a.tool_name !== "string" || !a.tool_name) {
      throw badRequest(
        `"action.tool_name" must be a string`,
        "VALIDATION_ERROR",
        ["body", "action", "tool_name"],
        a.tool_name ?? null,
      );
    }
    const args = a.arguments ?? {};
    if (typeof args !== "object" || Array.isArray(args) || args === null) {
      throw badRequest(
        `"action.arguments" must be an object`,
        "VALIDATION_ERROR",
        ["body", "action", "arguments"],
        args,
      );
    }
    return callToolObservation(service, r, a.tool_name, args as Record<string, unknown>);
  }
  if (type !== "message") {
    throw badRequest(
      `unknown action type "${String(type)}" (expected message, call_tool or list_tools)`,
      "UNKNOWN_TYPE",
      ["body", "action", "type"],
      type,
    );
  }
  const msg = assistantOf(a);
  if (!msg) throw badRequest(`a message action needs "content" (the model's reply text)`);
  if (r.done) throw badRequest(`episode "${r.id}" is done; reset to start another`, "EPISODE_DONE");
  // the service runs the step on core's one episode engine: the env's own action syntax (parseActions), then native
  // / Hermes tool calls, every call in the reply, the turn limit, and the reward when the reply has no call
  const s = await service.step(r, msg);
  if (!s.done) {
    const results = s.tools.map((t) => ({
      tool_call_id: t.id,
      tool_name: t.name ?? null,
      ...toolResultFields(t.result),
    }));
    return { observation: { tool_results: results, messages: s.observations }, reward: null, done: false };
  }
  // released with its final state kept: `/state` reads it back after done
  await service.release(r);
  // never a reward 0 for a failure: the caller gets the error (500 env_error / 502 infra_error)
  if (s.reward === undefined)
    throw failureOf({ outcome: s.outcome ?? "env_error", error: s.error }, `episode "${r.id}"`);
  const observation: Record<string, unknown> = { rewards: s.rewards, passed: s.passed };
  if (s.outcome === "truncated") observation.truncated = s.truncatedBy ?? true;
  return { observation, reward: s.reward, done: true };
}

/** OpenEnv's `State` before any episode: `{episode_id: null, step_count: 0}` (its defaults). */
export const NO_EPISODE_STATE = Object.freeze({ episode_id: null, step_count: 0 });

/** OpenEnv `/state` body. */
export function stateOf(r: FinalState | ServedRollout): Record<string, unknown> {
  return {
    episode_id: r.id,
    step_count: r.steps,
    task_id: r.task.id,
    tool_calls: r.toolCalls,
    done: r.done,
    reward: r.reward ?? null,
  };
}
