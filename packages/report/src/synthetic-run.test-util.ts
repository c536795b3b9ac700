import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { type Message, type RolloutResult, seededRandom as rng, summarize } from "@benchmax/core";

const SYSTEM = [
  "You are a careful research assistant. Answer the question using the tools; put the final answer in",
  "<answer></answer>. Search before answering; quote the page you used.",
  "",
  "# Tools",
  "search(query: string) — full-text search over the knowledge base; returns titles and snippets.",
  "open_page(title: string) — the text of one page.",
].join("\n");

/**
 * One synthetic rollout in the shape core's runner writes (OpenAI-style messages with tool calls and tool results),
 * with outcomes mixed like a real run: mostly completed, some truncated, a few env and infra errors.
 */
export function syntheticResult(i: number, opts: { tasks: number; group: number; seed?: number }): RolloutResult {
  const r = rng((opts.seed ?? 1) * 1_000_003 + i);
  const taskN = Math.floor(i / opts.group);
  const taskId = `q${taskN}`;
  const sample = i % opts.group;
  const u = r();
  const outcome = u < 0.86 ? "completed" : u < 0.93 ? "truncated" : u < 0.97 ? "env_error" : "infra_error";
  const calls = outcome === "infra_error" ? 0 : 1 + Math.floor(r() * 3);
  const messages: Message[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: `Question ${taskN}: which river flows through city ${taskN % 97} and how long is it?` },
  ];
  for (let k = 0; k < calls; k++) {
    const id = `call_${i}_${k}`;
    const name = k === 0 ? "search" : "open_page";
    const args = k === 0 ? { query: `river city ${taskN % 97}` } : { title: `River ${taskN % 31}` };
    messages.push({
      role: "assistant",
      content: k === 0 ? "Let me search for the city first." : null,
      tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(args) } }],
    });
    messages.push({
      role: "tool",
      tool_call_id: id,
      name,
      content:
        k === 0
          ? `1. River ${taskN % 31} — flows through city ${taskN % 97}; length ${100 + (taskN % 900)} km.\n2. City ${taskN % 97} — a city on the river.`
          : `River ${taskN % 31} is a river of ${100 + (taskN % 900)} km. `.repeat(6),
    });
  }
  const right = r() < 0.7;
  if (outcome === "completed" || outcome === "truncated") {
    messages.push({
      role: "assistant",
      content: `The river is River ${taskN % 31}. <answer>${right ? 100 + (taskN % 900) : 42} km</answer>`,
    });
  }
  const base = {
    taskId,
    rolloutId: `${taskId}#${sample}`,
    groupId: taskId,
    sample,
    attempt: 0,
    turns: calls + 1,
    toolCalls: calls,
    toolErrors: r() < 0.1 ? 1 : 0,
    durationMs: Math.round(200 + r() * 5000),
    messages,
  };
  if (outcome === "env_error") {
    return { ...base, outcome, error: `reward failed: component "f1" is NaN for ${taskId}` };
  }
  if (outcome === "infra_error") {
    return { ...base, outcome, turns: 0, error: "policy endpoint answered 503 Service Unavailable (3 attempts)" };
  }
  const exact = right ? 1 : 0;
  const f1 = right ? 1 : Math.round(r() * 100) / 100;
  return {
    ...base,
    outcome,
    ...(outcome === "truncated" ? { truncatedBy: "max_turns" as const } : {}),
    rewards: { exact_match: exact, f1 },
    reward: 0.7 * exact + 0.3 * f1,
  };
}

/** Write a run dir of `n` synthetic rollouts (results.jsonl + summary.json), streaming the results file. */
export function writeSyntheticRun(
  dir: string,
  n: number,
  opts: { group?: number; seed?: number; policy?: string } = {},
) {
  const group = opts.group ?? 4;
  const tasks = Math.ceil(n / group);
  mkdirSync(dir, { recursive: true });
  const fd = openSync(join(dir, "results.jsonl"), "w");
  const results: RolloutResult[] = [];
  for (let i = 0; i < n; i++) {
    const res = syntheticResult(i, { tasks, group, seed: opts.seed });
    writeSync(fd, `${JSON.stringify(res)}\n`);
    results.push({ ...res, messages: [] });
  }
  closeSync(fd);
  const summary = summarize(results, { env: "wiki-synthetic", policy: opts.policy ?? "synthetic", passThreshold: 1 });
  writeFileSync(join(dir, "summary.json"), `${JSON.stringify(summary, null, 2)}\n`);
  return summary;
}
