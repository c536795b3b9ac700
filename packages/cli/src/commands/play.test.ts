import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { openaiPolicy, type StateViewCapability, type Task } from "@benchmax/core";
import { type FakeVllm, startFakeVllm } from "@benchmax/core/testing";
import { type PlayServer, startPlay } from "@benchmax/report";
import { calcEnv } from "@benchmax/server/testing";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { playApi as api } from "./play-api.test-util.js";

const OUT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test-output");
const CHROMIUM = process.env.BENCHMAX_CHROMIUM ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`play.test: skipped, no Chromium at ${CHROMIUM}`);

const GOLD = "1234567";
const tasks: Task<string>[] = [{ id: "big", prompt: "What is 1234000 + 567?", groundTruth: GOLD }];

let play: PlayServer;
let played: PlayServer;
let fake: FakeVllm;
let browser: Browser | undefined;
const explained = () => {
  const env = calcEnv();
  env.capabilities!.explain = {
    explainReward: (_id, messages, task) => ({
      extracted: String(messages.at(-1)?.content ?? ""),
      gold: String(task.groundTruth),
      diff: [`the answer is not ${String(task.groundTruth)}`, "compared as text"],
    }),
  };
  return env;
};
beforeAll(async () => {
  play = await startPlay(explained(), { tasks });
  fake = await startFakeVllm();
  // the fake vLLM calls add(2, 2) in Hermes text, then answers <answer>4</answer>
  const policy = openaiPolicy({ model: "fake-model", baseURL: fake.url });
  played = await startPlay(explained(), { tasks, policy, toolFormat: "hermes" });
  if (available) browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
});
afterAll(async () => {
  await browser?.close();
  await play?.close();
  await played?.close();
  await fake?.close();
});

describe("benchmax play", () => {
  it("refuses a request without the token", async () => {
    expect((await fetch(play.url.replace(/\?token=.*/, ""))).status).toBe(401);
  });

  it.skipIf(!available)(
    "steps one episode by clicks: a tool call through the form, its result, then the answer, the reward and only then the gold",
    async () => {
      const page = await browser!.newPage({ viewport: { width: 1300, height: 900 } });
      const responses: string[] = [];
      page.on("response", async (r) => {
        if (r.url().includes("/api/")) responses.push(await r.text());
      });
      await page.goto(play.url);
      await page.waitForSelector("body[data-ready]");
      expect(await page.content()).not.toContain(GOLD);
      await page.click("#start");
      await page.waitForSelector('body[data-state="running"]');
      await page.fill("#tool-name", "add");
      await page.fill("#tool-args", '{"a": 1234000, "b": 567}');
      await page.click("#send");
      await page.waitForSelector('.msg[data-role="tool"]');
      expect(await page.textContent('.msg[data-role="tool"] pre')).toBe(GOLD);
      // before the end no answer from the server named the gold as such
      expect(responses.join("\n")).not.toMatch(/"gold"|explain/);
      await page.fill("#reply", "<answer>1234568</answer>");
      await page.click("#send");
      await page.waitForSelector('body[data-state="done"]');
      expect(await page.textContent("#result h3")).toBe("Episode ended: completed · reward 0");
      expect(await page.textContent('#result [data-component="exact_match"]')).toBe("exact_match 0");
      expect(await page.textContent("#result code.gold")).toBe(GOLD);
      // issue 41: the env's explanation of the 0 is shown whole, every line of it
      expect(await page.$$eval("#result li[data-why]", (els) => els.map((e) => e.textContent))).toEqual([
        `the answer is not ${GOLD}`,
        "compared as text",
      ]);
      mkdirSync(OUT, { recursive: true });
      const shot = join(OUT, "play-episode.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      await page.close();
    },
    60_000,
  );

  it.skipIf(!available)(
    "an env with a state view: the page draws it as a grid at the start and again after each tool call",
    async () => {
      // a calculator whose state view is a one-sheet grid of the sums its add tool returned, one a row
      const sums = new Map<string, number[]>();
      const env = calcEnv();
      const runTool = env.runTool.bind(env);
      env.runTool = async (id, call) => {
        const out = await runTool(id, call);
        const text =
          typeof out.content === "string" ? out.content : out.content.map((p) => ("text" in p ? p.text : "")).join("");
        sums.set(id, [...(sums.get(id) ?? []), Number(text)]);
        return out;
      };
      const stateView: StateViewCapability = {
        renderState: (id) => ({
          kind: "grid",
          sheets: [{ name: "sums", cells: [["sum"], ...(sums.get(id) ?? []).map((n) => [n])] }],
        }),
      };
      Object.assign(env, { capabilities: { ...env.capabilities, stateView } });
      const viewed = await startPlay(env, { tasks });
      try {
        const page = await browser!.newPage({ viewport: { width: 1300, height: 900 } });
        await page.goto(viewed.url);
        await page.waitForSelector("body[data-ready]");
        expect(await page.isHidden("#state-panel")).toBe(true);
        await page.click("#start");
        await page.waitForSelector('#state[data-kind="grid"] [data-sheet="sums"]');
        expect(await page.textContent('[data-cell="A1"]')).toBe("sum");
        expect(await page.$('[data-cell="A2"]')).toBeNull();
        await page.fill("#tool-name", "add");
        await page.fill("#tool-args", '{"a": 1234000, "b": 567}');
        await page.click("#send");
        await page.waitForSelector('[data-cell="A2"]');
        expect(await page.textContent('[data-cell="A2"]')).toBe(GOLD);
        mkdirSync(OUT, { recursive: true });
        await page.screenshot({ path: join(OUT, "play-state-view.png"), fullPage: true });
        await page.close();
      } finally {
        await viewed.close();
      }
    },
    60_000,
  );

  it("without a model, a model turn is refused; a written task needs a prompt, and a row needs the env's parser", async () => {
    const start = (await (await api(play, "/api/start", { taskId: "big" })).json()) as { id: string };
    const r = await api(play, "/api/model-step", { id: start.id });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: string }).error).toMatch(/--endpoint/);
    expect((await api(play, "/api/start", { custom: { prompt: "  " } })).status).toBe(400);
    const row = await api(play, "/api/start", { custom: { row: '{"question": "q"}' } });
    expect(row.status).toBe(400);
    expect(((await row.json()) as { error: string }).error).toMatch(/reads no dataset rows/);
  });

  it.skipIf(!available)(
    "a model behind an OpenAI-compatible endpoint plays a task written in the page; no response names the gold before the end",
    async () => {
      const WRITTEN_GOLD = "GOLD-7781";
      const page = await browser!.newPage({ viewport: { width: 1300, height: 900 } });
      const bodies: { url: string; text: string; state: string }[] = [];
      const pending: Promise<void>[] = [];
      page.on("response", (r) => {
        pending.push(
          (async () => {
            const text = await r.text().catch(() => "");
            bodies.push({ url: r.url(), text, state: text.includes('"done":true') ? "done" : "before" });
          })(),
        );
      });
      await page.goto(played.url);
      await page.waitForSelector("body[data-ready]");
      await page.click("#write-task summary");
      await page.fill("#custom-prompt", "What is 2 + 2? Use the add tool.");
      await page.fill("#custom-gold", WRITTEN_GOLD);
      await page.click("#start-custom");
      await page.waitForSelector('body[data-state="running"]');
      await page.click("#model-step");
      await page.waitForSelector('.msg[data-role="tool"]');
      expect(await page.textContent('.msg[data-role="tool"] pre')).toBe("4");
      await page.waitForSelector('body[data-model="idle"]');
      await page.click("#model-step");
      await page.waitForSelector('body[data-state="done"]');
      await Promise.all(pending);
      // every response before the one that ended the episode: the page, the start, the model's first turn
      const before = bodies.filter((b) => b.state === "before");
      expect(before.length).toBeGreaterThanOrEqual(3);
      for (const b of before) expect(b.text, b.url).not.toContain(WRITTEN_GOLD);
      // nor did the model see it
      expect(fake.requests.length).toBe(2);
      expect(JSON.stringify(fake.requests)).not.toContain(WRITTEN_GOLD);
      expect(fake.requests[0]!.model).toBe("fake-model");
      expect(await page.textContent("#result h3")).toBe("Episode ended: completed · reward 0");
      expect(await page.textContent("#result code.extracted")).toBe("<answer>4</answer>");
      expect(await page.textContent("#result code.gold")).toBe(WRITTEN_GOLD);
      mkdirSync(OUT, { recursive: true });
      const shot = join(OUT, "play-model-written-task.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      await page.close();
    },
    60_000,
  );
});
