import { type AssistantMessage, defineEnv, type Env, extractAnswer, type Task, ToolError, tool } from "@benchmax/core";
import WebSocket, { type ClientOptions } from "ws";
import { z } from "zod";

/** `add`: the sum of two numbers. */
export const addTool = tool({
  name: "add",
  description: "Add two numbers",
  parameters: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => String(a + b),
});

/** `note`: per-rollout state (`notes`); returns every note so far. */
export const noteTool = tool<{ notes: string[] }>({
  name: "note",
  description: "Remember a note; returns every note so far",
  parameters: z.object({ text: z.string() }),
  execute: ({ text }, { state }) => {
    state.notes.push(text);
    return state.notes.join(",");
  },
});

/** `sleep`: waits `ms` milliseconds (a slow tool). */
export const sleepTool = tool({
  name: "sleep",
  description: "Wait ms milliseconds",
  parameters: z.object({ ms: z.number() }),
  execute: async ({ ms }) => {
    await new Promise((r) => setTimeout(r, ms));
    return "slept";
  },
});

/**
 * A tiny env for tests: `add`, `note` (per-rollout state) and `fail` tools; reward = exact answer.
 * With `customActions`, replies may also act as `<add>a b</add>` (an env-specific syntax, like CRMArena's <execute>).
 */
export function calcEnv(options: { customActions?: boolean } = {}): Env {
  const tasks: Task<string>[] = [
    { id: "t1", prompt: "What is 2 + 3?", groundTruth: "5" },
    { id: "t2", prompt: "What is 10 + 7?", groundTruth: "17" },
    { id: "t3", prompt: "What is 1 + 1?", groundTruth: "2" },
  ];
  return defineEnv<Task<string>, { notes: string[] }>({
    name: "calc",
    description: "adds numbers",
    systemPrompt: "You add numbers. Answer in <answer></answer>.",
    tools: [
      addTool,
      noteTool,
      sleepTool,
      tool({
        name: "fail",
        description: "Always a tool error",
        parameters: z.object({}),
        execute: () => {
          throw new ToolError("it failed");
        },
      }),
    ],
    initState: () => ({ notes: [] }),
    reward: ({ completion, task }) => ({ exact_match: extractAnswer(completion)?.trim() === task.groundTruth ? 1 : 0 }),
    rewardWeights: { exact_match: 1 },
    computeGroupReward: async (group) => group.map((_, i) => ({ rank: i })),
    loadTasks: async () => tasks,
    ...(options.customActions
      ? {
          parseActions: (message: AssistantMessage, turn: number) => {
            const text = typeof message.content === "string" ? message.content : "";
            return [...text.matchAll(/<add>\s*(-?\d+)\s+(-?\d+)\s*<\/add>/g)].map((m, i) => ({
              call: { id: `add_${turn}_${i}`, name: "add", arguments: { a: Number(m[1]), b: Number(m[2]) } },
            }));
          },
        }
      : {}),
  });
}

/**
 * An OpenEnv `/ws` session on a server (`base`: its http URL; `path` may carry a query such as `?token=`): `ask` sends
 * one message and resolves with the next answer.
 */
export async function openWsSession(
  base: string,
  options: ClientOptions & { path?: string } = {},
): Promise<{ ws: WebSocket; ask(message: unknown): Promise<any> }> {
  const { path = "/ws", ...client } = options;
  const ws = new WebSocket(`${base.replace(/^http/, "ws")}${path}`, client);
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("error", reject);
  });
  const waiters: Array<(m: any) => void> = [];
  ws.on("message", (d) => waiters.shift()?.(JSON.parse(String(d))));
  const ask = (message: unknown) =>
    new Promise<any>((resolve) => {
      waiters.push(resolve);
      ws.send(JSON.stringify(message));
    });
  return { ws, ask };
}
