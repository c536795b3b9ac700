import {
  defineEnv,
  type Env,
  extractAnswer,
  InfraError,
  type RolloutResult,
  scriptedPolicy,
  type Task,
  ToolError,
  tool,
} from "@benchmax/core";
import { z } from "zod";

/** An env with one fault per task (`task.meta.fault`): tools that throw, hang or lose their backend; bad rewards. */
export type Fault =
  | "none"
  | "tool_throws"
  | "tool_infra"
  | "tool_hangs"
  | "tool_slow"
  | "reward_throws"
  | "reward_nan"
  | "reward_inf"
  | "reward_missing";
export type FTask = Task<string> & { meta: { fault: Fault } };

const never = new Promise<never>(() => {});

/** A tool without parameters whose every call throws a fresh `error()`. */
const throwing = (name: string, description: string, error: () => Error) =>
  tool({
    name,
    description,
    parameters: z.object({}),
    execute: () => {
      throw error();
    },
  });

/** A tool without parameters that never returns, under its own time limit (0: none). */
const hanging = (name: string, description: string, timeoutMs: number) =>
  tool({ name, description, parameters: z.object({}), timeoutMs, execute: () => never });

export function faultyEnv(): Env<FTask> {
  return defineEnv<FTask, { log: string[] }>({
    name: "faulty",
    systemPrompt: "Answer in <answer></answer>.",
    initState: () => ({ log: [] }),
    tools: [
      tool({ name: "ok", description: "works", parameters: z.object({}), execute: () => "fine" }),
      throwing(
        "tool_throws",
        "an env bug",
        () => new TypeError("cannot read properties of undefined (reading 'rows')"),
      ),
      throwing("tool_infra", "its backend is down", () => new InfraError("backend unreachable: ECONNREFUSED")),
      // no own time limit: only the runner's hard limit stops it
      hanging("tool_hangs", "never returns", 0),
      // over its own time limit: a tool error the model reads, the rollout goes on
      hanging("tool_slow", "too slow", 20),
      throwing("tool_error", "a readable error", () => new ToolError("no such row")),
    ],
    reward: ({ task, completion }): Record<string, number> => {
      switch (task.meta.fault) {
        case "reward_throws":
          throw new Error("scorer crashed");
        case "reward_nan":
          return { correct: Number.NaN };
        case "reward_inf":
          return { correct: Number.POSITIVE_INFINITY };
        case "reward_missing":
          return { other: 1 };
        default:
          return { correct: extractAnswer(completion) === task.groundTruth ? 1 : 0 };
      }
    },
    rewardWeights: { correct: 1 },
  });
}

export const mk = (id: string, fault: Fault): FTask => ({
  id,
  prompt: `task ${id}`,
  groundTruth: "42",
  meta: { fault },
});

export const faultPolicy = scriptedPolicy<FTask>("script", ({ task, turn }) => {
  const f = task.meta.fault;
  if (turn === 0 && f.startsWith("tool_")) return { calls: [{ name: f, arguments: {} }] };
  if (turn === 0)
    return {
      calls: [
        { name: "ok", arguments: {} },
        { name: "tool_error", arguments: {} },
      ],
    };
  return { answer: "<answer>42</answer>" };
});

/** Failed rollouts that carry a reward, or no reason: must be none. */
export function fabricatedRewards(results: RolloutResult[]): string[] {
  const bad: string[] = [];
  for (const r of results) {
    if (r.outcome !== "env_error" && r.outcome !== "infra_error") continue;
    if (r.reward !== undefined || r.rewards !== undefined)
      bad.push(`${r.rolloutId}: ${r.outcome} with reward ${r.reward}`);
    if (!r.error) bad.push(`${r.rolloutId}: ${r.outcome} without a reason`);
  }
  return bad;
}
