#!/usr/bin/env node
/**
 * A real env server process for the Python client's fault tests (python/tests/test_migration.py): it can be killed,
 * stopped or drained mid-rollout. Serves the calc test env of `@benchmax/server/testing` (`add`, `note`: per-rollout
 * state, …) plus `dice`, a tool whose result is random (a nondeterministic tool: its rollouts cannot be migrated).
 * Prints `{"url", "pid", "instance"}` on stdout once listening. SIGTERM drains (new rollouts refused, live ones served
 * until released or the grace passes); SIGINT closes at once.
 *
 *   node python/tests/serve-test-env.mjs [--port N] [--token T] [--host H] [--grace-ms N]
 */
import { parseArgs } from "node:util";
import { defineEnv, extractAnswer, tool } from "@benchmax/core";
import { serveEnv } from "@benchmax/server";
import { addTool, noteTool } from "@benchmax/server/testing";
import { z } from "zod";

const { values } = parseArgs({
  options: {
    port: { type: "string", default: "0" },
    token: { type: "string" },
    host: { type: "string", default: "127.0.0.1" },
    "grace-ms": { type: "string", default: "30000" },
  },
});

const tasks = Array.from({ length: 8 }, (_, i) => ({
  id: `t${i}`,
  prompt: `What is ${i} + ${i}?`,
  groundTruth: String(2 * i),
}));
const env = defineEnv({
  name: "calc",
  description: "adds numbers; remembers notes; rolls dice",
  systemPrompt: "You add numbers. Answer in <answer></answer>.",
  tools: [
    addTool,
    noteTool,
    tool({
      name: "dice",
      description: "Roll a die: a random number from 1 to 1e9 (a nondeterministic tool)",
      parameters: z.object({}),
      execute: () => String(1 + Math.floor(Math.random() * 1e9)),
    }),
  ],
  initState: () => ({ notes: [] }),
  reward: ({ completion, task }) => ({ exact_match: extractAnswer(completion)?.trim() === task.groundTruth ? 1 : 0 }),
  rewardWeights: { exact_match: 1 },
  loadTasks: async () => tasks,
});

const graceMs = Number(values["grace-ms"]);
const srv = await serveEnv(env, {
  token: values.token,
  host: values.host,
  port: Number(values.port),
  maxRollouts: 4096,
  drainGraceMs: graceMs,
});
const health = await fetch(`${srv.url}/health`).then((r) => r.json());
process.stdout.write(`${JSON.stringify({ url: srv.url, pid: process.pid, instance: health.instance })}\n`);

let stopping = false;
process.on("SIGTERM", () => {
  if (stopping) return;
  stopping = true;
  const done = typeof srv.drain === "function" ? srv.drain() : srv.close();
  void Promise.resolve(done)
    .then(() => srv.close())
    .then(() => env.close())
    .finally(() => process.exit(0));
});
process.on("SIGINT", () => {
  void srv
    .close()
    .then(() => env.close())
    .finally(() => process.exit(0));
});
