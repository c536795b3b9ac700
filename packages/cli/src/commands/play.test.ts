import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Task } from "@benchmax/core";
import { type PlayServer, startPlay } from "@benchmax/report";
import { calcEnv } from "@benchmax/server/testing";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const OUT = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test-output");
const CHROMIUM = process.env.BENCHMAX_CHROMIUM ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`play.test: skipped, no Chromium at ${CHROMIUM}`);

const GOLD = "1234567";
const tasks: Task<string>[] = [{ id: "big", prompt: "What is 1234000 + 567?", groundTruth: GOLD }];

let play: PlayServer;
let browser: Browser | undefined;
beforeAll(async () => {
  const env = calcEnv();
  env.explainReward = (_id, messages, task) => ({
    extracted: String(messages.at(-1)?.content ?? ""),
    gold: String(task.groundTruth),
  });
  play = await startPlay(env, { tasks });
  if (available) browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
});
afterAll(async () => {
  await browser?.close();
  await play?.close();
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
      mkdirSync(OUT, { recursive: true });
      const shot = join(OUT, "play-episode.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      await page.close();
    },
    60_000,
  );
});
