import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const root = resolve(here, "../../..");
export const cliSrc = resolve(here, "../src/cli.ts");
const tsxEsm = pathToFileURL(createRequire(import.meta.url).resolve("tsx/esm")).href;

/**
 * The CLI runs from its TypeScript sources (workspace packages through their "@benchmax/source" condition), so the
 * tests exercise what is in src/, never a stale dist/.
 */
export const cliArgv = (args: string[]) => ["--conditions=@benchmax/source", "--import", tsxEsm, cliSrc, ...args];

export function cli(args: string[], options: { env?: Record<string, string>; cwd?: string; input?: string } = {}) {
  const r = spawnSync(process.execPath, cliArgv(args), {
    cwd: options.cwd ?? root,
    encoding: "utf8",
    env: { ...process.env, ...options.env },
    input: options.input,
    timeout: 120_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

export function spawnCli(args: string[], options: { env?: Record<string, string>; cwd?: string } = {}): ChildProcess {
  return spawn(process.execPath, cliArgv(args), {
    cwd: options.cwd ?? root,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
}

export const tmp = () => mkdtempSync(join(tmpdir(), "bmx-cli-"));
export const lines = (p: string) => readFileSync(p, "utf8").trim().split("\n").filter(Boolean);

/** The argv of a quiet `eval math` of `limit` tasks against the OpenAI-compatible endpoint at `url`, into `out`. */
export const openaiEvalArgs = (o: { url: string; out: string; limit: number; model?: string }, ...extra: string[]) => [
  "eval",
  "math",
  "--limit",
  String(o.limit),
  "--policy",
  "openai",
  ...(o.model === undefined ? [] : ["--model", o.model]),
  "--base-url",
  o.url,
  "--out",
  o.out,
  "--quiet",
  ...extra,
];

/**
 * An OpenAI-compatible endpoint on 127.0.0.1 that answers every chat completion with `reply` (a function is read per
 * request), or with an OpenAI error body when `status` is not 200. It keeps each completion request's body and
 * Authorization header.
 */
export async function fakeOpenAI(
  reply: string | (() => string),
  options: { status?: number } = {},
): Promise<{
  url: string;
  server: Server;
  calls: () => number;
  bodies: Array<Record<string, unknown>>;
  auth: string[];
}> {
  const status = options.status ?? 200;
  const bodies: Array<Record<string, unknown>> = [];
  const auth: string[] = [];
  const server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => {
      raw += d;
    });
    req.on("end", () => {
      if (req.method === "GET") {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ object: "list", data: [{ id: "fake", object: "model" }] }));
        return;
      }
      bodies.push(JSON.parse(raw));
      auth.push(String(req.headers.authorization));
      res.writeHead(status, { "content-type": "application/json" });
      if (status !== 200) {
        res.end(JSON.stringify({ error: { message: "bad request", type: "invalid_request_error" } }));
        return;
      }
      res.end(
        JSON.stringify({
          id: `chatcmpl-${bodies.length}`,
          object: "chat.completion",
          created: 0,
          model: "fake",
          choices: [
            {
              index: 0,
              finish_reason: "stop",
              message: { role: "assistant", content: typeof reply === "function" ? reply() : reply },
            },
          ],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}/v1`, server, calls: () => bodies.length, bodies, auth };
}

/** Run the CLI without blocking this process (for tests that serve an endpoint from it). */
export function cliAsync(
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCli(args, options);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d) => {
    stdout += d;
  });
  child.stderr!.on("data", (d) => {
    stderr += d;
  });
  return new Promise((res) => child.on("close", (code) => res({ code, stdout, stderr })));
}
