import type { Env, Policy, RolloutResult, Task } from "@benchmax/core";
import { runMany } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { type Child, startChild, tsxAvailable } from "./child-process.js";
import { raw } from "./http-client.js";
import { notesPolicy, notesTasks } from "./notes-env.js";
import { ENV_NAMES, importOptional, loadEnv, warnSkip } from "./optional.js";

/**
 * A reduced soak (the full 10,000 rollouts run in bench/soak.mjs): rollouts through env servers in a child process
 * (the notes env plus every env package that has landed), measured in that process after a warm-up and a full GC:
 * RSS growth < 5 %, no leaked workspaces, file descriptors or child processes, no live rollouts left.
 */

const ROLLOUTS = Number(process.env.BENCHMAX_SOAK_ROLLOUTS ?? 500);
const WARMUP = Math.round(ROLLOUTS * 0.5);
const CONCURRENCY = 8;
const TOKEN = "soak-token";

type Connect = (urls: string[], o: Record<string, unknown>) => Promise<Env>;
const server = await importOptional<{ connectRemoteEnv?: Connect; serveEnv?: unknown }>("@benchmax/server");
const reason =
  process.platform !== "linux"
    ? "the soak test reads /proc (Linux only)"
    : (server.reason ??
      (typeof server.mod?.connectRemoteEnv === "function"
        ? tsxAvailable()
        : "@benchmax/server exports no connectRemoteEnv yet"));
warnSkip("soak test", reason);

interface Stats {
  rss: number;
  heapUsed: number;
  fds: number;
  workspaces: number;
  children: number;
}

/** Envs of the mix besides notes: landed env packages with a reference policy. */
const mix: Array<{ name: string; tasks: Task[]; policy: Policy }> = [];
if (!reason) {
  for (const name of ENV_NAMES) {
    const got = await loadEnv(name);
    if (!got.env) {
      warnSkip(`env "${name}" in the soak mix`, got.reason);
      continue;
    }
    const local = await got.env.create();
    const policy = local.capabilities?.reference?.referencePolicy();
    await local.close();
    if (!policy) {
      warnSkip(`env "${name}" in the soak mix`, "it has no referencePolicy()");
      continue;
    }
    mix.push({ name, tasks: got.env.tasks, policy });
  }
}

/** `n` tasks cycling over `base`, with ids unique within a run. */
function cycle(base: Task[], n: number, tag: string): Task[] {
  return Array.from({ length: n }, (_, i) => ({
    ...base[i % base.length]!,
    id: `${base[i % base.length]!.id}~${tag}${i}`,
  }));
}

describe.skipIf(!!reason)("soak (reduced)", () => {
  let child: Child | undefined;
  afterAll(async () => {
    await child?.kill("SIGKILL");
  });

  it(`${ROLLOUTS} rollouts over HTTP with a mix of envs: RSS growth < 5 % after warm-up, nothing leaked`, async () => {
    child = await startChild("soak-server", [mix.map((m) => m.name).join(","), TOKEN], {
      nodeArgs: ["--expose-gc"],
      timeoutMs: 60_000,
    });
    const urls = child.hello.urls as Record<string, string>;
    const stats = async (): Promise<Stats> => {
      child!.proc.kill("SIGUSR2");
      return JSON.parse(await child!.nextLine());
    };
    const envs: Record<string, Env> = {};
    for (const [name, url] of Object.entries(urls))
      envs[name] = await server.mod!.connectRemoteEnv!([url], { token: TOKEN, timeoutMs: 30_000 });

    const share = mix.length ? 0.5 / mix.length : 0;
    const phase = async (n: number, tag: string): Promise<RolloutResult[]> => {
      const runs: Array<Promise<RolloutResult[]>> = [];
      const notesN = Math.round(n * (1 - share * mix.length));
      runs.push(
        runMany(
          envs.notes!,
          // groups of 2: the server forks each task's workspace once per group
          cycle(notesTasks(50), Math.ceil(notesN / 2), tag),
          notesPolicy((t) => t.groundTruth),
          {
            group: 2,
            concurrency: CONCURRENCY,
            keepMessages: false,
          },
        ).then((r) => r.results),
      );
      for (const m of mix) {
        const k = Math.max(1, Math.round(n * share));
        runs.push(
          runMany(envs[m.name]!, cycle(m.tasks, k, tag), m.policy, { concurrency: 2, keepMessages: false }).then(
            (r) => r.results,
          ),
        );
      }
      return (await Promise.all(runs)).flat();
    };

    const warm = await phase(WARMUP, "w");
    const before = await stats();
    const main = await phase(ROLLOUTS - WARMUP, "m");
    const after = await stats();
    for (const e of Object.values(envs)) await e.close();
    console.log(
      `[reliability] soak: ${warm.length + main.length} rollouts; before ${JSON.stringify(before)}; after ${JSON.stringify(after)}`,
    );

    const all = [...warm, ...main];
    expect(all.length).toBeGreaterThanOrEqual(ROLLOUTS - 2);
    const failed = all.filter((r) => r.outcome === "env_error" || r.outcome === "infra_error");
    expect(failed.map((r) => `${r.taskId}: ${r.error}`)).toEqual([]);
    for (const r of all.filter((x) => x.taskId.startsWith("note-"))) expect(r.reward).toBe(1);

    // memory: after warm-up, growth under 5 % (measured after a full GC in the server process)
    expect((after.rss - before.rss) / before.rss).toBeLessThan(0.05);
    // nothing leaked: workspaces, fds (beyond the client's keep-alive sockets), child processes, rollouts
    expect(after.workspaces).toBe(0);
    expect(after.fds - before.fds).toBeLessThanOrEqual(CONCURRENCY + 2 * mix.length + 2);
    expect(after.children).toBeLessThanOrEqual(before.children);
    for (const url of Object.values(urls)) {
      const health = await raw(url, "GET", "/health");
      expect(health.json().activeRollouts).toBe(0);
    }
  });
});
