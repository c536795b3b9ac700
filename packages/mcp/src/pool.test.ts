import { existsSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { McpEndpoint } from "./endpoint.js";
import { McpEnv } from "./mcp-env.js";
import { ServerPool, type ServerPoolOptions } from "./pool.js";
import { serveMcpHttp } from "./serve-mcp.js";
import { testServer } from "./test-utils/servers.js";
import { sumEnv } from "./test-utils/sum-env.js";

const counter: McpEndpoint = { type: "stdio", command: process.execPath, args: [testServer("lean-counter.mjs")] };
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const pidOf = async (pool: ServerPool, rollout: string) => {
  const lease = await pool.acquire(rollout);
  return { lease, pid: lease.server.conn.pid! };
};

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});
function track<T extends { close(): Promise<unknown> }>(x: T): T {
  cleanups.push(() => x.close());
  return x;
}

/** A tracked pool of lean-counter servers (no health checks unless asked), with the types of the events it emits. */
function counterPool(options: Partial<ServerPoolOptions> = {}) {
  const events: string[] = [];
  const pool = track(
    new ServerPool({
      name: "c",
      endpoints: [counter],
      healthIntervalMs: 0,
      onEvent: (e) => events.push(e.type),
      ...options,
    }),
  );
  return { pool, events };
}

describe("ServerPool", () => {
  it("keeps warm spares and replaces a leased server with a fresh process after each rollout (restart)", async () => {
    const { pool } = counterPool({ warm: 2 });
    await pool.warmUp();
    expect(pool.stats()).toMatchObject({ idle: 2, leased: 0 });
    const { lease, pid } = await pidOf(pool, "r1");
    expect(lease.server.conn.alive).toBe(true);
    await lease.release();
    await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false);
    const next = await pool.acquire("r2");
    expect(next.server.conn.pid).not.toBe(pid);
    await next.release();
  });

  it("skips an idle server that fails its ping on acquire (frozen process) and replaces it", async () => {
    const { pool } = counterPool({ warm: 1, reset: "none", pingOnAcquire: true, pingTimeoutMs: 300 });
    await pool.warmUp();
    const first = await pool.acquire("a");
    const pid = first.server.conn.pid!;
    await first.release(); // reset "none": back to the idle list as is
    await expect.poll(() => pool.stats().idle, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    const idleIds = () => (pool as unknown as { idle: { id: number }[] }).idle.map((s) => s.id);
    expect(idleIds()).toContain(first.server.id);
    process.kill(pid, "SIGSTOP");
    const seen: number[] = [];
    for (let i = 0; i < 2; i++) {
      const l = await pool.acquire(`r${i}`);
      seen.push(l.server.id);
    }
    expect(seen).not.toContain(first.server.id);
    await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false); // discarded with SIGKILL
  });

  it("notices a spare killed from outside and starts another", async () => {
    const { pool, events } = counterPool({ warm: 1 });
    await pool.warmUp();
    const spare = (pool as unknown as { idle: { id: number; conn: { pid: number } }[] }).idle[0]!;
    process.kill(spare.conn.pid, "SIGKILL");
    await expect.poll(() => events.includes("discard"), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => pool.stats().idle, { timeout: 10_000 }).toBe(1);
    const l = await pool.acquire("a");
    expect(l.server.id).not.toBe(spare.id);
    expect(l.server.conn.alive).toBe(true);
    await l.release();
  });

  it("health checks find a frozen idle server and replace it", async () => {
    const { pool, events } = counterPool({ warm: 1, reset: "none", healthIntervalMs: 200, pingTimeoutMs: 200 });
    await pool.warmUp();
    const l = await pool.acquire("a");
    const pid = l.server.conn.pid!;
    await l.release();
    process.kill(pid, "SIGSTOP");
    await expect.poll(() => events.includes("health_failed"), { timeout: 10_000 }).toBe(true);
    await expect.poll(() => alive(pid), { timeout: 10_000 }).toBe(false);
    await expect.poll(() => pool.stats().idle, { timeout: 10_000 }).toBe(1);
  });

  it("leases each HTTP endpoint to one rollout at a time, with a fresh session per rollout", async () => {
    const a = sumEnv();
    const b = sumEnv();
    const sa = track(await serveMcpHttp(a.env, { port: 0 }));
    const sb = track(await serveMcpHttp(b.env, { port: 0 }));
    const pool = track(
      new ServerPool({
        name: "sum",
        endpoints: [
          { type: "http", url: sa.url },
          { type: "http", url: sb.url },
        ],
        warm: 0,
        acquireTimeoutMs: 1_500,
        healthIntervalMs: 0,
      }),
    );
    expect(pool.maxServers).toBe(2);
    const l1 = await pool.acquire("r1");
    const l2 = await pool.acquire("r2");
    expect(new Set([l1.server.endpoint, l2.server.endpoint]).size).toBe(2);
    await expect(pool.acquire("r3")).rejects.toThrow(/exhausted.*max 2/);
    await l1.release();
    const l3 = await pool.acquire("r4");
    expect(l3.server.endpoint).toEqual(l1.server.endpoint);
    const sessions = async () => {
      let n = 0;
      for (const u of [sa.url, sb.url])
        n += ((await (await fetch(u.replace(/mcp$/, "health"))).json()) as { sessions: number }).sessions;
      return n;
    };
    expect(await sessions()).toBe(2);
    await l2.release();
    await l3.release();
    await expect.poll(sessions, { timeout: 10_000 }).toBe(0);
  });

  it("replaces {workspace} in a server's env values as well as its args", async () => {
    const endpoint: McpEndpoint = {
      type: "stdio",
      command: process.execPath,
      args: [testServer("counter.mjs")],
      env: { MEMORY_FILE_PATH: "{workspace}/memory.json" },
    };
    const pool = new ServerPool({ name: "m", endpoints: [endpoint], workspace: true, healthIntervalMs: 0 });
    try {
      const l = await pool.acquire("a");
      const r = await l.server.conn.callTool("env", { name: "MEMORY_FILE_PATH" }, 5_000);
      expect((r.content as Array<{ text: string }>)[0]!.text).toBe(`${l.server.workspace!.dir}/memory.json`);
      await l.release();
    } finally {
      await pool.close();
    }
  });

  it("shuts down gracefully: every process exits and every workspace is removed", async () => {
    const pool = new ServerPool({ name: "c", endpoints: [counter], warm: 3, workspace: true, healthIntervalMs: 0 });
    await pool.warmUp();
    const l = await pool.acquire("a");
    const dir = l.server.workspace!.dir;
    const pid = l.server.conn.pid!;
    expect(existsSync(dir)).toBe(true);
    await pool.close();
    expect(alive(pid)).toBe(false);
    expect(existsSync(dir)).toBe(false);
    await expect(pool.acquire("b")).rejects.toThrow(/closed/);
  });
});

describe("McpEnv over a served env (serveMcpHttp → McpEnv)", () => {
  it("runs rollouts against a benchmax env exposed over MCP", async () => {
    const { env: inner } = sumEnv();
    const served = track(await serveMcpHttp(inner, { port: 0 }));
    const handles = new Map<string, { rolloutId: string; token: string }>();
    const env = track(
      await McpEnv.create({
        name: "sum-over-mcp",
        systemPrompt: "",
        namespace: "none",
        servers: { sum: { url: served.url, include: ["add"], healthIntervalMs: 0 } },
        // the harness channel: put the leased session on the rollout's task, then score it there
        setup: async (ctx) => {
          const transport = ctx.server().connection.transport as { sessionId?: string };
          const res = await fetch(served.url.replace(/\/mcp$/, "/v1/rollouts"), {
            method: "POST",
            body: JSON.stringify({ taskId: "five", session: transport.sessionId }),
          });
          handles.set(ctx.rolloutId, (await res.json()) as { rolloutId: string; token: string });
        },
        reward: async (ctx) => {
          const h = handles.get(ctx.rolloutId)!;
          const res = await fetch(served.url.replace(/\/mcp$/, `/v1/rollouts/${h.rolloutId}/reward`), {
            method: "POST",
            headers: { "x-rollout-token": h.token },
            body: JSON.stringify({ completion: ctx.completion }),
          });
          return ((await res.json()) as { rewards: Record<string, number> }).rewards;
        },
      }),
    );
    expect(env.listTools().map((t) => t.name)).toEqual(["add"]);
    await env.init("r", { id: "x", prompt: "", groundTruth: null });
    expect((await env.runTool("r", { name: "add", arguments: { n: 5 } })).content).toBe("total=5");
    expect(
      await env.computeReward("r", [{ role: "assistant", content: "5" }], { id: "x", prompt: "", groundTruth: null }),
    ).toEqual({ total: 1, answer: 1 });
    await env.release("r");
  });
});
