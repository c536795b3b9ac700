import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { defineEnv, readResults, runMany, scriptedPolicy, summarize, tool } from "@benchmax/core";
import { z } from "zod";

/**
 * Produce a real run dir with core's runner: an adder env with one tool; the scripted policy is right on
 * a share of tasks (`accuracy`), so rewards, turns and tool calls vary.
 */
export async function makeRunDir(dir: string, opts: { tasks?: number; accuracy?: number; policy?: string } = {}) {
  const n = opts.tasks ?? 8;
  const accuracy = opts.accuracy ?? 0.75;
  const env = defineEnv<{ id: string; prompt: string; groundTruth: number }>({
    name: "adder",
    systemPrompt: "Add the numbers with the add tool; answer in <answer></answer>.",
    tools: [
      tool({
        name: "add",
        description: "a + b",
        parameters: z.object({ a: z.number(), b: z.number() }),
        execute: ({ a, b }) => String(a + b),
      }),
    ],
    reward: ({ completion, task }) => ({
      exact_match: completion.includes(`<answer>${task.groundTruth}</answer>`) ? 1 : 0,
      format: completion.includes("<answer>") ? 1 : 0,
    }),
    rewardWeights: { exact_match: 0.9, format: 0.1 },
    explainReward: (_id, messages, task) => {
      const last = messages.at(-1);
      const text = typeof last?.content === "string" ? last.content : "";
      return { extracted: /<answer>(.*?)<\/answer>/.exec(text)?.[1] ?? "(none)", gold: String(task.groundTruth) };
    },
  });
  const tasks = Array.from({ length: n }, (_, i) => ({
    id: `t${i}`,
    prompt: `${i} + ${i + 1}?`,
    groundTruth: 2 * i + 1,
    meta: { level: i % 2 ? "hard" : "easy" },
  }));
  const policy = scriptedPolicy<(typeof tasks)[number]>(opts.policy ?? "scripted", ({ task, turn }) => {
    const i = Number(task.id.slice(1));
    const right = i < Math.round(n * accuracy);
    if (turn < 1 + (i % 3)) return { calls: [{ name: "add", arguments: { a: i, b: i + 1 } }] };
    return { answer: right ? `<answer>${task.groundTruth}</answer>` : "<answer>0</answer>" };
  });
  mkdirSync(dir, { recursive: true });
  const run = await runMany(env, tasks, policy, { group: 2, resultsPath: join(dir, "results.jsonl") });
  // read back what the runner wrote (the run dir is the source of truth, as for the CLI)
  const summary = summarize(readResults(join(dir, "results.jsonl")), {
    env: "adder",
    policy: policy.name,
    passThreshold: 1,
    startedAt: run.startedAt,
    durationMs: run.durationMs,
  });
  writeFileSync(join(dir, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  await env.close();
  return summary;
}
