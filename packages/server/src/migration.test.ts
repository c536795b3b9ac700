import { connect, createServer, type Server, type Socket } from "node:net";
import { defineEnv, type Env, type Policy, runMany, scriptedPolicy, type Task, tool } from "@benchmax/core";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { connectRemoteEnv } from "./connect.js";
import { RemoteEnv } from "./remote-env.js";
import type { MigrationEvent } from "./rollout-log.js";
import type { RoutedEnv } from "./routed-env.js";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { noteTool, sleepTool } from "./test-env.js";

/**
 * Rollout migration: a rollout is a log (create body, fork lineage, tool calls with results), and when its server
 * dies, hangs, restarts or drains away, the client rebuilds it on a live server by replay and carries on. Real
 * `serveEnv` servers on 127.0.0.1; the env is stateful and its reward reads that state, so a rollout rebuilt wrong
 * scores differently from the same rollout run in process.
 */

type LedgerTask = Task<string>;

/** `note` appends to the rollout's ledger (returns it all); `roll` is random; the reward reads the ledger. */
function ledgerEnv(): Env {
  return defineEnv<LedgerTask, { notes: string[] }>({
    name: "ledger",
    description: "a per-rollout ledger",
    systemPrompt: "Write notes.",
    tools: [
      noteTool,
      tool<{ notes: string[] }>({
        name: "roll",
        description: "A random number (a tool no replay can reproduce)",
        parameters: z.object({}),
        execute: () => String(Math.random()),
      }),
      sleepTool,
    ],
    initState: () => ({ notes: [] }),
    reward: ({ state, task }) => {
      const want = task.groundTruth.split(",");
      const hit = want.filter((w, i) => state.notes[i] === w).length;
      return { exact: state.notes.join(",") === task.groundTruth ? 1 : 0, overlap: hit / want.length };
    },
    rewardWeights: { exact: 0.5, overlap: 0.5 },
  });
}

/** Tasks whose prompt lists the notes to write; some gold answers differ, so rewards vary between tasks. */
function ledgerTasks(n: number): LedgerTask[] {
  return Array.from({ length: n }, (_, i) => {
    const words = [`a${i}`, `b${i}`, `c${i}`];
    const gold = i % 3 === 0 ? [`a${i}`, `x${i}`, `c${i}`] : words;
    return { id: `L${i}`, prompt: words.join(" "), groundTruth: gold.join(",") };
  });
}

/** Writes the prompt's words one note per turn, then answers; `beforeTurn` runs first (the tests kill servers there). */
function ledgerPolicy(beforeTurn?: (a: { task: LedgerTask; turn: number; rolloutId: string }) => Promise<void>) {
  return scriptedPolicy<LedgerTask>("ledger-script", async (input) => {
    await beforeTurn?.(input);
    const words = (input.task.prompt ?? "").split(" ");
    if (input.turn < words.length) return { calls: [{ name: "note", arguments: { text: words[input.turn]! } }] };
    return { answer: "done" };
  });
}

const servers: EnvServer[] = [];
const proxies: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (proxies.length) await proxies.pop()!.close();
  while (servers.length) await servers.pop()!.close();
});

async function start(port?: number): Promise<EnvServer> {
  const s = await serveEnv(ledgerEnv(), port === undefined ? {} : { port });
  servers.push(s);
  return s;
}

async function stop(s: EnvServer): Promise<void> {
  servers.splice(servers.indexOf(s), 1);
  await s.close();
}

const snapshot = (s: EnvServer) => s.metrics.snapshot(0) as { rolloutsCreated: number; toolCalls: number };

/** Rewards by task of an in-process run: what every migrated rollout must score too. */
async function inProcessRewards(tasks: LedgerTask[], group = 1): Promise<Map<string, Record<string, number>>> {
  const env = ledgerEnv();
  const { results } = await runMany(env, tasks, ledgerPolicy(), { group, concurrency: 4, retries: 0 });
  await env.close();
  return new Map(results.map((r) => [r.rolloutId, r.rewards!]));
}

/**
 * A TCP relay in front of a server that can be frozen: a frozen relay accepts connections and reads nothing, and
 * stops passing bytes on the ones it has — what a client sees of a server stopped with SIGSTOP.
 */
async function freezableRelay(target: EnvServer): Promise<{ url: string; freeze(): void; close(): Promise<void> }> {
  let frozen = false;
  const pairs = new Set<[Socket, Socket | undefined]>();
  const server: Server = createServer((client) => {
    const pair: [Socket, Socket | undefined] = [client, undefined];
    pairs.add(pair);
    client.on("error", () => {});
    client.on("close", () => pairs.delete(pair));
    if (frozen) {
      client.pause();
      return;
    }
    const up = connect(target.port, "127.0.0.1");
    pair[1] = up;
    up.on("error", () => client.destroy());
    client.on("close", () => up.destroy());
    up.on("close", () => client.destroy());
    client.pipe(up);
    up.pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as { port: number }).port;
  const relay = {
    url: `http://127.0.0.1:${port}`,
    freeze() {
      frozen = true;
      for (const [c, u] of pairs) {
        c.unpipe();
        u?.unpipe();
        c.pause();
        u?.pause();
      }
    },
    async close() {
      for (const [c, u] of pairs) {
        c.destroy();
        u?.destroy();
      }
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  proxies.push(relay);
  return relay;
}

describe("rollout migration (RoutedEnv)", () => {
  it("a server killed mid-run: its rollouts migrate, none fails, each scores what it scores in process", async () => {
    const s = [await start(), await start(), await start()];
    const events: MigrationEvent[] = [];
    const env = (await connectRemoteEnv(
      s.map((x) => x.url),
      { healthIntervalMs: 600_000, onMigration: (e) => events.push(e) },
    )) as RoutedEnv;
    const tasks = ledgerTasks(12);
    let killed: EnvServer | undefined;
    let heldOnKilled = 0;
    // once a few rollouts are in flight, the server holding this one goes away between two of its calls
    const policy = ledgerPolicy(async ({ turn, rolloutId }) => {
      if (killed || turn !== 2 || rolloutId !== "L4#0") return;
      const holder = env.endpoints.find((e) => e.env.holds(rolloutId))!;
      heldOnKilled = holder.env.activeRollouts;
      killed = s[env.endpoints.indexOf(holder)]!;
      await stop(killed);
    });
    const retried: string[] = [];
    const { results } = await runMany(env, tasks, policy, {
      concurrency: 6,
      retries: 0,
      onEvent: (e) => {
        if (e.type === "retry") retried.push(e.rolloutId);
      },
    });
    const want = await inProcessRewards(tasks);
    expect(killed).toBeDefined();
    expect(heldOnKilled).toBeGreaterThan(0);
    expect(retried).toEqual([]);
    for (const r of results) {
      expect(r.outcome, `${r.rolloutId}: ${r.error}`).toBe("completed");
      expect(r.rewards, r.rolloutId).toEqual(want.get(r.rolloutId));
    }
    // some rewards are below 1: the comparison is not all-ones
    expect(results.some((r) => (r.reward ?? 1) < 1)).toBe(true);
    expect(env.stats.migrations).toBeGreaterThanOrEqual(1);
    expect(env.stats.failedMigrations).toBe(0);
    expect(env.stats.replayedCalls).toBeGreaterThanOrEqual(2);
    expect(events.every((e) => e.ok && e.from === killed!.url && e.to !== killed!.url)).toBe(true);
    expect(env.alive).not.toContain(killed!.url);
    console.log(
      `[migration] killed ${killed!.url} holding ${heldOnKilled} rollouts: ${env.stats.migrations} migrated, ${env.stats.replayedCalls} calls replayed, ms: ${events.map((e) => e.ms.toFixed(1)).join(" ")}`,
    );
    await env.close();
  });

  it("forks of a lost parent are rebuilt from their own logs (create + the parent's calls + their own)", async () => {
    const [a, b] = [await start(), await start()];
    const env = (await connectRemoteEnv([a.url, b.url], { healthIntervalMs: 600_000 })) as RoutedEnv;
    const task: LedgerTask = { id: "f", prompt: "p", groundTruth: "p1,p2,c1,c3" };
    await env.init("parent", task);
    const home = env.endpoints.find((e) => e.env.holds("parent"))!;
    const [src, dst] = home.env.url === a.url ? [a, b] : [b, a];
    expect(await env.runTool("parent", { name: "note", arguments: { text: "p1" } })).toMatchObject({ content: "p1" });
    expect(await env.runTool("parent", { name: "note", arguments: { text: "p2" } })).toMatchObject({
      content: "p1,p2",
    });
    await env.capabilities.fork!.fork("parent", ["k1", "k2"]);
    expect(home.env.logOf("k1")).toMatchObject({ lineage: [{ parent: "parent", calls: 2 }] });
    expect(await env.runTool("k1", { name: "note", arguments: { text: "c1" } })).toMatchObject({
      content: "p1,p2,c1",
    });
    await env.release("parent");
    const created = snapshot(dst).rolloutsCreated;
    await stop(src); // the parent is gone with its server; the children were on it too
    expect(await env.runTool("k2", { name: "note", arguments: { text: "c2" } })).toMatchObject({
      content: "p1,p2,c2",
    });
    expect(await env.runTool("k1", { name: "note", arguments: { text: "c3" } })).toMatchObject({
      content: "p1,p2,c1,c3",
    });
    // two creates on the new server, no fork there: 2 replayed calls for k2, 3 for k1
    expect(snapshot(dst).rolloutsCreated - created).toBe(2);
    expect(env.stats).toEqual({ migrations: 2, replayedCalls: 5, failedMigrations: 0 });
    // the reward goes to the new server and reads the rebuilt state
    const rk1 = await env.computeReward("k1", [], task);
    expect(rk1).toEqual({ exact: 1, overlap: 1 });
    await env.release("k1");
    await env.release("k2");
    expect(dst.activeRollouts).toBe(0);
    await env.close();
  });

  it("a GRPO group forked on a server killed mid-run completes with its in-process rewards", async () => {
    const [a, b] = [await start(), await start()];
    const env = (await connectRemoteEnv([a.url, b.url], { healthIntervalMs: 600_000 })) as RoutedEnv;
    const tasks = ledgerTasks(2);
    let killed = false;
    const policy = ledgerPolicy(async ({ turn, rolloutId }) => {
      if (killed || turn !== 1 || rolloutId !== "L0#1") return;
      killed = true;
      const holder = env.endpoints.find((e) => e.env.holds(rolloutId))!;
      await stop(holder.env.url === a.url ? a : b);
    });
    const { results } = await runMany(env, tasks, policy, { group: 3, concurrency: 6, retries: 0 });
    const want = await inProcessRewards(tasks, 3);
    expect(killed).toBe(true);
    expect(results).toHaveLength(6);
    for (const r of results) {
      expect(r.outcome, `${r.rolloutId}: ${r.error}`).toBe("completed");
      expect(r.rewards, r.rolloutId).toEqual(want.get(r.rolloutId));
    }
    expect(env.stats.migrations).toBeGreaterThanOrEqual(1);
    expect(env.stats.failedMigrations).toBe(0);
    await env.close();
  });

  it("a tool that answers differently on replay fails the migration as infra_error, never a 0", async () => {
    const [a, b] = [await start(), await start()];
    const events: MigrationEvent[] = [];
    const env = (await connectRemoteEnv([a.url, b.url], {
      healthIntervalMs: 600_000,
      onMigration: (e) => events.push(e),
    })) as RoutedEnv;
    const task: LedgerTask = { id: "dice", prompt: "roll", groundTruth: "r" };
    const policy: Policy = scriptedPolicy("dice", async ({ turn, rolloutId }) => {
      if (turn === 0) return { calls: [{ name: "note", arguments: { text: "r" } }] };
      if (turn === 1) return { calls: [{ name: "roll", arguments: {} }] };
      if (turn === 2) {
        const holder = env.endpoints.find((e) => e.env.holds(rolloutId))!;
        await stop(holder.env.url === a.url ? a : b);
        return { calls: [{ name: "note", arguments: { text: "s" } }] };
      }
      return { answer: "done" };
    });
    const { results } = await runMany(env, [task], policy, { retries: 0 });
    const r = results[0]!;
    expect(r.outcome).toBe("infra_error");
    expect(r.error).toMatch(/migration failed: replayed call 2 of 2 \(roll\)/);
    expect(r.reward).toBeUndefined();
    expect(r.rewards).toBeUndefined();
    expect(env.stats).toMatchObject({ migrations: 0, failedMigrations: 1 });
    expect(events).toMatchObject([{ ok: false, rolloutId: "dice#0" }]);
    // the half-built copy on the surviving server was released
    const survivor = servers[0]!;
    for (let i = 0; i < 100 && survivor.activeRollouts > 0; i++) await new Promise((res) => setTimeout(res, 20));
    expect(survivor.activeRollouts).toBe(0);
    // the runner retries an infra error as a fresh rollout (here on the surviving server), scored on its own
    const again = await runMany(
      env,
      [task],
      scriptedPolicy("note-once", ({ turn }) =>
        turn === 0 ? { calls: [{ name: "note", arguments: { text: "r" } }] } : { answer: "done" },
      ),
      { retries: 1 },
    );
    expect(again.results[0]).toMatchObject({ outcome: "completed", reward: 1 });
    await env.close();
  });

  it("no endpoint left: migration failed, infra_error", async () => {
    const [a, b] = [await start(), await start()];
    const env = (await connectRemoteEnv([a.url, b.url], { healthIntervalMs: 600_000 })) as RoutedEnv;
    await env.init("r", { id: "t", prompt: "x", groundTruth: "x" });
    await env.runTool("r", { name: "note", arguments: { text: "x" } });
    await stop(a);
    await stop(b);
    await expect(env.runTool("r", { name: "note", arguments: { text: "y" } })).rejects.toMatchObject({
      name: "InfraError",
      message: expect.stringMatching(/migration failed: no live endpoint left/),
    });
    // later calls fail the same way; release is a no-op
    await expect(env.computeReward("r", [], { id: "t", groundTruth: "x" })).rejects.toThrow(/migration failed/);
    await env.release("r");
    expect(env.stats).toEqual({ migrations: 0, replayedCalls: 0, failedMigrations: 1 });
    await env.close();
  });

  it("a server restarted on the same port is a new instance: the rollout is re-created there, never continued as if the same", async () => {
    const a = await start();
    const b = await start();
    const env = (await connectRemoteEnv([a.url, b.url], { healthIntervalMs: 600_000 })) as RoutedEnv;
    await env.init("r", { id: "t", prompt: "x", groundTruth: "x" });
    const home = env.endpoints.find((e) => e.env.holds("r"))!;
    const [src, other] = home.env.url === a.url ? [a, b] : [b, a];
    const oldInstance = home.env.instanceOf("r");
    await env.runTool("r", { name: "note", arguments: { text: "one" } });
    await env.runTool("r", { name: "note", arguments: { text: "two" } });
    // the other endpoint goes away, and the rollout's own server restarts on its port
    await stop(other);
    await stop(src);
    const fresh = await start(src.port);
    expect(await env.runTool("r", { name: "note", arguments: { text: "three" } })).toMatchObject({
      content: "one,two,three",
    });
    expect(home.env.holds("r")).toBe(true);
    expect(home.env.instanceOf("r")).not.toBe(oldInstance);
    // one create, and the calls it got are the two replayed and the new one: no call of the old rollout ran there
    expect(snapshot(fresh)).toMatchObject({ rolloutsCreated: 1, toolCalls: 3 });
    expect(env.stats).toEqual({ migrations: 1, replayedCalls: 2, failedMigrations: 0 });
    await env.close();
  });

  it("a dead endpoint leaves the rotation at once and is back once its /health answers", async () => {
    const a = await start();
    const b = await start();
    const env = (await connectRemoteEnv([a.url, b.url], { healthIntervalMs: 50 })) as RoutedEnv;
    await env.init("r", { id: "t", prompt: "x", groundTruth: "x" });
    const home = env.endpoints.find((e) => e.env.holds("r"))!;
    const src = home.env.url === a.url ? a : b;
    await stop(src);
    await env.runTool("r", { name: "note", arguments: { text: "x" } });
    expect(env.alive).not.toContain(src.url);
    await start(src.port);
    for (let i = 0; i < 400 && !env.alive.includes(src.url); i++) await new Promise((r) => setTimeout(r, 25));
    expect(env.alive).toContain(src.url);
    await env.close();
  });

  it("a hung server (no answer, /health silent) loses its rollout to a live one; a long call on a healthy server is not a hang", async () => {
    const a = await start();
    const b = await start();
    const relay = await freezableRelay(a);
    const env = (await connectRemoteEnv([relay.url, b.url], {
      healthIntervalMs: 600_000,
      probeAfterMs: 100,
      probeTimeoutMs: 3_000,
    })) as RoutedEnv;
    // first rollout goes to the first endpoint (equal load): the relayed server
    await env.init("r", { id: "t", prompt: "x", groundTruth: "x" });
    expect(env.endpoints[0]!.env.holds("r")).toBe(true);
    await env.runTool("r", { name: "note", arguments: { text: "one" } });
    // a call longer than several probe periods on a healthy server: it waits, nothing migrates
    expect(await env.runTool("r", { name: "sleep", arguments: { ms: 600 } })).toMatchObject({ content: "slept" });
    expect(env.stats.migrations).toBe(0);
    relay.freeze();
    expect(await env.runTool("r", { name: "note", arguments: { text: "two" } })).toMatchObject({
      content: "one,two",
    });
    expect(env.endpoints[1]!.env.holds("r")).toBe(true);
    expect(env.alive).toEqual([b.url]);
    expect(env.stats).toEqual({ migrations: 1, replayedCalls: 2, failedMigrations: 0 });
    await env.close();
  });

  it("a draining server gets no new rollouts, keeps serving its live ones, and they migrate when it goes away", async () => {
    const a = await start();
    const b = await start();
    const env = (await connectRemoteEnv([a.url, b.url], { healthIntervalMs: 600_000 })) as RoutedEnv;
    await env.init("r", { id: "t", prompt: "x", groundTruth: "x" });
    const home = env.endpoints.find((e) => e.env.holds("r"))!;
    const [src, dst] = home.env.url === a.url ? [a, b] : [b, a];
    await env.runTool("r", { name: "note", arguments: { text: "one" } });
    const drained = src.drain(600_000);
    // new rollouts: refused there (503 DRAINING) and taken by the other server
    for (let i = 0; i < 4; i++) await env.init(`n${i}`, { id: `t${i}`, prompt: "x", groundTruth: "x" });
    for (let i = 0; i < 4; i++) expect(home.env.holds(`n${i}`)).toBe(false);
    expect(env.draining).toEqual([src.url]);
    // the live rollout stays where it is while the server drains
    expect(await env.runTool("r", { name: "note", arguments: { text: "two" } })).toMatchObject({
      content: "one,two",
    });
    expect(home.env.holds("r")).toBe(true);
    expect(env.stats.migrations).toBe(0);
    // the server goes away (its grace cut short): the rollout moves
    servers.splice(servers.indexOf(src), 1);
    await src.close();
    await drained;
    expect(await env.runTool("r", { name: "note", arguments: { text: "three" } })).toMatchObject({
      content: "one,two,three",
    });
    expect(env.endpoints.find((e) => e.env.url === dst.url)!.env.holds("r")).toBe(true);
    expect(env.stats).toEqual({ migrations: 1, replayedCalls: 2, failedMigrations: 0 });
    await env.close();
  });
});

describe("rollout migration (a single RemoteEnv)", () => {
  it("rebuilds the rollout on its restarted server, and fails as infra_error when the server stays gone", async () => {
    const s1 = await start();
    const env = (await connectRemoteEnv([s1.url])) as RemoteEnv;
    expect(env).toBeInstanceOf(RemoteEnv);
    const task: LedgerTask = { id: "t", prompt: "one two three", groundTruth: "one,two,three" };
    let restarted: EnvServer | undefined;
    const policy = ledgerPolicy(async ({ turn }) => {
      if (turn === 2 && !restarted) {
        await stop(s1);
        restarted = await start(s1.port);
      }
    });
    const { results } = await runMany(env, [task], policy, { retries: 0 });
    expect(results[0]).toMatchObject({ outcome: "completed", reward: 1 });
    expect(snapshot(restarted!)).toMatchObject({ rolloutsCreated: 1, toolCalls: 3 });
    expect(env.stats).toEqual({ migrations: 1, replayedCalls: 2, failedMigrations: 0 });
    let gone = false;
    const policy2 = ledgerPolicy(async ({ turn }) => {
      if (turn === 1 && !gone) {
        gone = true;
        await stop(restarted!);
      }
    });
    const again = await runMany(env, [task], policy2, { retries: 0 });
    expect(again.results[0]!.outcome).toBe("infra_error");
    expect(again.results[0]!.error).toMatch(/migration failed: no live server left/);
    expect(again.results[0]!.reward).toBeUndefined();
    expect(env.stats.failedMigrations).toBe(1);
    await env.close();
  });
});
