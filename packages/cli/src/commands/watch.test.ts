import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Task } from "@benchmax/core";
import { startWatch, type WatchServer } from "@benchmax/report";
import { type EnvServer, RECORD_FEED_PATH, serveEnv } from "@benchmax/server";
import { calcEnv } from "@benchmax/server/testing";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** Screenshots, committed beside the package's tests. */
const OUT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test-output");
const CHROMIUM = process.env.BENCHMAX_CHROMIUM ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`watch.test: skipped, no Chromium at ${CHROMIUM}`);

const tasks: Task<string>[] = [
  { id: "t1", prompt: "What is 2 + 3?", groundTruth: "5" },
  { id: "t2", prompt: "What is 10 + 7?", groundTruth: "17" },
];

let root: string;
let server: EnvServer;
let watch: WatchServer;
let browser: Browser | undefined;

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "benchmax-watch-"));
  const env = calcEnv();
  env.capabilities!.explain = {
    explainReward: (_id, messages, task) => ({
      extracted: String(messages.at(-1)?.content ?? ""),
      gold: String(task.groundTruth),
    }),
  };
  server = await serveEnv(env, { tasks, record: join(root, "run") });
  watch = await startWatch(join(root, "run"), { pollMs: 200 });
  if (available) browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
});
afterAll(async () => {
  await browser?.close();
  await watch?.close();
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(server.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return r.json() as Promise<Record<string, unknown>>;
}

/** What SkyRL's generator does through the shim: per sample a rollout tagged with the global step. */
async function skyrlStep(step: number, answers: Record<string, string[]>) {
  for (const [taskId, samples] of Object.entries(answers)) {
    for (const answer of samples) {
      const c = await post("/v1/rollouts", { taskId, metadata: { global_step: step } });
      const h = { "x-rollout-token": c.token as string };
      await post(`/v1/rollouts/${c.rolloutId}/call`, { name: "add", arguments: { a: 2, b: 3 } }, h);
      await post(
        `/v1/rollouts/${c.rolloutId}/reward`,
        {
          messages: [
            { role: "user", content: "q" },
            { role: "assistant", content: `<answer>${answer}</answer>` },
          ],
        },
        h,
      );
      await post(`/v1/rollouts/${c.rolloutId}/release`, {}, h);
    }
  }
}

describe("benchmax watch", () => {
  it("refuses a request without the token", async () => {
    expect((await fetch(watch.url.replace(/\?token=.*/, ""))).status).toBe(401);
    expect((await fetch(watch.url.replace(/token=.*/, "token=wrong"))).status).toBe(401);
  });

  it.skipIf(!available)(
    "draws the reward curve of a recording server by trainer step and takes new rollouts live over SSE",
    async () => {
      // steps 1–3, two tasks × two samples: the model gets better; t2 at step 1 has both samples wrong (zero variance)
      await skyrlStep(1, { t1: ["5", "4"], t2: ["0", "0"] });
      await skyrlStep(2, { t1: ["5", "5"], t2: ["17", "0"] });
      await skyrlStep(3, { t1: ["5", "5"], t2: ["17", "17"] });
      await server.recorder!.flush();
      const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      await page.goto(watch.url);
      await page.waitForSelector('body[data-ready][data-total="12"]');
      const read = () =>
        page.evaluate(() => {
          const w = globalThis as unknown as {
            benchmaxCharts: Record<
              string,
              { data: { labels: string[]; datasets: { label: string; data: number[] }[] } }
            >;
          };
          const c = w.benchmaxCharts;
          const sets = (id: string) => Object.fromEntries(c[id]!.data.datasets.map((d) => [d.label, d.data]));
          return { x: c["chart-reward"]!.data.labels, reward: sets("chart-reward"), zero: sets("chart-zero-variance") };
        });
      const first = await read();
      expect(first.x).toEqual(["1", "2", "3"]);
      expect(first.reward["pass rate"]).toEqual([0.25, 0.75, 1]);
      expect(first.zero["zero-variance group share"]).toEqual([0.5, 0.5, 1]);
      // a new step arrives while the page is open: pushed over SSE, no reload
      await skyrlStep(4, { t1: ["5", "5"] });
      await page.waitForSelector('body[data-total="14"]', { timeout: 10_000 });
      expect((await read()).x).toEqual(["1", "2", "3", "4"]);
      // the latest rollouts open in the viewer, with the gold beside the extracted answer (harness side)
      await page.click("#latest-body tr:first-child");
      await page.waitForSelector("#viewer[data-rollout] .explain code.gold");
      expect(await page.textContent("#viewer .explain code.gold")).toBe("5");
      mkdirSync(OUT, { recursive: true });
      const shot = join(OUT, "watch-dashboard.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      expect(errors).toEqual([]);
      await page.close();
    },
    60_000,
  );
});

describe("benchmax watch URL: a recording server's live feed", () => {
  const TOKEN = "recording-token";
  let recDir: string;
  let rec: EnvServer;
  let live: WatchServer;
  beforeAll(async () => {
    recDir = mkdtempSync(join(tmpdir(), "benchmax-watch-url-"));
    const env = calcEnv();
    env.capabilities!.explain = {
      explainReward: (_id, _messages, task) => ({ extracted: "x", gold: `GOLD-${String(task.groundTruth)}` }),
    };
    rec = await serveEnv(env, { tasks, token: TOKEN, record: join(recDir, "run") });
    live = await startWatch(rec.url, { serverToken: TOKEN, pollMs: 100 });
  });
  afterAll(async () => {
    await live?.close();
    await rec?.close();
    rmSync(recDir, { recursive: true, force: true });
  });

  /** A SkyRL-style client over OpenEnv HTTP: POST /reset tagged with the global step, then /step until done. */
  async function episode(step: number, taskId: string, replies: string[]) {
    const headers = { "content-type": "application/json", authorization: `Bearer ${TOKEN}` };
    const reset = await fetch(`${rec.url}/reset`, {
      method: "POST",
      headers,
      body: JSON.stringify({ task_id: taskId, metadata: { trainer_step: step } }),
    });
    expect(reset.status).toBe(200);
    const obs = ((await reset.json()) as { observation: { episode_id: string; rollout_token: string } }).observation;
    let done = false;
    for (const content of replies) {
      const r = await fetch(`${rec.url}/step`, {
        method: "POST",
        headers,
        body: JSON.stringify({
          action: { type: "message", content },
          episode_id: obs.episode_id,
          rollout_token: obs.rollout_token,
        }),
      });
      expect(r.status).toBe(200);
      done = ((await r.json()) as { done: boolean }).done;
    }
    expect(done).toBe(true);
  }
  const add = (a: number, b: number) => `<tool_call>{"name": "add", "arguments": {"a": ${a}, "b": ${b}}}</tool_call>`;

  it("the feed needs the server's token and never carries the gold", async () => {
    expect((await fetch(rec.url + RECORD_FEED_PATH)).status).toBe(401);
    await expect(startWatch(rec.url, { serverToken: "wrong" })).rejects.toThrow(/HTTP 403/);
  });

  it.skipIf(!available)(
    "draws the recording server's rollouts by trainer step, and a new rollout appears while the page is open",
    async () => {
      await episode(1, "t1", [add(2, 3), "<answer>5</answer>"]);
      await episode(1, "t2", ["<answer>0</answer>"]);
      await episode(2, "t2", [add(10, 7), "<answer>17</answer>"]);
      const page = await browser!.newPage({ viewport: { width: 1400, height: 1100 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      const seen: string[] = [];
      page.on("response", async (r) => seen.push(await r.text().catch(() => "")));
      await page.goto(live.url);
      await page.waitForSelector('body[data-ready][data-total="3"]', { timeout: 20_000 });
      const labels = () =>
        page.evaluate(
          () =>
            (globalThis as unknown as { benchmaxCharts: Record<string, { data: { labels: string[] } }> })
              .benchmaxCharts["chart-reward"]!.data.labels,
        );
      expect(await labels()).toEqual(["1", "2"]);
      // the SkyRL-style client finishes one more episode at step 3: it reaches the open page over SSE (no reload).
      // The wait is on the DOM, with a generous limit for a loaded machine: the 2 s the dashboard promises come from
      // its design (the feed polls the file every 250 ms, the dashboard pushes every pollMs), not from this clock
      await episode(3, "t1", [add(2, 3), "<answer>5</answer>"]);
      await page.waitForSelector('body[data-total="4"]', { timeout: 15_000 });
      expect(await labels()).toEqual(["1", "2", "3"]);
      expect(await page.textContent("#latest-body tr:first-child td:first-child")).toBe("3");
      // tool latency per tool, from the rollouts' toolLatencyMs
      const tools = await page.evaluate(() =>
        (
          globalThis as unknown as {
            benchmaxCharts: Record<string, { data: { datasets: { label: string }[] } }>;
          }
        ).benchmaxCharts["chart-tool-latency"]!.data.datasets.map((d) => d.label),
      );
      expect(tools).toEqual(["add p50", "add p95"]);
      // the feed dropped the reward explanation: the viewer shows no gold, and no response carried one
      await page.click("#latest-body tr:first-child");
      await page.waitForSelector("#viewer[data-rollout]");
      expect(await page.$("#viewer code.gold")).toBeNull();
      expect(seen.join("\n")).not.toContain("GOLD-");
      expect(JSON.stringify(live.series.snapshot())).not.toContain("GOLD-");
      mkdirSync(OUT, { recursive: true });
      const shot = join(OUT, "watch-recording-server.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      expect(errors).toEqual([]);
      await page.close();
    },
    60_000,
  );
});
