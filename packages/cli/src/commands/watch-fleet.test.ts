import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { LiveSeries, type RolloutResult, type Task } from "@benchmax/core";
import { type FleetSnapshot, type FleetWatchServer, startFleetWatch } from "@benchmax/report";
import { type EnvServer, serveEnv } from "@benchmax/server";
import { calcEnv } from "@benchmax/server/testing";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";

/**
 * `benchmax watch A B C …`: several recording servers and run dirs as one run, with a per-node panel. Real servers on
 * 127.0.0.1 (in process with `serveEnv({record})`, and `benchmax serve math --record` as a child process that is
 * SIGKILLed and started again on its port), and a run dir a recording server wrote. Every wait is a bounded poll of
 * the watch's own `/snapshot`, never a clock.
 */

const OUT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test-output");
const cliDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const CHROMIUM = process.env.BENCHMAX_CHROMIUM ?? "/usr/bin/chromium";
const browserAvailable = existsSync(CHROMIUM);
if (!browserAvailable) console.warn(`watch-fleet.test: the page test is skipped, no Chromium at ${CHROMIUM}`);

const TOKEN = "fleet-token";
const tasks: Task<string>[] = [
  { id: "t1", prompt: "What is 2 + 3?", groundTruth: "5" },
  { id: "t2", prompt: "What is 10 + 7?", groundTruth: "17" },
];
const WAIT = { timeout: 90_000, interval: 100 };

async function api(base: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await r.text();
  return { status: r.status, body: (text ? JSON.parse(text) : {}) as Record<string, any> };
}

/** One rollout as a trainer's client runs it: created at a trainer step, a tool call (calc), scored, released. */
async function finish(base: string, step: number, answer: string, taskId?: string, calc = true) {
  const c = await api(base, "POST", "/v1/rollouts", { ...(taskId ? { taskId } : {}), metadata: { global_step: step } });
  expect(c.status).toBe(201);
  const h = { "x-rollout-token": c.body.token as string };
  if (calc)
    await api(base, "POST", `/v1/rollouts/${c.body.rolloutId}/call`, { name: "add", arguments: { a: 2, b: 3 } }, h);
  const r = await api(
    base,
    "POST",
    `/v1/rollouts/${c.body.rolloutId}/reward`,
    { completion: `<answer>${answer}</answer>` },
    h,
  );
  await api(base, "POST", `/v1/rollouts/${c.body.rolloutId}/release`, {}, h);
  return { rolloutId: c.body.rolloutId as string, status: r.status };
}

/** `benchmax serve math --record DIR --token T` as a child process on 127.0.0.1 (a given port, or a free one). */
async function serveChild(recordDir: string, port = 0) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("BENCHMAX_")));
  const child: ChildProcess = spawn(
    process.execPath,
    [
      "--conditions=@benchmax/source",
      "--import",
      "tsx",
      "src/cli.ts",
      "serve",
      "math",
      "--port",
      String(port),
      "--token",
      TOKEN,
      "--record",
      recordDir,
    ],
    { cwd: cliDir, env: clean, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  let url = "";
  try {
    await vi.waitFor(() => {
      const m = /serving math at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (!m) throw new Error(`not serving yet: ${out}`);
      url = m[1]!;
    }, WAIT);
  } catch (e) {
    child.kill("SIGKILL");
    throw e;
  }
  return { child, url, port: Number(new URL(url).port), exited };
}

/** Every line of a run dir's results.jsonl. */
const rowsOf = (dir: string): RolloutResult[] =>
  readFileSync(join(dir, "results.jsonl"), "utf8")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as RolloutResult);

let root: string;
let a: EnvServer;
let b: EnvServer;
let k: Awaited<ReturnType<typeof serveChild>>;
let watch: FleetWatchServer;
const children: ChildProcess[] = [];

async function snap(): Promise<FleetSnapshot> {
  const r = await fetch(new URL("/snapshot", watch.url), { headers: { authorization: `Bearer ${watch.token}` } });
  expect(r.status).toBe(200);
  return (await r.json()) as FleetSnapshot;
}
const nodeOf = (s: FleetSnapshot, name: string) => {
  const n = s.nodes.find((x) => x.name === name);
  if (!n) throw new Error(`no node ${name} in ${s.nodes.map((x) => x.name).join(", ")}`);
  return n;
};
const hostOf = (url: string) => new URL(url).host;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "benchmax-watch-fleet-"));
  // A: its reward crashes on t2 (an env_error outcome, recorded)
  const envA = calcEnv();
  const compute = envA.computeReward.bind(envA);
  envA.computeReward = (id, messages, task) =>
    task.id === "t2" ? Promise.reject(new Error("reward crashed")) : compute(id, messages, task);
  a = await serveEnv(envA, { tasks, token: TOKEN, record: join(root, "a") });
  b = await serveEnv(calcEnv(), { tasks, token: TOKEN, record: join(root, "b"), drainGraceMs: 3_600_000 });
  // C: a run dir a recording server wrote and is done with
  const c = await serveEnv(calcEnv(), { tasks, token: TOKEN, record: join(root, "c") });
  await finish(c.url, 1, "5", "t1");
  await finish(c.url, 2, "0", "t1");
  await finish(c.url, 2, "17", "t2");
  await c.close();
  k = await serveChild(join(root, "k"));
  children.push(k.child);

  await finish(a.url, 1, "5", "t1");
  await finish(a.url, 1, "4", "t1");
  await finish(a.url, 2, "5", "t1");
  expect((await finish(a.url, 2, "17", "t2")).status).toBe(500);
  await finish(b.url, 1, "17", "t2");
  await finish(b.url, 2, "17", "t2");
  await finish(b.url, 3, "5", "t1");
  await finish(k.url, 1, "0", undefined, false);
  await finish(k.url, 3, "0", undefined, false);

  watch = await startFleetWatch([a.url, b.url, join(root, "c"), k.url], {
    serverToken: TOKEN,
    pollMs: 100,
    probeMs: 150,
    retryMs: 150,
  });
}, 180_000);

afterAll(async () => {
  await watch?.close();
  await a?.close();
  await b?.close();
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  rmSync(root, { recursive: true, force: true });
});

describe("benchmax watch with several sources: one run, and a panel per node", { timeout: 240_000 }, () => {
  it("merges two recording servers, a run dir and a served child: totals are the sum, the curve is the union's", async () => {
    const s = await vi.waitFor(async () => {
      const s = await snap();
      expect(s.nodes.map((n) => n.rollouts)).toEqual([4, 3, 3, 2]);
      expect(s.nodes.map((n) => n.state)).toEqual(["up", "up", "dir", "up"]);
      return s;
    }, WAIT);
    expect(s.total).toBe(4 + 3 + 3 + 2);
    // the merged curve is the one series of every recorded row: read the four results.jsonl files into one
    const one = new LiveSeries(1);
    for (const dir of ["a", "b", "c", "k"]) for (const r of rowsOf(join(root, dir))) one.add(r);
    const { latest: _l1, nodes: _n, ...drawn } = s;
    const { latest: _l2, ...expected } = one.snapshot();
    expect(drawn).toEqual(expected);
    expect(s.axis).toBe("step");
    expect(s.x).toEqual([1, 2, 3]);
    // per node: its outcomes (A's crashed reward is an env_error), and what its /health and /metrics say
    const nodeA = nodeOf(s, hostOf(a.url));
    expect(nodeA.outcomes).toEqual({ completed: 3, env_error: 1 });
    expect(nodeA.errors).toBe(1);
    expect(nodeA.instance).toBe(((await api(a.url, "GET", "/health")).body as { instance: string }).instance);
    expect(nodeA).toMatchObject({ kind: "server", reachable: true, draining: false, restarts: 0 });
    await vi.waitFor(async () => {
      expect(nodeOf(await snap(), hostOf(a.url))).toMatchObject({ created: 4, released: 4, live: 0 });
    }, WAIT);
    expect(nodeOf(s, join(root, "c"))).toMatchObject({
      kind: "dir",
      reachable: true,
      rollouts: 3,
      outcomes: { completed: 3 },
    });
    expect(nodeOf(s, hostOf(k.url)).outcomes).toEqual({ completed: 2 });
    // the latest rollouts of every node, each with its node's name
    expect(s.latest).toHaveLength(12);
    expect(new Set(s.latest.map((r) => r.node))).toEqual(new Set(s.nodes.map((n) => n.name)));
  });

  it("counts a server's 404 UNKNOWN_ROLLOUT answers (a client's call for a rollout it does not hold); Prometheus labels hold no rollout or task id", async () => {
    const lost = await api(
      a.url,
      "POST",
      "/v1/rollouts/r-gone/call",
      { name: "add", arguments: { a: 1, b: 1 } },
      {
        "x-rollout-token": "x",
      },
    );
    expect(lost.status).toBe(404);
    expect(lost.body.error.code).toBe("UNKNOWN_ROLLOUT");
    await vi.waitFor(async () => {
      expect(nodeOf(await snap(), hostOf(a.url)).unknownRollout).toBe(1);
    }, WAIT);
    // every label value of every server's Prometheus metrics: none is a rollout id, a task id or the id asked for
    const ids = new Set<string>(["r-gone"]);
    for (const dir of ["a", "b", "k"])
      for (const r of rowsOf(join(root, dir))) {
        ids.add(r.rolloutId);
        ids.add(r.taskId);
        ids.add(r.groupId);
      }
    for (const base of [a.url, b.url, k.url]) {
      const text = await (
        await fetch(`${base}/metrics?format=prometheus`, { headers: { authorization: `Bearer ${TOKEN}` } })
      ).text();
      const values = [...text.matchAll(/^[a-z_:]+\{([^}]*)\}/gm)].flatMap((m) =>
        [...m[1]!.matchAll(/[a-zA-Z_]+="((?:[^"\\]|\\.)*)"/g)].map((v) => v[1]!),
      );
      expect(values.length).toBeGreaterThan(10);
      expect(values.filter((v) => ids.has(v))).toEqual([]);
    }
  });

  it("shows a draining server as draining (its /health 503 draining), and down once it has closed; its rollouts still count", async () => {
    const held = await api(b.url, "POST", "/v1/rollouts", { taskId: "t1", metadata: { global_step: 4 } });
    expect(held.status).toBe(201);
    const drained = b.drain();
    const s = await vi.waitFor(async () => {
      const s = await snap();
      expect(nodeOf(s, hostOf(b.url))).toMatchObject({ state: "draining", draining: true, reachable: true, live: 1 });
      return s;
    }, WAIT);
    expect(nodeOf(s, hostOf(a.url)).state).toBe("up");
    // a new rollout is refused while it drains: counted as a 503 DRAINING
    expect((await api(b.url, "POST", "/v1/rollouts", {})).status).toBe(503);
    await vi.waitFor(async () => {
      expect(nodeOf(await snap(), hostOf(b.url)).drainingRefused).toBe(1);
    }, WAIT);
    // the held rollout ends: the server has nothing left and closes
    const h = { "x-rollout-token": held.body.token as string };
    await api(b.url, "POST", `/v1/rollouts/${held.body.rolloutId}/reward`, { completion: "<answer>5</answer>" }, h);
    await api(b.url, "POST", `/v1/rollouts/${held.body.rolloutId}/release`, {}, h);
    expect((await drained).left).toBe(0);
    const after = await vi.waitFor(async () => {
      const s = await snap();
      expect(nodeOf(s, hostOf(b.url))).toMatchObject({ state: "down", reachable: false, rollouts: 4 });
      return s;
    }, WAIT);
    expect(nodeOf(after, hostOf(b.url)).downSince).toMatch(/^\d{4}-/);
    expect(after.total).toBe(4 + 4 + 3 + 2);
  });

  it("a server SIGKILLed mid-watch is listed as down with its rollouts; the others go on counting", async () => {
    k.child.kill("SIGKILL");
    await k.exited;
    await vi.waitFor(async () => {
      expect(nodeOf(await snap(), hostOf(k.url))).toMatchObject({ state: "down", reachable: false, rollouts: 2 });
    }, WAIT);
    await finish(a.url, 3, "5", "t1");
    await finish(a.url, 3, "5", "t1");
    const s = await vi.waitFor(async () => {
      const s = await snap();
      expect(nodeOf(s, hostOf(a.url)).rollouts).toBe(6);
      return s;
    }, WAIT);
    expect(s.total).toBe(6 + 4 + 3 + 2);
    expect(s.nodes).toHaveLength(4);
    expect(nodeOf(s, hostOf(k.url)).lastError).toMatch(/health/);
  });

  it("a server started again on the same address is shown as restarted, with its new instance id", async () => {
    const before = nodeOf(await snap(), hostOf(k.url)).instance!;
    expect(before).toMatch(/\w+/);
    k = await serveChild(join(root, "k"), k.port);
    children.push(k.child);
    const n = await vi.waitFor(async () => {
      const n = nodeOf(await snap(), hostOf(k.url));
      expect(n).toMatchObject({ state: "up", reachable: true, restarts: 1, previousInstance: before });
      return n;
    }, WAIT);
    expect(n.instance).not.toBe(before);
    expect(n.instance).toBe(((await api(k.url, "GET", "/health")).body as { instance: string }).instance);
    // the new instance records into the same run dir: the node's rollouts are its recording's, old and new
    await finish(k.url, 4, "0", undefined, false);
    const s = await vi.waitFor(async () => {
      const s = await snap();
      expect(nodeOf(s, hostOf(k.url))).toMatchObject({ rollouts: 3, created: 1 });
      return s;
    }, WAIT);
    expect(s.total).toBe(6 + 4 + 3 + 3);
  });

  it.skipIf(!browserAvailable)(
    "draws the per-node panel: state, restarts and rollouts per node, and each latest rollout's node",
    async () => {
      let browser: Browser | undefined;
      try {
        browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
        const page = await browser.newPage({ viewport: { width: 1500, height: 1300 } });
        const errors: string[] = [];
        page.on("pageerror", (e) => errors.push(e.message));
        await page.goto(watch.url);
        await page.waitForSelector('body[data-ready][data-total="16"]', { timeout: 60_000 });
        const rows = await page.$$eval("#nodes-body tr", (trs) =>
          trs.map((tr) => [
            tr.getAttribute("data-node"),
            tr.getAttribute("data-state"),
            tr.getAttribute("data-restarts"),
            tr.getAttribute("data-rollouts"),
          ]),
        );
        expect(rows).toEqual([
          [hostOf(a.url), "up", "0", "6"],
          [hostOf(b.url), "down", "0", "4"],
          [join(root, "c"), "dir", "0", "3"],
          [hostOf(k.url), "up", "1", "3"],
        ]);
        expect(await page.textContent(`#nodes-body tr[data-node="${hostOf(k.url)}"]`)).toContain("restarted");
        const latestNodes = await page.$$eval("#latest-body tr td:first-child", (tds) => tds.map((t) => t.textContent));
        expect(latestNodes).toContain(hostOf(k.url));
        // a node's state changes reach the open page over SSE: A drains
        const held = await api(a.url, "POST", "/v1/rollouts", { taskId: "t1" });
        const drained = a.drain();
        await page.waitForSelector(`#nodes-body tr[data-node="${hostOf(a.url)}"][data-state="draining"]`, {
          timeout: 60_000,
        });
        mkdirSync(OUT, { recursive: true });
        const shot = join(OUT, "watch-fleet.png");
        await page.screenshot({ path: shot, fullPage: true });
        expect(statSync(shot).size).toBeGreaterThan(10_000);
        await api(
          a.url,
          "POST",
          `/v1/rollouts/${held.body.rolloutId}/release`,
          {},
          {
            "x-rollout-token": held.body.token as string,
          },
        );
        await drained;
        expect(errors).toEqual([]);
      } finally {
        await browser?.close();
      }
    },
  );
});

describe("the watch command", { timeout: 240_000 }, () => {
  /** `benchmax watch …` as a child process; resolves with its printed line once it listens. */
  async function watchChild(args: string[]) {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("BENCHMAX_")));
    const child = spawn(
      process.execPath,
      ["--conditions=@benchmax/source", "--import", "tsx", "src/cli.ts", "watch", "--port", "0", ...args],
      { cwd: cliDir, env: clean, stdio: ["ignore", "pipe", "pipe"] },
    );
    children.push(child);
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.stderr!.on("data", (d) => (out += d));
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const line = await vi.waitFor(() => {
      const m = /^benchmax: watching (.*) at (http:\/\/127\.0\.0\.1:\d+\/\?token=\w+)$/m.exec(out);
      if (!m) throw new Error(`not watching yet: ${out}`);
      return { shown: m[1]!, url: m[2]! };
    }, WAIT);
    const snapshot = async () => {
      const r = await fetch(
        new URL("/snapshot", line.url).href + `?token=${new URL(line.url).searchParams.get("token")}`,
      );
      return (await r.json()) as FleetSnapshot;
    };
    return { child, exited, ...line, snapshot };
  }

  it("takes several sources (a server's URL with --server-token, a run dir) as one run; one source is the single dashboard", async () => {
    const fleet = await watchChild([k.url, join(root, "c"), "--server-token", TOKEN]);
    expect(fleet.shown).toBe(`2 sources (${new URL(k.url).origin}, ${join(root, "c")})`);
    const s = await vi.waitFor(async () => {
      const s = await fleet.snapshot();
      expect(s.nodes.map((n) => [n.name, n.state, n.rollouts])).toEqual([
        [hostOf(k.url), "up", 3],
        [join(root, "c"), "dir", 3],
      ]);
      return s;
    }, WAIT);
    expect(s.total).toBe(6);
    fleet.child.kill("SIGTERM");
    expect(await fleet.exited).toBe(0);

    const single = await watchChild([join(root, "c")]);
    expect(single.shown).toBe(join(root, "c"));
    const one = await single.snapshot();
    expect(one.total).toBe(3);
    expect(one).not.toHaveProperty("nodes");
    single.child.kill("SIGTERM");
    expect(await single.exited).toBe(0);
  });

  it("refuses a server given with the wrong token, one that is not recording, and a source given twice", async () => {
    await expect(startFleetWatch([k.url, join(root, "c")], { serverToken: "wrong" })).rejects.toThrow(/HTTP 403/);
    const plain = await serveEnv(calcEnv(), { tasks, token: TOKEN });
    try {
      await expect(startFleetWatch([plain.url, join(root, "c")], { serverToken: TOKEN })).rejects.toThrow(
        /HTTP 409.*NOT_RECORDING/,
      );
    } finally {
      await plain.close();
    }
    await expect(startFleetWatch([join(root, "c"), `${join(root, "c")}/`])).rejects.toThrow(/given twice/);
  });

  it("lists a server that cannot be reached at start as down, and counts it once it comes up", async () => {
    // a port that was just free: nothing listens there when the watch starts
    const gone = await serveEnv(calcEnv(), { tasks, token: TOKEN });
    const port = gone.port;
    await gone.close();
    const late = `http://127.0.0.1:${port}`;
    const w = await startFleetWatch([late, join(root, "c")], {
      serverToken: TOKEN,
      pollMs: 100,
      probeMs: 150,
      retryMs: 150,
    });
    try {
      const first = w.snapshot();
      expect(first.nodes.map((n) => [n.name, n.state, n.reachable])).toEqual([
        [`127.0.0.1:${port}`, "down", false],
        [join(root, "c"), "dir", true],
      ]);
      expect(first.nodes[0]!.lastError).toMatch(/ECONNREFUSED|fetch failed/);
      const up = await serveEnv(calcEnv(), { tasks, token: TOKEN, port, record: join(root, "late") });
      try {
        await finish(up.url, 1, "5", "t1");
        await up.recorder!.flush();
        const s = await vi.waitFor(() => {
          const s = w.snapshot();
          expect(s.nodes[0]).toMatchObject({ state: "up", reachable: true, rollouts: 1, restarts: 0 });
          return s;
        }, WAIT);
        expect(s.total).toBe(4);
        expect(s.nodes[0]!.lastError).toBeUndefined();
      } finally {
        await up.close();
      }
    } finally {
      await w.close();
    }
  });
});
