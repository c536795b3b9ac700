import { type Env, type RolloutResult, runMany, scriptedPolicy } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { type Child, startChild, tsxAvailable } from "./child-process.js";
import { type Fault, type FTask, fabricatedRewards, faultPolicy, mk } from "./faulty-env.js";
import { type NotesTask, notesTasks } from "./notes-env.js";
import { importOptional, warnSkip } from "./optional.js";

/**
 * Faults across the wire: an env server process killed (SIGKILL) or stopped (SIGSTOP) in the middle of a rollout.
 * With another server up, the rollout it held migrates there (rebuilt from the client's log by replay) and is scored
 * as if nothing happened; with none left, it ends infra_error with the reason ("migration failed: …"), never with an
 * invented reward. Faults behind the wire keep their outcomes.
 */

type Connect = (
  urls: string[],
  o: Record<string, unknown>,
) => Promise<
  Env & {
    endpoints?: Array<{ env: { activeRollouts: number; url: string; holds(id: string): boolean }; alive: boolean }>;
    alive?: string[];
    stats?: { migrations: number; replayedCalls: number; failedMigrations: number };
  }
>;
const server = await importOptional<{ connectRemoteEnv?: Connect; serveEnv?: unknown }>("@benchmax/server");
const reason =
  server.reason ??
  (typeof server.mod?.connectRemoteEnv === "function" && typeof server.mod?.serveEnv === "function"
    ? tsxAvailable()
    : "@benchmax/server exports no connectRemoteEnv/serveEnv yet");
warnSkip("env-server-killed fault tests", reason);

const TOKEN = "kill-test-token";

describe.skipIf(!!reason)("faults: an env server killed mid-rollout", () => {
  const children: Child[] = [];
  afterAll(async () => {
    for (const c of children) await c.kill();
  });

  /** Two notes env servers as child processes (killed after the suite), and a client over both. */
  async function twoServers(options: Record<string, unknown>) {
    const pair = await Promise.all([
      startChild("serve-notes", ["notes", TOKEN]),
      startChild("serve-notes", ["notes", TOKEN]),
    ]);
    children.push(...pair);
    const urls = pair.map((c) => c.hello.url as string);
    const env = await server.mod!.connectRemoteEnv!(urls, { token: TOKEN, ...options });
    return { pair, urls, env };
  }

  it("the killed server's rollout migrates to the other server and is scored; so is every other rollout", async () => {
    const { pair, urls, env } = await twoServers({ timeoutMs: 5_000, healthIntervalMs: 600_000 });
    const endpoints = env.endpoints!;
    expect(endpoints).toHaveLength(2);
    const tasks = notesTasks(12);
    const victim = "note-5";
    let killedUrl = "";
    const policy = scriptedPolicy<NotesTask>("killer", async ({ task, turn, rolloutId }) => {
      if (turn === 0)
        return { calls: [{ name: "write_file", arguments: { path: "answer.txt", content: task.groundTruth } }] };
      if (turn === 1 && task.id === victim) {
        const holder = endpoints.find((e) => e.env.holds(rolloutId))!;
        killedUrl = holder.env.url;
        await pair[urls.indexOf(killedUrl)]!.kill("SIGKILL");
        // answer.txt exists only in the rollout's state: the read finds it only if the write was replayed
        return { calls: [{ name: "read_file", arguments: { path: "answer.txt" } }] };
      }
      return { answer: "done" };
    });
    const retried: string[] = [];
    const { results } = await runMany(env, tasks, policy, {
      concurrency: 1,
      retries: 0,
      onEvent: (e) => {
        if (e.type === "retry") retried.push(e.rolloutId);
      },
    });
    await env.close();

    expect(killedUrl).not.toBe("");
    const byTask = new Map(results.map((r) => [r.taskId, r] as [string, RolloutResult]));
    const moved = byTask.get(victim)!;
    expect(moved.outcome, moved.error).toBe("completed");
    expect(moved.reward).toBe(1);
    // the read after the kill returned the replayed write
    expect(moved.messages.filter((m) => m.role === "tool").map((m) => m.content)).toContain(
      tasks.find((t) => t.id === victim)!.groundTruth,
    );
    for (const t of tasks) {
      const r = byTask.get(t.id)!;
      expect(r.outcome, `${t.id}: ${r.error}`).toBe("completed");
      expect(r.reward, t.id).toBe(1);
    }
    expect(retried).toEqual([]);
    expect(env.stats).toEqual({ migrations: 1, replayedCalls: 1, failedMigrations: 0 });
    // the dead endpoint is out of rotation
    expect(endpoints.find((e) => e.env.url === killedUrl)!.alive).toBe(false);
  });

  it("the only server killed mid-rollout → infra_error with the reason, no reward", async () => {
    const a = await startChild("serve-notes", ["notes", TOKEN]);
    children.push(a);
    const env = await server.mod!.connectRemoteEnv!([a.hello.url as string], { token: TOKEN, timeoutMs: 5_000 });
    const policy = scriptedPolicy<NotesTask>("killer", async ({ task, turn }) => {
      if (turn === 0)
        return { calls: [{ name: "write_file", arguments: { path: "answer.txt", content: task.groundTruth } }] };
      if (turn === 1) {
        await a.kill("SIGKILL");
        return { calls: [{ name: "read_file", arguments: { path: "answer.txt" } }] };
      }
      return { answer: "done" };
    });
    const { results } = await runMany(env, notesTasks(1), policy, { retries: 0 });
    await env.close();
    const dead = results[0]!;
    expect(dead.outcome).toBe("infra_error");
    expect(dead.error).toMatch(/InfraError/);
    expect(dead.error).toMatch(/migration failed/);
    expect(dead.error).toMatch(/ECONNREFUSED|ECONNRESET|socket hang up|connect|unreachable|down/i);
    expect(dead.reward).toBeUndefined();
    expect(dead.rewards).toBeUndefined();
  });

  it("a server stopped (SIGSTOP) mid-rollout: the rollout migrates; after SIGCONT the server is back in rotation", async () => {
    const { pair, urls, env } = await twoServers({
      timeoutMs: 60_000,
      probeAfterMs: 200,
      probeTimeoutMs: 3_000,
      healthIntervalMs: 100,
    });
    const endpoints = env.endpoints!;
    let stopped = -1;
    const policy = scriptedPolicy<NotesTask>("stopper", async ({ task, turn, rolloutId }) => {
      if (turn === 0)
        return { calls: [{ name: "write_file", arguments: { path: "answer.txt", content: task.groundTruth } }] };
      if (turn === 1) {
        stopped = endpoints.findIndex((e) => e.env.holds(rolloutId));
        pair[stopped]!.proc.kill("SIGSTOP");
        return { calls: [{ name: "read_file", arguments: { path: "answer.txt" } }] };
      }
      return { answer: "done" };
    });
    try {
      const { results } = await runMany(env, notesTasks(1), policy, { retries: 0 });
      expect(stopped).toBeGreaterThanOrEqual(0);
      expect(results[0]!.outcome, results[0]!.error).toBe("completed");
      expect(results[0]!.reward).toBe(1);
      expect(env.stats).toEqual({ migrations: 1, replayedCalls: 1, failedMigrations: 0 });
      expect(env.alive).toEqual([urls[1 - stopped]]);
    } finally {
      if (stopped >= 0) pair[stopped]!.proc.kill("SIGCONT");
    }
    // the server answers again: the prober takes it back, and frees the rollout left there while it hung
    for (let i = 0; i < 600 && env.alive!.length < 2; i++) await new Promise((r) => setTimeout(r, 50));
    expect(env.alive).toHaveLength(2);
    const active = async () =>
      ((await (await fetch(`${urls[stopped]}/health`)).json()) as { activeRollouts: number }).activeRollouts;
    for (let i = 0; i < 200 && (await active()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await active()).toBe(0);
    await env.close();
  });

  it("faults behind the wire: a throwing tool, a bad reward, a tool past the client's time limit → env_error / infra_error; the rest scored", async () => {
    const srv = await startChild("serve-notes", ["faulty", TOKEN]);
    children.push(srv);
    const env = await server.mod!.connectRemoteEnv!([srv.hello.url as string], { token: TOKEN, timeoutMs: 4_000 });
    const faults: Array<[Fault, "env_error" | "infra_error", RegExp]> = [
      ["tool_throws", "env_error", /tool "tool_throws" threw|EXECUTION_ERROR|HTTP 500/],
      ["reward_nan", "env_error", /non-finite|NaN/],
      ["reward_inf", "env_error", /non-finite|Infinity/],
      ["reward_throws", "env_error", /scorer crashed|HTTP 500/],
      ["tool_infra", "infra_error", /backend unreachable|HTTP 502|INFRA/],
      // the server-side tool never returns: the client's request time limit ends the rollout
      ["tool_hangs", "infra_error", /no answer within|time|abort/i],
    ];
    const good = Array.from({ length: 6 }, (_, i) => mk(`good-${i}`, "none"));
    const tasks: FTask[] = [...good, ...faults.map(([f]) => mk(f, f))];
    const { results } = await runMany(env, tasks, faultPolicy, { concurrency: 4, retries: 0, toolTimeoutMs: 30_000 });
    await env.close();
    const by = new Map(results.map((r) => [r.taskId, r] as [string, RolloutResult]));
    for (const [f, outcome, reason] of faults) {
      expect(by.get(f)!.outcome, `${f}: ${by.get(f)!.error}`).toBe(outcome);
      expect(by.get(f)!.error, f).toMatch(reason);
    }
    for (const t of good) {
      expect(by.get(t.id)!.outcome, `${t.id}: ${by.get(t.id)!.error}`).toBe("completed");
      expect(by.get(t.id)!.reward).toBe(1);
    }
    expect(fabricatedRewards(results)).toEqual([]);
  });
});
