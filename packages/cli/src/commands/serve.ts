import { readFile } from "node:fs/promises";
import { type Env, type Task, UsageError } from "@benchmax/core";
import type { Command } from "commander";
import { createEnv, parseKeyValues } from "../env-loader.js";
import { parseIntFlag } from "../policy-options.js";

export interface ServeFlags {
  host: string;
  port?: number;
  token?: string;
  clientToken?: string[];
  clientTokensFile?: string;
  maxRollouts?: number;
  idleTimeout?: number;
  maxBody?: number;
  dataset?: string;
  split?: string;
  envOpt: string[];
  mcp?: boolean;
  dataRoot?: string;
  insecure?: boolean;
  record?: string;
  drainGrace?: number;
}

const collect = (v: string, prev: string[]) => [...prev, v];

export function register(program: Command): void {
  program
    .command("serve <env>")
    .description(
      "serve an env over HTTP + WebSocket (benchmax rollout API and OpenEnv endpoints), or as MCP with --mcp",
    )
    .option("--host <host>", "interface to listen on", "127.0.0.1")
    .option("--port <port>", "port (default 8000; 0 = any free port)", (v) => parseIntFlag(v, "--port"))
    .option("--token <token>", "bearer token every endpoint but /health requires (or BENCHMAX_TOKEN)")
    .option(
      "--client-token <token>",
      "another accepted token, one per client: each is a client of its own for fair admission (repeatable; or BENCHMAX_CLIENT_TOKENS, whitespace-separated)",
      collect,
      [],
    )
    .option("--client-tokens-file <path>", "client tokens, one per line (# comments and blank lines skipped)")
    .option("--max-rollouts <n>", "live rollouts at most (default 1024)", (v) => parseIntFlag(v, "--max-rollouts"))
    .option("--idle-timeout <s>", "release a rollout idle this many seconds (default 600)", (v) =>
      parseIntFlag(v, "--idle-timeout"),
    )
    .option("--max-body <bytes>", "largest request body (default 8 MiB)", (v) => parseIntFlag(v, "--max-body"))
    .option("--dataset <path>", "the dataset /reset and task ids draw from (default: the env's fixtures)")
    .option("--split <name>", "dataset split where the env has several")
    .option("--env-opt <key=value>", "env option (repeatable)", collect, [])
    .option("--mcp", "serve the env as an MCP server: stdio, or streamable HTTP with --port")
    .option("--data-root <dir>", "client-built tasks may name host files only under this directory")
    .option("--insecure", "serve on a non-loopback --host with no token (anyone who reaches the port can use it)")
    .option("--record <dir>", "append every finished rollout to this run dir (results.jsonl, summary.json) as it ends")
    .option(
      "--drain-grace <s>",
      "on SIGTERM, refuse new rollouts and serve the live ones until released, this many seconds at most (default 30)",
      (v) => parseIntFlag(v, "--drain-grace"),
    )
    .action(async (envSpec: string, flags: ServeFlags) => {
      await serveCommand(envSpec, flags);
    });
}

/**
 * The server's token: --token, else BENCHMAX_TOKEN, trimmed. A token file made with `openssl rand -hex 32 > token.txt`
 * ends in a newline that a Kubernetes Secret keeps; clients send the token without it, and every request was refused.
 */
export function serveToken(flag: string | undefined, env: string | undefined): string | undefined {
  return (flag ?? env)?.trim() || undefined;
}

/**
 * The client tokens: --client-token (repeatable), the lines of --client-tokens-file (blank lines and `#` comments
 * skipped), and BENCHMAX_CLIENT_TOKENS (whitespace-separated), trimmed. Each needs the operator token (--token).
 */
export async function clientTokens(
  flags: string[] | undefined,
  file: string | undefined,
  env: string | undefined,
): Promise<string[]> {
  const out = (flags ?? []).map((t) => t.trim()).filter(Boolean);
  if (file) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (e) {
      throw new UsageError(`--client-tokens-file ${file}: ${(e as Error).message}`);
    }
    for (const line of text.split(/\r?\n/)) {
      const t = line.trim();
      if (t && !t.startsWith("#")) out.push(t);
    }
  }
  if (env) out.push(...env.split(/\s+/).filter(Boolean));
  return out;
}

/** The one line `serve` prints when a SIGTERM starts a drain. */
export function drainLine(sig: string, live: number, graceS: number): string {
  const n = `${live} live rollout${live === 1 ? "" : "s"}`;
  return (
    `benchmax: ${sig}: draining (${n}): new rollouts are refused; closing when the live ones are released, ` +
    `${graceS}s at most (SIGTERM again or SIGINT: close now)\n`
  );
}

/**
 * Resolves once a signal closed the server (or the MCP session ended). The rollout API server drains on the first
 * SIGTERM (`EnvServer.drain`: new rollouts refused, live ones served until released or `--drain-grace` passes); a
 * second SIGTERM, or SIGINT, closes at once. An MCP server on a port (`--mcp --port N`) drains the same way; MCP over
 * stdio closes at once on either.
 */
export async function serveCommand(envSpec: string, flags: ServeFlags): Promise<void> {
  if (flags.mcp && flags.port === undefined && flags.drainGrace !== undefined) {
    throw new UsageError("--drain-grace applies to a server on a port (MCP over stdio is one session: add --port N)");
  }
  const env: Env = await createEnv(envSpec, parseKeyValues(flags.envOpt));
  let tasks: Task[] | undefined;
  if (flags.dataset || flags.split) {
    const own = env.capabilities?.tasks;
    if (!own?.loadTasks) throw new UsageError(`env ${env.name} has no dataset loader (--dataset)`);
    tasks = await own.loadTasks(flags.dataset, { split: flags.split });
  }
  const token = serveToken(flags.token, process.env.BENCHMAX_TOKEN);
  const clients = await clientTokens(flags.clientToken, flags.clientTokensFile, process.env.BENCHMAX_CLIENT_TOKENS);
  if (clients.length > 0 && !token) {
    throw new UsageError(
      "--client-token / --client-tokens-file / BENCHMAX_CLIENT_TOKENS need --token (or BENCHMAX_TOKEN)",
    );
  }
  const tokenNote = token ? ` (bearer token required${clients.length ? `; ${clients.length} client tokens` : ""})` : "";
  let closer: () => Promise<void>;
  /** The server's drain (none for MCP over stdio). */
  let drainer: (() => { live: number; graceS: number; done: Promise<{ left: number }> }) | undefined;
  if (flags.mcp) {
    const mcp = (await import("@benchmax/mcp" as string).catch((e: Error) => {
      throw new UsageError(`--mcp needs @benchmax/mcp (${e.message})`);
    })) as {
      serveMcpStdio(env: Env, o?: Record<string, unknown>): Promise<{ close(): Promise<void> }>;
      serveMcpHttp(
        env: Env,
        o: Record<string, unknown>,
      ): Promise<{
        url: string;
        close(): Promise<void>;
        drain(): Promise<{ left: number }>;
        readonly activeRollouts: number;
      }>;
    };
    if (flags.port !== undefined) {
      const s = await mcp.serveMcpHttp(env, {
        host: flags.host,
        port: flags.port,
        tasks,
        token,
        clientTokens: clients,
        maxRollouts: flags.maxRollouts,
        sessionIdleMs: flags.idleTimeout !== undefined ? flags.idleTimeout * 1000 : undefined,
        maxBodyBytes: flags.maxBody,
        insecure: flags.insecure,
        ...(flags.drainGrace !== undefined ? { drainGraceMs: flags.drainGrace * 1000 } : {}),
      });
      process.stdout.write(`benchmax: serving ${env.name} as MCP at ${s.url}${tokenNote}\n`);
      closer = () => s.close();
      const graceS = flags.drainGrace ?? 30;
      drainer = () => ({ live: s.activeRollouts, graceS, done: s.drain() });
    } else {
      // one session on stdin/stdout: nothing to authenticate, cap or expire
      const unusable = [
        ["--token", flags.token],
        ["BENCHMAX_TOKEN (unset it)", process.env.BENCHMAX_TOKEN || undefined],
        ["--client-token / --client-tokens-file / BENCHMAX_CLIENT_TOKENS", clients.length ? clients : undefined],
        ["--max-rollouts", flags.maxRollouts],
        ["--idle-timeout", flags.idleTimeout],
      ].filter(([, v]) => v !== undefined);
      if (unusable.length) {
        throw new UsageError(
          `${unusable.map(([f]) => f).join(", ")} apply to MCP over HTTP only: add --port N (stdio is one session of the process that spawned it)`,
        );
      }
      // stdout is the MCP channel: talk on stderr only
      const s = await mcp.serveMcpStdio(env, { tasks });
      process.stderr.write(`benchmax: serving ${env.name} as MCP over stdio\n`);
      closer = () => s.close();
    }
  } else {
    const { serveEnv } = await import("@benchmax/server");
    const s = await serveEnv(env, {
      host: flags.host,
      port: flags.port ?? 8000,
      token,
      clientTokens: clients,
      maxRollouts: flags.maxRollouts,
      idleTimeoutMs: flags.idleTimeout !== undefined ? flags.idleTimeout * 1000 : undefined,
      maxBodyBytes: flags.maxBody,
      tasks,
      dataRoot: flags.dataRoot,
      insecure: flags.insecure,
      ...(flags.drainGrace !== undefined ? { drainGraceMs: flags.drainGrace * 1000 } : {}),
      ...(flags.record
        ? {
            record: flags.record,
            recordRun: {
              ...(flags.dataset ? { dataset: flags.dataset } : {}),
              config: {
                ...(flags.split ? { split: flags.split } : {}),
                ...(flags.envOpt?.length ? { envOptions: parseKeyValues(flags.envOpt) } : {}),
              },
            },
          }
        : {}),
    });
    process.stdout.write(
      `benchmax: serving ${env.name} at ${s.url}${tokenNote}\n` +
        `  rollout API: ${s.url}/v1/rollouts · OpenEnv: /reset /step /state /ws · health: ${s.url}/health\n` +
        `  Prometheus: ${s.url}/metrics?format=prometheus${flags.record ? ` · recording to ${flags.record}` : ""}\n`,
    );
    closer = () => s.close();
    const graceS = flags.drainGrace ?? 30;
    drainer = () => ({ live: s.activeRollouts, graceS, done: s.drain() });
  }
  await new Promise<void>((resolve) => {
    let stopping = false;
    const finish = (closed: Promise<unknown>) => {
      closed
        .then(() => env.close())
        .catch((e) => process.stderr.write(`benchmax: shutdown: ${(e as Error).message}\n`))
        .finally(() => {
          process.off("SIGINT", onInt);
          process.off("SIGTERM", onTerm);
          resolve();
        });
    };
    /** Close now: the first signal of an MCP server, SIGINT, or a signal during a drain (which it cuts short). */
    const stop = (sig: string) => {
      process.stderr.write(`benchmax: ${sig}: closing${stopping ? " now" : ""}…\n`);
      const first = !stopping;
      stopping = true;
      const closed = closer();
      if (first) finish(closed);
    };
    const onInt = () => stop("SIGINT");
    const onTerm = () => {
      if (stopping || !drainer) return stop("SIGTERM");
      stopping = true;
      const d = drainer();
      process.stderr.write(drainLine("SIGTERM", d.live, d.graceS));
      finish(
        d.done.then(({ left }) => {
          process.stderr.write(
            left === 0
              ? "benchmax: drained: every live rollout was released; closed\n"
              : `benchmax: drain ended with ${left} rollout${left === 1 ? "" : "s"} still live; closed\n`,
          );
        }),
      );
    };
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
    if (flags.mcp && flags.port === undefined) process.stdin.once("end", () => stop("stdin closed"));
  });
}
