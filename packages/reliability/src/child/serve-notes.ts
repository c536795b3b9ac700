/**
 * A child process serving the notes env (or an env package given as argv[2]) over HTTP with @benchmax/server, so
 * tests can kill a real server process mid-rollout. Prints `{"url": ...}` on stdout once listening.
 * Run: node --conditions=@benchmax/source --import tsx src/child/serve-notes.ts [env-name] [token] [host]
 */
import type { Env } from "@benchmax/core";
import { faultyEnv } from "../faulty-env.js";
import { notesEnv, notesTasks } from "../notes-env.js";

const envName = process.argv[2] ?? "notes";
const token = process.argv[3] || undefined;
const host = process.argv[4] || undefined;
const serverSpec = "@benchmax/server";
const { serveEnv } = (await import(serverSpec)) as {
  serveEnv: (env: Env, o: Record<string, unknown>) => Promise<{ url: string; close(): Promise<void> }>;
};

let env: Env;
if (envName === "notes") env = notesEnv({ tasks: notesTasks(50) });
else if (envName === "faulty") env = faultyEnv();
else {
  const spec = `@benchmax/env-${envName}`;
  const mod = (await import(spec)) as { default: { createEnv(o: Record<string, unknown>): Env | Promise<Env> } };
  env = await mod.default.createEnv({});
}
const srv = await serveEnv(env, { token, maxRollouts: 4096, host });
process.stdout.write(`${JSON.stringify({ url: srv.url, pid: process.pid })}\n`);
const stop = async () => {
  await srv.close();
  await env.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
