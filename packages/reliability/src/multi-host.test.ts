import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { type Env, type RolloutResult, runMany, scriptedPolicy } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// a plain .mjs script (scripts/netns.d.mts types it): the same hosts bench/fleet.mjs makes
import { createHosts, netnsUnavailable, removeHosts, sh } from "../../../scripts/netns.mjs";
import { type Child, startChild, tsxAvailable } from "./child-process.js";
import { type NotesTask, notesTasks } from "./notes-env.js";
import { importOptional, warnSkip } from "./optional.js";

/**
 * A fleet across hosts: three network namespaces joined to this one by veth pairs (`ip netns`, iproute2), one env
 * server in each, listening only on its namespace's own address. A run is spread over them with RoutedEnv; one host
 * is killed mid-run. Its rollouts migrate to the other hosts (rebuilt from the client's logs by replay): no retry, none
 * is scored 0, and every rollout finishes. The same with SkyRL's shim (packages/skyrl/python, run by Debian's python3): its rollouts on the killed
 * host migrate to the live hosts (the client's log replayed), and every one is scored. The addresses (10.213.x.y/30) exist only inside the namespaces and veth pairs this test creates, and are
 * removed in afterAll. Needs root (CAP_NET_ADMIN); where namespaces are unavailable the test is skipped with the
 * reason printed.
 */

type Connect = (
  urls: string[],
  o: Record<string, unknown>,
) => Promise<
  Env & {
    endpoints?: Array<{
      env: { activeRollouts: number; url: string; holds(rolloutId: string): boolean };
      alive: boolean;
    }>;
    stats?: { migrations: number; replayedCalls: number; failedMigrations: number };
  }
>;
const server = await importOptional<{ connectRemoteEnv?: Connect }>("@benchmax/server");
const importReason =
  server.reason ??
  (typeof server.mod?.connectRemoteEnv === "function"
    ? tsxAvailable()
    : "@benchmax/server exports no connectRemoteEnv");
warnSkip("multi-host fleet test", importReason);

const TOKEN = "multi-host-token";
const tag = String(process.pid % 100_000);
const octet = (k: number) => ((process.pid % 80) * 3 + k) % 250;
const hosts = [0, 1, 2].map((k) => ({
  ns: `bmx${tag}h${k}`,
  hostIf: `bmh${tag}${k}`,
  nsIf: `bmn${tag}${k}`,
  hostAddr: `10.213.${octet(k)}.1`,
  addr: `10.213.${octet(k)}.2`,
}));

const nsReason = importReason ? undefined : netnsUnavailable(`bmx${tag}probe`);
if (nsReason) console.warn(`[reliability] SKIPPED multi-host fleet test: ${nsReason}`);

describe.skipIf(!!importReason || !!nsReason)("a fleet over network namespaces", () => {
  const children: Child[] = [];
  beforeAll(async () => {
    removeHosts(hosts);
    createHosts(hosts);
    for (const h of hosts) {
      children.push(await startChild("serve-notes", ["notes", TOKEN, h.addr], { wrap: ["ip", "netns", "exec", h.ns] }));
    }
  }, 60_000);
  afterAll(async () => {
    for (const c of children) await c.kill();
    removeHosts(hosts);
    for (const h of hosts) expect(sh(["ip", "netns", "list"]).out).not.toContain(h.ns);
  });

  it("each server is reachable only at its own host's address", async () => {
    for (const [i, c] of children.entries()) {
      expect(c.hello.url).toBe(`http://${hosts[i]!.addr}:${new URL(c.hello.url as string).port}`);
      const res = await fetch(`${c.hello.url}/health`);
      expect(((await res.json()) as { status: string }).status).toBe("healthy");
    }
    // nothing of it on this namespace's loopback
    const port = new URL(children[0]!.hello.url as string).port;
    await expect(fetch(`http://127.0.0.1:${port}/health`)).rejects.toThrow();
  });

  it("RoutedEnv spreads a run over the hosts; a host killed mid-run costs no retry and no 0: its rollouts migrate", async () => {
    const urls = children.map((c) => c.hello.url as string);
    const env = await server.mod!.connectRemoteEnv!(urls, {
      token: TOKEN,
      timeoutMs: 5_000,
      healthIntervalMs: 600_000,
    });
    const endpoints = env.endpoints!;
    expect(endpoints).toHaveLength(3);
    const tasks = notesTasks(30);
    let finished = 0;
    let killedUrl = "";
    let inFlightOnKilled = 0;
    const policy = scriptedPolicy<NotesTask>("multi-host", async ({ task, turn, rolloutId }) => {
      if (turn === 0)
        return { calls: [{ name: "write_file", arguments: { path: "answer.txt", content: task.groundTruth } }] };
      if (turn === 1) {
        if (!killedUrl && finished >= 9) {
          // kill the host holding this very rollout: its next call (read_file) lands on a dead host whatever the
          // timing of the others, so at least one migration is certain
          const victim = endpoints.find((e) => e.env.holds(rolloutId))!;
          killedUrl = victim.env.url;
          inFlightOnKilled = victim.env.activeRollouts;
          await children[urls.indexOf(killedUrl)]!.kill("SIGKILL");
        }
        return { calls: [{ name: "read_file", arguments: { path: "answer.txt" } }] };
      }
      return { answer: "done" };
    });
    const retried: string[] = [];
    const { results } = await runMany(env, tasks, policy, {
      concurrency: 6,
      retries: 2,
      retryDelayMs: 10,
      onEvent: (e) => {
        if (e.type === "retry") retried.push(e.rolloutId);
        if (e.type === "rollout") finished++;
      },
    });
    await env.close();

    expect(killedUrl).not.toBe("");
    expect(inFlightOnKilled).toBeGreaterThan(0);
    // every task has its result; a failure is infra_error without a reward, never a 0
    expect(results.map((r) => r.taskId).sort()).toEqual(tasks.map((t) => t.id).sort());
    const bad = results.filter((r: RolloutResult) => !(r.outcome === "completed" && r.reward === 1));
    for (const r of bad) {
      expect(r.outcome, `${r.taskId}: ${r.error}`).toBe("infra_error");
      expect(r.reward).toBeUndefined();
    }
    expect(results.filter((r) => r.reward === 0)).toEqual([]);
    // the killed host's rollouts migrated to the others (no retry: the runner saw nothing), and the dead host left
    // the rotation
    expect(retried).toEqual([]);
    expect(bad).toEqual([]);
    expect(env.stats!.migrations).toBeGreaterThan(0);
    expect(env.stats!.failedMigrations).toBe(0);
    expect(endpoints.find((e) => e.env.url === killedUrl)!.alive).toBe(false);
    console.log(
      `[reliability] multi-host: killed ${killedUrl} with ${inFlightOnKilled} rollouts in flight; ${env.stats!.migrations} migrated (${env.stats!.replayedCalls} calls replayed); ${results.length} of ${tasks.length} scored 1`,
    );
  });

  it("the SkyRL shim spread over the hosts: the killed host's rollouts migrate, every one scores 1", async () => {
    const shimDir = fileURLToPath(new URL("../../skyrl/python", import.meta.url));
    const python = "/usr/bin/python3";
    if (!existsSync(`${shimDir}/benchmax_skyrl/text_env.py`) || !existsSync(python)) {
      console.warn(`[reliability] SKIPPED the shim over the fleet: ${python} or ${shimDir} missing`);
      return;
    }
    // bring back the host killed by the previous test
    for (const [i, c] of children.entries()) {
      if (c.proc.exitCode !== null || c.proc.signalCode !== null) {
        children[i] = await startChild("serve-notes", ["notes", TOKEN, hosts[i]!.addr], {
          wrap: ["ip", "netns", "exec", hosts[i]!.ns],
        });
      }
    }
    const urls = children.map((c) => c.hello.url as string);
    const N = 12;
    const py = spawn(
      python,
      [fileURLToPath(new URL("./child/shim-fleet.py", import.meta.url)), urls.join(","), TOKEN, String(N)],
      {
        env: { ...process.env, PYTHONPATH: shimDir },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let stderr = "";
    py.stderr.on("data", (d) => (stderr += d));
    const results: Array<{ task: number; reward?: number; error?: string; migrations?: number }> = [];
    let killedUrl = "";
    let inFlight = 0;
    for await (const line of createInterface({ input: py.stdout })) {
      if (line === "KILL") {
        const active = await Promise.all(
          urls.map(
            async (u) => ((await (await fetch(`${u}/health`)).json()) as { activeRollouts: number }).activeRollouts,
          ),
        );
        const victim = active.indexOf(Math.max(...active));
        killedUrl = urls[victim]!;
        inFlight = active[victim]!;
        await children[victim]!.kill("SIGKILL");
        py.stdin.write("go\n");
      } else if (line === "DONE") break;
      else results.push(JSON.parse(line));
    }
    await new Promise((r) => py.once("exit", r));
    expect(stderr).not.toMatch(/Traceback/);
    expect(inFlight).toBeGreaterThan(0);
    expect(results.map((r) => r.task).sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    // the killed host's rollouts migrated to the live hosts (rebuilt from the client's log): no error, no 0
    expect(results.filter((r) => r.error !== undefined)).toEqual([]);
    for (const r of results) expect(r.reward, `task ${r.task}`).toBe(1);
    const moved = results.reduce((a, r) => a + (r.migrations ?? 0), 0);
    expect(moved).toBe(inFlight);
    expect(results.filter((r) => (r.migrations ?? 0) > 0).every((r) => r.task < N / 2)).toBe(true);
    console.log(
      `[reliability] multi-host shim: killed ${killedUrl} with ${inFlight} rollouts in flight; ${moved} migrated, ${N} of ${N} scored 1`,
    );
  }, 120_000);
});
