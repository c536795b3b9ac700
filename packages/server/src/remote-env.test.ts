import { runMany, runRollout, scriptedPolicy, type Task } from "@benchmax/core";
import { afterEach, describe, expect, it } from "vitest";
import { connectRemoteEnv } from "./connect.js";
import { RemoteEnv } from "./remote-env.js";
import { RoutedEnv } from "./routed-env.js";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { calcEnv } from "./test-env.js";

const servers: EnvServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});
async function start(opts: Parameters<typeof serveEnv>[1] = {}) {
  const s = await serveEnv(calcEnv(), opts);
  servers.push(s);
  return s;
}

/** Adds the two numbers of the prompt with the tool, then answers. */
const solver = scriptedPolicy("solver", ({ task, turn, messages }) => {
  if (turn === 0) {
    const [a, b] = (task.prompt ?? "").match(/\d+/g)!.map(Number);
    return { calls: [{ name: "add", arguments: { a, b } }] };
  }
  const last = messages[messages.length - 1]!;
  return { answer: `<answer>${String(last.content)}</answer>` };
});

describe("RemoteEnv", () => {
  it("runs rollouts against a server, with server-side tasks, inline tasks, forks and group rewards", async () => {
    const s = await start({ token: "tk" });
    const env = await connectRemoteEnv([s.url], { token: "tk" });
    expect(env).toBeInstanceOf(RemoteEnv);
    expect(env.name).toBe("calc");
    expect(env.listTools().map((t) => t.name)).toContain("add");
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    expect(tasks.map((t) => t.id)).toEqual(["t1", "t2", "t3"]);
    expect(tasks[0]!.groundTruth).toBeUndefined();
    const r = await runRollout(env, tasks[1]!, solver);
    expect(r).toMatchObject({ outcome: "completed", reward: 1, toolCalls: 1 });
    expect((r.messages[0]!.content as string).startsWith("You add numbers.")).toBe(true);
    const inline: Task = { id: "inline", prompt: "What is 4 + 4?", groundTruth: "8" };
    expect((await runRollout(env, inline, solver)).reward).toBe(1);
    const many = await runMany(env, tasks, solver, { group: 3, concurrency: 4 });
    expect(many.results).toHaveLength(9);
    expect(many.results.every((x) => x.outcome === "completed" && x.rewards?.exact_match === 1)).toBe(true);
    expect(many.results.map((x) => x.rewards?.rank).sort()).toEqual([0, 0, 0, 1, 1, 1, 2, 2, 2]);
    expect(s.metrics.snapshot(0)).toMatchObject({ rolloutsCreated: 2 + 3 * 3 });
    await env.close();
  });

  it("turns a wrong token into a non-retryable infra error", async () => {
    const s = await start({ token: "tk" });
    await expect(connectRemoteEnv([s.url], { token: "bad" })).rejects.toMatchObject({
      name: "InfraError",
      retryable: false,
    });
  });

  it("rebuilds a rollout on its restarted server (a new instance) by replay; a server gone for good is infra_error", async () => {
    const s1 = await serveEnv(calcEnv());
    const env = (await connectRemoteEnv([s1.url])) as RemoteEnv;
    const port = s1.port;
    let s2: EnvServer | undefined;
    // `note` keeps per-rollout state: the third call answers "a,b,c" only if the first two were replayed
    const policy = scriptedPolicy("restarts", async ({ turn, messages }) => {
      if (turn === 0) return { calls: [{ name: "note", arguments: { text: "a" } }] };
      if (turn === 1) return { calls: [{ name: "note", arguments: { text: "b" } }] };
      if (turn === 2) {
        await s1.close();
        s2 = await serveEnv(calcEnv(), { port });
        servers.push(s2);
        return { calls: [{ name: "note", arguments: { text: "c" } }] };
      }
      return { answer: `<answer>${String(messages[messages.length - 1]!.content)}</answer>` };
    });
    const r = await runRollout(env, { id: "t", prompt: "notes", groundTruth: "a,b,c" }, policy);
    expect(r).toMatchObject({ outcome: "completed", reward: 1 });
    expect(env.stats).toEqual({ migrations: 1, replayedCalls: 2, failedMigrations: 0 });
    expect(s2!.metrics.snapshot(0)).toMatchObject({ rolloutsCreated: 1, toolCalls: 3 });
    // and a server that is gone entirely: nowhere to rebuild it
    await s2!.close();
    const r2 = await runRollout(env, { id: "t", prompt: "1+2", groundTruth: "3" }, solver);
    expect(r2.outcome).toBe("infra_error");
    expect(r2.error).toMatch(/unreachable/);
    expect(r2.reward).toBeUndefined();
  });
});

describe("RoutedEnv", () => {
  it("spreads rollouts, keeps affinity, and sends new rollouts away from a dead endpoint", async () => {
    const a = await start();
    const b = await start();
    const env = (await connectRemoteEnv([a.url, b.url], { healthIntervalMs: 60_000 })) as RoutedEnv;
    expect(env).toBeInstanceOf(RoutedEnv);
    const tasks = await env.capabilities.tasks!.loadTasks!();
    const res = await runMany(env, tasks, solver, { group: 2, concurrency: 6 });
    expect(res.results.every((r) => r.reward === 1)).toBe(true);
    const created = (s: EnvServer) => s.metrics.snapshot(0).rolloutsCreated as number;
    expect(created(a)).toBeGreaterThan(0);
    expect(created(b)).toBeGreaterThan(0);
    // a rollout held by an endpoint that dies migrates to the other one
    await env.init("held", tasks[0]!);
    const holder = created(a) + created(b);
    const victim = a.metrics.snapshot(0).activeRollouts ? a : b;
    const survivor = victim === a ? b : a;
    expect(holder).toBeGreaterThan(0);
    await victim.close();
    servers.splice(servers.indexOf(victim), 1);
    expect(await env.runTool("held", { name: "add", arguments: { a: 1, b: 1 } })).toMatchObject({ content: "2" });
    expect(env.stats).toEqual({ migrations: 1, replayedCalls: 0, failedMigrations: 0 });
    await env.release("held");
    const before = created(survivor);
    const again = await runMany(env, tasks, solver, { concurrency: 3 });
    expect(again.results.every((r) => r.outcome === "completed")).toBe(true);
    expect(created(survivor) - before).toBe(3);
    expect(env.alive).toEqual([survivor.url]);
    await env.close();
  });

  it("starts with unreachable endpoints marked dead", async () => {
    const a = await start();
    const env = (await connectRemoteEnv([a.url, "http://127.0.0.1:1"])) as RoutedEnv;
    expect(env.alive).toEqual([a.url]);
    const r = await runRollout(env, { id: "t", prompt: "1+2", groundTruth: "3" }, solver);
    expect(r.reward).toBe(1);
    await env.close();
  });
});
