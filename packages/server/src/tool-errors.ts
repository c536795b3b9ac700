import { type Env, type ToolCallRequest, type ToolResult, textOf } from "@benchmax/core";

/**
 * OpenEnv's `ToolErrorType` values (src/openenv/core/env_server/mcp_types.py). `error` in a `CallToolObservation`
 * is for framework failures only; what the tool itself reports as an error stays in `result`.
 */
export type ToolErrorType = "execution_error" | "invalid_args" | "transport_error" | "tool_not_found" | "timeout";

export const TOOL_ERROR_TYPES: readonly ToolErrorType[] = [
  "execution_error",
  "invalid_args",
  "transport_error",
  "tool_not_found",
  "timeout",
];

/** Is `name` one of the env's tools? (Checked before a call, so an unknown name is `tool_not_found`.) */
export function hasTool(env: Env, name: string): boolean {
  return env.listTools().some((t) => t.name === name);
}

/**
 * The framework error behind a failed call, or undefined when the tool itself reported the error (its text is the
 * result). An explicit `metadata.errorType` wins; otherwise core's defineEnv messages for bad arguments and timeouts.
 */
export function frameworkErrorOf(res: ToolResult): ToolErrorType | undefined {
  if (!res.isError) return undefined;
  const declared = res.metadata?.errorType;
  if (typeof declared === "string" && (TOOL_ERROR_TYPES as readonly string[]).includes(declared)) {
    return declared as ToolErrorType;
  }
  const text = textOf(res.content);
  if (/^Error: invalid arguments for /.test(text)) return "invalid_args";
  if (/^Error: unknown tool /.test(text)) return "tool_not_found";
  if (/^Error: Tool "[^"]*" timed out after /.test(text)) return "timeout";
  return undefined;
}

/** The type of any failed call: the framework error, else `execution_error` (the tool ran and failed). */
export function errorTypeOf(res: ToolResult): ToolErrorType {
  return frameworkErrorOf(res) ?? "execution_error";
}

/**
 * A ToolResult in the shape of the MCP `CallToolResult` (`content`, `structuredContent`, `isError`) plus `data`, the
 * text, which OpenEnv's `MCPToolClient.call_tool` returns to its caller (src/openenv/core/mcp_client.py). Fields come
 * in the order the MCP SDK's `CallToolResultSchema` gives them back, so an answer reads the same byte for byte whether
 * the SDK `Server` checked it or not (`mcp-tools-call.ts`).
 */
export function callToolResult(res: ToolResult): Record<string, unknown> {
  const parts = typeof res.content === "string" ? [{ type: "text" as const, text: res.content }] : res.content;
  const content = parts.map((p) => {
    if (p.type === "text") return { type: "text", text: p.text };
    const m = /^data:([^;,]+);base64,(.*)$/s.exec(p.image_url.url);
    if (m) return { type: "image", data: m[2], mimeType: m[1] };
    return { name: "image", uri: p.image_url.url, type: "resource_link" };
  });
  const structured = res.metadata?.structuredContent;
  const out: Record<string, unknown> = { content };
  if (structured && typeof structured === "object") out.structuredContent = structured;
  out.isError = res.isError;
  out.data = textOf(res.content);
  return out;
}

/**
 * The same result as OpenEnv's own MCP envs put it into `CallToolObservation.result` over `/ws` and `/step` (FastMCP's
 * `CallToolResult` serialized: snake_case fields, `data` the value).
 */
export function observationResult(res: ToolResult): Record<string, unknown> {
  const c = callToolResult(res);
  return {
    content: c.content,
    structured_content: c.structuredContent ?? null,
    meta: null,
    data: c.data,
    is_error: res.isError,
  };
}

export type { ToolCallRequest };
