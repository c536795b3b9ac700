/**
 * Env servers for the soak test, all in this one process: the notes env plus any env packages named in argv[2]
 * (comma-separated). Prints `{"pid", "urls": {name: url}}`, then on SIGUSR2 (after a full GC when --expose-gc)
 * one stats line: RSS, heap, open file descriptors, live workspaces, child processes, live rollouts.
 * Run: node --expose-gc --conditions=@benchmax/source --import tsx src/child/soak-server.ts [math,excel] [token]
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Env } from "@benchmax/core";
import { notesEnv, notesTasks } from "../notes-env.js";

const names = (process.argv[2] ?? "").split(",").filter(Boolean);
const token = process.argv[3] || undefined;
const serverSpec = "@benchmax/server";
const { serveEnv } = (await import(serverSpec)) as {
  serveEnv: (
    env: Env,
    o: Record<string, unknown>,
  ) => Promise<{ url: string; close(): Promise<void>; metrics: Record<string, unknown> }>;
};

const envs: Record<string, Env> = { notes: notesEnv({ tasks: notesTasks(50) }) };
for (const n of names) {
  const spec = `@benchmax/env-${n}`;
  const mod = (await import(spec)) as { default: { createEnv(o: Record<string, unknown>): Env | Promise<Env> } };
  envs[n] = await mod.default.createEnv({});
}
const servers: Record<string, Awaited<ReturnType<typeof serveEnv>>> = {};
// the soak client sends the env's fixture tasks inline (RemoteEnv): they name files under envs/, the operator's data root
const dataRoot = fileURLToPath(new URL("../../../../envs", import.meta.url));
for (const [n, env] of Object.entries(envs)) servers[n] = await serveEnv(env, { token, maxRollouts: 4096, dataRoot });

function children(): number {
  let n = 0;
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid) n++;
    } catch {
      /* gone */
    }
  }
  return n;
}

function stats() {
  (globalThis as { gc?: () => void }).gc?.();
  const root = join(tmpdir(), `benchmax-${process.pid}`);
  const mem = process.memoryUsage();
  return {
    rss: mem.rss,
    heapUsed: mem.heapUsed,
    fds: readdirSync("/proc/self/fd").length,
    workspaces: existsSync(root) ? readdirSync(root).length : 0,
    children: children(),
  };
}

process.stdout.write(
  `${JSON.stringify({ pid: process.pid, urls: Object.fromEntries(Object.entries(servers).map(([n, s]) => [n, s.url])) })}\n`,
);
process.on("SIGUSR2", () => {
  // two GCs a tick apart settle finalizers
  (globalThis as { gc?: () => void }).gc?.();
  setTimeout(() => process.stdout.write(`${JSON.stringify(stats())}\n`), 50);
});
const stop = async () => {
  for (const s of Object.values(servers)) await s.close();
  for (const e of Object.values(envs)) await e.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
