import type { RolloutResult } from "../rollout-result.js";
import { LiveSeries } from "./live-series.js";
import { ResultsTail } from "./results-tail.js";

/**
 * Test rows in the shape a recording server writes: SkyRL-style groups of 4 per trainer step, an env_error now and
 * then, truncations, two reward components, tool latencies and non-ASCII text.
 */
export function recordedRow(i: number): RolloutResult {
  const step = Math.floor(i / 16);
  const reward = (i * 7919) % 10 < 4 + (step % 5) ? 1 : 0.25 * (i % 3);
  const err = i % 31 === 0;
  return {
    taskId: `t${Math.floor(i / 4) % 50}`,
    rolloutId: `r${i}`,
    groupId: `g${Math.floor(i / 4)}`,
    sample: i % 4,
    attempt: 0,
    outcome: err ? "env_error" : i % 13 === 0 ? "truncated" : "completed",
    ...(err ? { error: "reward failed" } : { reward, rewards: { correct: reward, format: (i % 7) / 7 } }),
    turns: 2,
    toolCalls: 1 + (i % 3),
    toolErrors: 0,
    durationMs: 5,
    toolLatencyMs: { [`tool${i % 5}`]: [0.5 + (i % 40), 3 * (i % 11)] },
    messages: [
      { role: "user", content: `What is ${i} + 1? — ü` },
      { role: "assistant", content: `<answer>${"é".repeat(i % 9)}${i + 1}</answer>` },
    ],
    trainerStep: step,
  } as RolloutResult;
}

/** results.jsonl lines for rows `from` to `to` (exclusive). */
export function recordedLines(from: number, to: number, row: (i: number) => RolloutResult = recordedRow): string {
  let s = "";
  for (let i = from; i < to; i++) s += `${JSON.stringify(row(i))}\n`;
  return s;
}

/** The series a watch that never stopped would hold: every line of the file, from the start. */
export function fullScan(path: string, passThreshold = 1): LiveSeries {
  const s = new LiveSeries(passThreshold);
  new ResultsTail(path, (r) => s.add(r)).poll();
  return s;
}
