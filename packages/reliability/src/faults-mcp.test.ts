import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Env, type RolloutResult, runMany, scriptedPolicy, textOf } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { tsxAvailable } from "./child-process.js";
import { type NotesTask, notesTasks } from "./notes-env.js";
import { importOptional, warnSkip } from "./optional.js";

/**
 * Faults in an MCP tool source: the MCP server process dies in the middle of a tool call. That rollout ends
 * infra_error with the reason; the other rollouts of the run (on their own leased servers) are scored.
 */

type McpEnvClass = { create(cfg: Record<string, unknown>): Promise<Env> };
const mcp = await importOptional<{ McpEnv?: McpEnvClass; serveMcpStdio?: unknown }>("@benchmax/mcp");
const reason =
  mcp.reason ??
  (typeof mcp.mod?.McpEnv?.create === "function" && typeof mcp.mod?.serveMcpStdio === "function"
    ? tsxAvailable()
    : "@benchmax/mcp exports no McpEnv/serveMcpStdio yet");
warnSkip("MCP-server-crash fault tests", reason);

const here = dirname(fileURLToPath(import.meta.url));

describe.skipIf(!!reason)("faults: an MCP server crashes mid-call", () => {
  let env: Env | undefined;
  afterAll(async () => {
    await env?.close();
  });

  it("the crashed rollout → infra_error with the reason; every other rollout scored", async () => {
    const tasks = notesTasks(6);
    env = await mcp.mod!.McpEnv!.create({
      name: "notes-mcp",
      systemPrompt: "",
      servers: {
        s: {
          command: process.execPath,
          args: ["--conditions=@benchmax/source", "--import", "tsx", join(here, "child", "mcp-notes.ts")],
          cwd: join(here, ".."),
          healthIntervalMs: 0,
          maxServers: 3,
          callTimeoutMs: 20_000,
          // a tsx child takes seconds to start on a loaded machine; the fault under test is the crash, not the start
          startTimeoutMs: 120_000,
        },
      },
      tasks,
      reward: async (ctx: {
        server(): { callTool(t: string, a: unknown): Promise<{ content: unknown }> };
        task: NotesTask;
      }) => {
        const got = await ctx.server().callTool("read_file", { path: "answer.txt" });
        return { correct: textOf(got.content as string).trim() === ctx.task.groundTruth ? 1 : 0 };
      },
      rewardWeights: { correct: 1 },
    });
    const tools = env.listTools().map((t) => t.name);
    const write = tools.find((t) => t.endsWith("write_file"))!;
    const crash = tools.find((t) => t.endsWith("crash"))!;
    expect(write).toBeTruthy();
    expect(crash).toBeTruthy();
    const victim = "note-2";
    const policy = scriptedPolicy<NotesTask>("mcp-script", ({ task, turn }) => {
      if (turn === 0) return { calls: [{ name: write, arguments: { path: "answer.txt", content: task.groundTruth } }] };
      if (turn === 1 && task.id === victim) return { calls: [{ name: crash, arguments: {} }] };
      return { answer: "done" };
    });
    const { results } = await runMany(env, tasks, policy, { concurrency: 2, retries: 0 });
    const by = new Map(results.map((r) => [r.taskId, r] as [string, RolloutResult]));
    const dead = by.get(victim)!;
    expect(dead.outcome).toBe("infra_error");
    expect(dead.error).toMatch(/InfraError/);
    expect(dead.error).toMatch(/closed|exited|crash|died|connection/i);
    expect(dead.reward).toBeUndefined();
    for (const t of tasks) {
      if (t.id === victim) continue;
      expect(by.get(t.id)!.outcome, `${t.id}: ${by.get(t.id)!.error}`).toBe("completed");
      expect(by.get(t.id)!.reward).toBe(1);
    }
  });
});
