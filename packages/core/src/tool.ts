import { z } from "zod/v4";
import type { ContentPart, JsonSchema, ToolResult, ToolSpec } from "./types.js";

/** Throw from a tool to send a readable error to the model (`isError: true`). Other throws are env bugs. */
export class ToolError extends Error {
  override name = "ToolError";
}

export interface ToolContext<S> {
  rolloutId: string;
  state: S;
  /** Aborted when the tool's time limit passes. */
  signal: AbortSignal;
}

export type ToolOutput =
  | string
  | number
  | boolean
  | null
  | ContentPart[]
  | ToolResult
  | Record<string, unknown>
  | unknown[];

export interface Tool<S = unknown, P extends z.ZodType = z.ZodType> {
  name: string;
  description: string;
  parameters: P;
  execute(args: z.infer<P>, ctx: ToolContext<S>): ToolOutput | Promise<ToolOutput>;
  /** Per-tool time limit (ms); overrides the env's. */
  timeoutMs?: number;
  /** Per-tool output cap (characters); overrides the env's. */
  maxOutputChars?: number;
}

/** Define a tool with a zod parameter schema (vercel/ai style). */
export function tool<S = unknown, P extends z.ZodType = z.ZodType>(t: Tool<S, P>): Tool<S, P> {
  return t;
}

const specCache = new WeakMap<Tool<any, any>, ToolSpec>();

/**
 * Throw a clear error for a schema that is not a zod 4 schema (e.g. one made with a zod 3 install): benchmax needs
 * zod ^4 (or zod 3.25's `zod/v4`) to turn schemas into JSON Schema.
 */
export function assertZod4(schema: unknown, what: string): void {
  if (schema !== null && typeof schema === "object" && "_zod" in schema) return;
  const v3 = schema !== null && typeof schema === "object" && "_def" in schema;
  throw new TypeError(
    v3
      ? `${what} is a zod 3 schema; benchmax needs zod ^4 (install zod@^4, or import { z } from "zod/v4" with zod 3.25+)`
      : `${what} must be a zod schema, got ${schema === null ? "null" : typeof schema}`,
  );
}

/** The tool as the model sees it (JSON Schema parameters). */
export function toolSpec(t: Tool<any, any>): ToolSpec {
  let spec = specCache.get(t);
  if (!spec) {
    assertZod4(t.parameters, `tool "${t.name}": parameters`);
    const schema = z.toJSONSchema(t.parameters, { target: "draft-2020-12", unrepresentable: "any" }) as JsonSchema;
    delete schema.$schema;
    spec = { name: t.name, description: t.description, parameters: schema };
    specCache.set(t, spec);
  }
  return spec;
}

/** Human-readable zod issues: `field: message; field2: message`. */
export function formatZodError(error: z.ZodError): string {
  return error.issues
    .map((i) => {
      const path = i.path.length ? i.path.map(String).join(".") : "(arguments)";
      return `${path}: ${i.message}`;
    })
    .join("; ");
}

/** Turn whatever a tool returned into a ToolResult. */
export function toToolResult(out: ToolOutput): ToolResult {
  if (out !== null && typeof out === "object" && !Array.isArray(out) && "isError" in out && "content" in out) {
    return out as ToolResult;
  }
  if (typeof out === "string") return { content: out, isError: false };
  if (Array.isArray(out) && out.every((p) => p && typeof p === "object" && "type" in (p as object))) {
    const parts = out as ContentPart[];
    if (parts.every((p) => p.type === "text" || p.type === "image_url")) return { content: parts, isError: false };
  }
  return { content: JSON.stringify(out), isError: false };
}

/** Cap a result's text at `max` characters; an over-long result becomes an error telling the model what happened. */
export function capToolResult(result: ToolResult, max: number): ToolResult {
  if (typeof result.content !== "string" || result.content.length <= max) return result;
  const total = result.content.length;
  return {
    content: `${result.content.slice(0, max)}\n[output truncated: ${total} characters, limit ${max}; ask for less, e.g. a smaller range or page]`,
    isError: true,
    metadata: { ...result.metadata, truncated: true, totalChars: total, errorType: "output_too_long" },
  };
}

export function toolErrorResult(message: string, metadata?: Record<string, unknown>): ToolResult {
  return { content: message, isError: true, ...(metadata ? { metadata } : {}) };
}
