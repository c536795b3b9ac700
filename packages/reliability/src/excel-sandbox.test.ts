import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Env, runRollout, type Task, type ToolResult, workspaceRoot } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LoadedEnv, loadEnv, warnSkip } from "./optional.js";

/**
 * Sandbox escapes against the excel env's `run_code` tool, and the excel env's reward channel: model-written code
 * cannot read or write outside its workspace (golden files, other rollouts, the host), spawn processes, reach the
 * network, reach host objects, or take the host down with infinite loops, memory bombs or huge outputs.
 * Every attempt ends as a tool result (usually an error the model reads); the host process is alive afterwards and
 * the env keeps working.
 */

const loaded = await loadEnv("excel");
const hasRunCode = loaded.env ? await toolsOf(loaded.env).then((t) => t.includes("run_code")) : false;
const reason = loaded.reason ?? (hasRunCode ? undefined : "the excel env has no run_code tool");
warnSkip("excel sandbox and reward-channel tests", reason);

async function toolsOf(l: LoadedEnv): Promise<string[]> {
  const env = await l.create();
  try {
    return env.listTools().map((t) => t.name);
  } finally {
    await env.close();
  }
}

const text = (r: ToolResult) => (typeof r.content === "string" ? r.content : JSON.stringify(r.content));
const sha = (p: string) => createHash("sha256").update(readFileSync(p)).digest("hex");
/** The sandbox's way to the real `process` object: the constructor of a host-realm object (the classic vm escape). */
const HOST = "const P = workbook.constructor.constructor('return process')();\n";
const FS = `${HOST}const fs = P.getBuiltinModule ? P.getBuiltinModule('fs') : null;\nif (!fs) throw new Error('no getBuiltinModule');\n`;

/** Several escape attempts in one sandboxed process: each in its own try/catch; the code prints what happened. */
function attempts(list: Record<string, string>): string {
  const body = Object.entries(list)
    .map(
      ([label, code]) =>
        `try { await (async () => { ${code} })(); R[${JSON.stringify(label)}] = "ALLOWED"; } catch (e) { R[${JSON.stringify(label)}] = "DENIED " + (e && (e.code || e.message)); }`,
    )
    .join("\n");
  return `${FS}const R = {};\n${body}\nconsole.log("RESULTS" + JSON.stringify(R));`;
}

function resultsOf(r: ToolResult): Record<string, string> {
  const m = /RESULTS(\{.*\})/.exec(text(r));
  if (!m) throw new Error(`no results in: ${text(r).slice(0, 500)}`);
  return JSON.parse(m[1]!);
}

describe.skipIf(!!reason)("excel run_code sandbox", () => {
  let env: Env;
  let task: Task;
  let goldFiles: string[] = [];
  let goldHashes: string[] = [];
  let probe: Server;
  let probeHits = 0;
  let probeUrl = "";
  let victim: ChildProcess;
  const run = (code: string, id = "A") => env.runTool(id, { name: "run_code", arguments: { code } });

  beforeAll(async () => {
    env = await loaded.env!.create({ runCodeTimeoutMs: 3000, runCodeMemoryMb: 64 });
    task = loaded.env!.tasks[0]!;
    goldFiles = ((task.groundTruth as { answers?: string[] }).answers ?? []).filter((p) => typeof p === "string");
    goldHashes = goldFiles.map(sha);
    await env.init("A", task);
    await env.init("B", task);
    probe = createServer((_req, res) => {
      probeHits++;
      res.end("reached");
    });
    await new Promise<void>((r) => probe.listen(0, "127.0.0.1", r));
    probeUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/`;
    victim = spawn(process.execPath, ["-e", "setTimeout(() => {}, 600000)"], { stdio: "ignore" });
  });
  afterAll(async () => {
    victim?.kill("SIGKILL");
    await new Promise<void>((r) => probe?.close(() => r()));
    await env?.close();
  });

  it("a normal run_code call works (the harness is sound)", async () => {
    const r = await run(
      "const ws = workbook.worksheets[0]; console.log('sheet', ws.name); ws.getCell('Z99').value = 7;",
    );
    expect(r.isError, text(r)).toBe(false);
    expect(text(r)).toContain("sheet");
  });

  it("reading outside the workspace is denied: /etc/passwd, the golden files, another rollout's workspace, the host's source", async () => {
    expect(goldFiles.length).toBeGreaterThan(0);
    const dirB = readdirSync(workspaceRoot())
      .filter((d) => d.startsWith("excel-B-"))
      .map((d) => join(workspaceRoot(), d))[0]!;
    expect(dirB).toBeTruthy();
    const targets = [
      "/etc/passwd",
      ...goldFiles,
      join(dirB, "workbook.xlsx"),
      import.meta.filename ?? "/proc/self/environ",
      "/proc/1/environ",
    ];
    const res = resultsOf(
      await run(attempts(Object.fromEntries(targets.map((t) => [t, `fs.readFileSync(${JSON.stringify(t)});`])))),
    );
    // denied by the permission model, or not even visible from inside the sandbox (ENOENT for a file that exists here)
    for (const t of targets) expect(res[t], t).toMatch(/^DENIED (ERR_ACCESS_DENIED|ENOENT|.*restricted)/);
    const ls = resultsOf(await run(attempts({ readdir: "R.listing = fs.readdirSync('..').join(',');" })));
    expect(ls.readdir).toMatch(/^DENIED /);
    expect(JSON.stringify(ls)).not.toContain("excel-B-");
  });

  it("writing outside the workspace is denied, the golden files are unchanged, nothing appears outside", async () => {
    const outside = join(tmpdir(), `benchmax-pwned-${process.pid}.txt`);
    const dirB = readdirSync(workspaceRoot()).find((d) => d.startsWith("excel-B-"))!;
    const targets = [
      outside,
      ...goldFiles,
      join(workspaceRoot(), dirB, "workbook.xlsx"),
      join(workspaceRoot(), "pwned.txt"),
    ];
    const res = resultsOf(
      await run(
        attempts(Object.fromEntries(targets.map((t) => [t, `fs.writeFileSync(${JSON.stringify(t)}, "pwned");`]))),
      ),
    );
    for (const t of targets) expect(res[t], t).toMatch(/^DENIED /);
    expect(existsSync(outside)).toBe(false);
    expect(existsSync(join(workspaceRoot(), "pwned.txt"))).toBe(false);
    expect(goldFiles.map(sha)).toEqual(goldHashes);
  });

  it("the workbook the scorer reads cannot be swapped for a link to a golden file", async () => {
    const gold = goldFiles[0]!;
    for (const code of [
      `${FS}fs.unlinkSync('workbook.xlsx'); fs.symlinkSync(${JSON.stringify(gold)}, 'workbook.xlsx');`,
      `${FS}fs.unlinkSync('workbook.xlsx'); fs.linkSync(${JSON.stringify(gold)}, 'workbook.xlsx');`,
      `${FS}fs.copyFileSync(${JSON.stringify(gold)}, 'workbook.xlsx');`,
    ]) {
      await env.init("L", task);
      const r = await run(code, "L");
      expect(r.isError, text(r)).toBe(true);
      const rewards = await env
        .computeReward("L", [{ role: "assistant", content: "done" }], task)
        .catch((e: Error) => ({ error: e.message }));
      expect((rewards as Record<string, number>).pass ?? 0, JSON.stringify(rewards)).toBe(0);
      await env.release("L");
    }
    expect(goldFiles.map(sha)).toEqual(goldHashes);
  });

  it("spawning processes and workers is denied", async () => {
    const list = {
      execSync: "P.getBuiltinModule('child_process').execSync('id');",
      spawnSync:
        "const r = P.getBuiltinModule('child_process').spawnSync('/bin/sh', ['-c', 'echo hi']); if (r.error) throw r.error;",
      worker: "const { Worker } = P.getBuiltinModule('worker_threads'); new Worker('1', { eval: true });",
      binding: "P.binding('spawn_sync');",
      dlopen: "P.dlopen({ exports: {} }, '/lib/x86_64-linux-gnu/libc.so.6');",
    };
    const res = resultsOf(await run(attempts(list)));
    for (const k of Object.keys(list)) expect(res[k], k).toMatch(/^DENIED /);
  });

  it("the network is unreachable (a server on the host's loopback gets no request)", async () => {
    const before = probeHits;
    const port = new URL(probeUrl).port;
    const list = {
      fetch: `const f = workbook.constructor.constructor('return fetch')(); await (await f(${JSON.stringify(probeUrl)})).text();`,
      net: `const net = P.getBuiltinModule('net'); await new Promise((res, rej) => { const s = net.connect(${port}, '127.0.0.1'); s.on('connect', () => { s.write('GET / HTTP/1.0\\r\\n\\r\\n'); s.end(); res(); }); s.on('error', rej); });`,
      http: `const http = P.getBuiltinModule('http'); await new Promise((res, rej) => http.get(${JSON.stringify(probeUrl)}, res).on('error', rej));`,
      dns: "const dns = P.getBuiltinModule('dns'); await dns.promises.lookup('example.com');",
    };
    const res = resultsOf(await run(attempts(list)));
    for (const k of Object.keys(list)) expect(res[k], k).toMatch(/^DENIED /);
    expect(probeHits - before).toBe(0);
  });

  it("host objects and prototypes: pollution stays in its rollout's interpreter; the host's globals, other rollouts and the victim process are untouched", async () => {
    const r = await run(
      `${HOST}Object.prototype.polluted = 1; workbook.constructor.prototype.polluted = 1; P.env.BENCHMAX_PWNED = '1'; globalThis.polluted = 1;`,
    );
    expect(text(r)).not.toContain("ERR_");
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(process.env.BENCHMAX_PWNED).toBeUndefined();
    // another rollout's interpreter is its own process: nothing carried over to it
    const other = await run("console.log(String(({}).polluted), String(globalThis.polluted));", "B");
    expect(text(other)).toContain("undefined undefined");
    // the rollout's own interpreter is live (state carries from call to call, as in SpreadsheetBench's kernel)
    const same = await run("console.log(String(globalThis.polluted));");
    expect(text(same)).toContain("1");
  });

  it("infinite loops (sync, async, never-settling) end as tool errors within the time limit", async () => {
    for (const code of [
      "while (true) {}",
      "for (;;) { await null; }",
      "await new Promise(() => {});",
      "const f = () => f(); f();",
    ]) {
      const r = await run(code);
      expect(r.isError, `${code}: ${text(r)}`).toBe(true);
      expect(text(r)).toMatch(/timed out|never settles|call stack|killed/i);
    }
  });

  it("memory bombs and huge outputs end as tool errors or truncated output; the host is alive", async () => {
    const bombs = [
      "const a = []; for (;;) a.push(new Array(1e6).fill(Math.random()));",
      "let s = 'x'; for (;;) s += s;",
      "const m = new Map(); for (let i = 0; ; i++) m.set(i, { i, s: 'y'.repeat(100) });",
    ];
    for (const code of bombs) {
      const r = await run(code);
      expect(r.isError, `${code}: ${text(r)}`).toBe(true);
    }
    const huge = await run("for (let i = 0; i < 200000; i++) console.log('z'.repeat(100));");
    expect(text(huge).length).toBeLessThan(25_000);
    const hugeOne = await run("console.log('q'.repeat(50_000_000));");
    expect(text(hugeOne).length).toBeLessThan(25_000);
    // the host and the env still work
    const ok = await run("console.log(1 + 1);");
    expect(ok.isError, text(ok)).toBe(false);
    expect(text(ok)).toContain("2");
  });

  // Found by this suite (excel-sandbox-signals): the sandboxed process shared the host's PID namespace, so
  // `process.kill` could SIGKILL any process of the same user. Fixed in @benchmax/env-excel (own PID namespace).
  it("excel-sandbox-signals (fixed): a sandboxed process cannot signal the host or other processes", async () => {
    const r = await run(`${HOST}P.kill(${victim.pid}, 'SIGKILL'); P.kill(P.ppid, 0); console.log('sent');`);
    await new Promise((res) => setTimeout(res, 200));
    expect(victim.exitCode === null && victim.signalCode === null, `victim killed; run_code said: ${text(r)}`).toBe(
      true,
    );
    expect(r.isError, text(r)).toBe(true);
  });
});
describe.skipIf(!!reason)("reward-channel safety: excel", () => {
  it("no tool ever shows a golden file's path or content; the reference policy's rollouts never see them", async () => {
    const env = await loaded.env!.create({ runCodeTimeoutMs: 3000 });
    try {
      const policy = env.capabilities!.reference!.referencePolicy();
      for (const task of loaded.env!.tasks.slice(0, 3)) {
        const gold = ((task.groundTruth as { answers?: string[] }).answers ?? []) as string[];
        const r = await runRollout(env, task, policy, { rolloutId: `ref-${task.id}`, maxTurns: 12 });
        const seen = r.messages
          .map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m.content)))
          .join("\n");
        for (const g of gold) {
          expect(seen).not.toContain(g);
          expect(seen).not.toContain(g.split("/").pop()!);
        }
      }
    } finally {
      await env.close();
    }
  });

  it("golden files are never copied into a workspace", async () => {
    const env = await loaded.env!.create();
    try {
      const task = loaded.env!.tasks[0]!;
      await env.init("G", task);
      const gold = ((task.groundTruth as { answers?: string[] }).answers ?? []) as string[];
      const goldSums = new Set(gold.map(sha));
      const dir = readdirSync(workspaceRoot()).find((d) => d.startsWith("excel-G-"))!;
      const files = readdirSync(join(workspaceRoot(), dir), { recursive: true }) as string[];
      for (const f of files) {
        const p = join(workspaceRoot(), dir, f);
        try {
          expect(goldSums.has(sha(p)), f).toBe(false);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code !== "EISDIR") throw e;
        }
        expect(gold.map((g) => g.split("/").pop())).not.toContain(f);
      }
      await env.release("G");
    } finally {
      await env.close();
    }
  });
});
