import { z } from "zod";
import { defineEnv } from "../define-env.js";
import { tool } from "../tool.js";
import type { Task } from "../types.js";

/** The policy tests' env: one `add` tool, reward 1 when the answer holds the gold in `<answer>` tags. */
export const adderEnv = defineEnv<Task<string>>({
  name: "adder",
  systemPrompt: "Add.",
  tools: [
    tool({
      name: "add",
      description: "a+b",
      parameters: z.object({ a: z.number(), b: z.number() }),
      execute: ({ a, b }) => String(a + b),
    }),
  ],
  reward: ({ completion, task }) => ({ correct: completion.includes(`<answer>${task.groundTruth}</answer>`) ? 1 : 0 }),
});

export const adderTask: Task<string> = { id: "q", prompt: "2+2?", groundTruth: "4" };
