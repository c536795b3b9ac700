import { type Env, resolveSystemPrompt } from "./env.js";
import { EnvError } from "./errors.js";
import { hermesSystemPrompt } from "./hermes.js";
import type { ToolFormat } from "./policy.js";
import type { Message, Task, ToolSpec } from "./types.js";

const systemCache = new WeakMap<ToolSpec[], Map<string, string>>();

/** The Hermes system prompt for a tool list, built once per (tools, prompt) — rollouts share the string. */
function hermesSystemCached(base: string, tools: ToolSpec[]): string {
  let byBase = systemCache.get(tools);
  if (!byBase) systemCache.set(tools, (byBase = new Map()));
  let s = byBase.get(base);
  if (s === undefined) {
    s = hermesSystemPrompt(base, tools);
    if (byBase.size < 1000) byBase.set(base, s);
  }
  return s;
}

/** The conversation a rollout starts from: system prompt (+ Hermes tool section) and the task's prompt. */
export function buildInitialMessages<T extends Task>(
  env: Env<T>,
  task: T,
  toolFormat: ToolFormat = "hermes",
): Message[] {
  const tools = env.listTools();
  const taskMessages = task.messages ?? [];
  const taskSystem = taskMessages.find((m) => m.role === "system");
  const base = taskSystem ? (taskSystem.content as string) : resolveSystemPrompt(env, task);
  const system = toolFormat === "hermes" ? hermesSystemCached(base, tools) : base;
  const rest = taskMessages.filter((m) => m.role !== "system");
  const out: Message[] = [];
  if (system) out.push({ role: "system", content: system });
  if (rest.length) out.push(...rest);
  else if (task.prompt !== undefined) out.push({ role: "user", content: task.prompt });
  else throw new EnvError(`task "${task.id}" has neither prompt nor messages`);
  return out;
}
