import type { ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { root, spawnCli } from "./harness.js";

/**
 * OpenEnv's own Python clients against `benchmax serve math`, replayed. test/openenv-clients/clients.py drove a
 * server with OpenEnv's GenericEnvClient (sync wrapper, /ws: reset, list_tools, call_tool, state, the answer, state
 * after done), MCPToolClient over /ws (reset then calls, an unknown tool; and its sync example's calls with no reset)
 * and MCPToolClient in production mode (POST /mcp with openenv/session/create … close), through
 * test/openenv-clients/record-proxy.mjs, which wrote fixtures/openenv-clients.exchange.jsonl. This test sends the
 * clients' side of that recording to a fresh server and expects the same answers: ids, tokens and session ids are
 * mapped, and a reset with no seed may pick another task. See test/openenv-clients/README.md to record it again.
 */

const require = createRequire(createRequire(import.meta.url).resolve("@benchmax/server/package.json"));
/** The `ws` library, @benchmax/server's dependency (cli does not list it). */
interface Ws {
  send(data: string): void;
  close(): void;
  on(event: "message", fn: (data: Buffer) => void): Ws;
  once(event: "open" | "error", fn: (e?: unknown) => void): Ws;
}
const WebSocket = require("ws") as new (url: string) => Ws;

type Entry =
  | {
      kind: "http";
      method: string;
      path: string;
      headers: Record<string, string>;
      body: unknown;
      status: number;
      reply: unknown;
    }
  | { kind: "ws-open"; conn: number; path: string }
  | { kind: "ws-close"; conn: number }
  | { kind: "ws"; conn: number; from: "client" | "server"; message: any };

const recording: Entry[] = readFileSync(join(root, "packages/cli/test/fixtures/openenv-clients.exchange.jsonl"), "utf8")
  .trim()
  .split("\n")
  .map((l) => JSON.parse(l));

const ID_KEYS = new Set(["episode_id", "rollout_token", "session_id"]);
/** Recorded id → the live server's id, learned from the answers as they come. */
const ids = new Map<string, string>();

/** Learn the live ids from a live answer beside its recorded one. */
function learn(recorded: unknown, live: unknown): void {
  if (!recorded || !live || typeof recorded !== "object" || typeof live !== "object") return;
  for (const [k, v] of Object.entries(recorded)) {
    const w = (live as Record<string, unknown>)[k];
    if (ID_KEYS.has(k) && typeof v === "string" && typeof w === "string") ids.set(v, w);
    else learn(v, w);
  }
}

/** The recorded client message with the live ids in it. */
function substitute(v: unknown): unknown {
  if (typeof v === "string") return ids.get(v) ?? v;
  if (Array.isArray(v)) return v.map(substitute);
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, substitute(x)]));
  return v;
}

/** Ids out; with `anyTask`, the task a seedless reset picked too. */
function normal(v: unknown, anyTask = false): unknown {
  if (Array.isArray(v)) return v.map((x) => normal(x, anyTask));
  if (v && typeof v === "object") {
    return Object.fromEntries(
      Object.entries(v).map(([k, x]) => {
        if (ID_KEYS.has(k) && typeof x === "string") return [k, "<id>"];
        if (anyTask && (k === "task_id" || k === "messages")) return [k, "<task>"];
        return [k, normal(x, anyTask)];
      }),
    );
  }
  return v;
}

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill("SIGTERM");
});

async function serveMath(): Promise<string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "BENCHMAX_TOKEN") env[k] = v;
  const child = spawnCli(["serve", "math", "--port", "0"], { env });
  children.push(child);
  let out = "";
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL from benchmax serve: ${out}`)), 90_000);
    const seen = (d: Buffer) => {
      out += d;
      const m = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout!.on("data", seen);
    child.stderr!.on("data", seen);
    child.once("exit", (code) => reject(new Error(`benchmax serve exited ${code}: ${out}`)));
  });
}

/** A WebSocket whose messages are taken one at a time. */
async function open(url: string) {
  const ws = new WebSocket(url);
  const inbox: string[] = [];
  const waiting: Array<(m: string) => void> = [];
  ws.on("message", (d: Buffer) => {
    const m = d.toString();
    const w = waiting.shift();
    if (w) w(m);
    else inbox.push(m);
  });
  await new Promise((r, j) => ws.once("open", r).once("error", j));
  const next = () => (inbox.length ? Promise.resolve(inbox.shift()!) : new Promise<string>((r) => waiting.push(r)));
  return { ws, next };
}

describe("OpenEnv's Python clients (recorded at OpenEnv 685de411) against benchmax serve math", () => {
  it("replays GenericEnvClient and MCPToolClient's exchange and gets the same answers", async () => {
    expect(recording.length).toBeGreaterThan(30);
    const url = await serveMath();
    const conns = new Map<number, Awaited<ReturnType<typeof open>>>();
    let lastClient: any;
    let checked = 0;
    for (const e of recording) {
      if (e.kind === "ws-open") conns.set(e.conn, await open(url.replace("http", "ws") + e.path));
      else if (e.kind === "ws-close") conns.get(e.conn)!.ws.close();
      else if (e.kind === "ws" && e.from === "client") {
        lastClient = e.message;
        conns.get(e.conn)!.ws.send(JSON.stringify(substitute(e.message)));
      } else if (e.kind === "ws") {
        const live = JSON.parse(await conns.get(e.conn)!.next());
        const seedless = lastClient?.type === "reset" && lastClient.data?.seed === undefined;
        expect(normal(live, seedless), JSON.stringify(lastClient)).toEqual(normal(e.message, seedless));
        learn(e.message, live);
        checked++;
      } else if (e.kind === "http") {
        const r = await fetch(url + e.path, {
          method: e.method,
          headers: e.headers,
          body: e.body === null ? undefined : JSON.stringify(substitute(e.body)),
        });
        const live = JSON.parse(await r.text());
        expect(r.status).toBe(e.status);
        expect(normal(live), JSON.stringify(e.body)).toEqual(normal(e.reply));
        learn(e.reply, live);
        checked++;
      }
    }
    for (const c of conns.values()) c.ws.close();
    // every exchange the clients made was answered the same way, the answer scored 1 and the final state read back
    expect(checked).toBe(recording.filter((e) => (e.kind === "ws" && e.from === "server") || e.kind === "http").length);
    const final = recording.find((e) => e.kind === "ws" && e.from === "server" && e.message.data?.reward === 1);
    expect(final).toBeDefined();
  }, 120_000);
});
