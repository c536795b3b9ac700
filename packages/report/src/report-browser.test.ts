import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, normalize } from "node:path";
import { pathToFileURL } from "node:url";
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareRuns, type GateSummary } from "./compare-runs.js";
import { makeRunDir } from "./make-run.test-util.js";
import { syntheticResult, writeSyntheticRun } from "./synthetic-run.test-util.js";
import { writeReportFiles } from "./write-report.js";

/** The bits of a DOM canvas the check reads (the test has no DOM lib types). */
interface Canvas {
  width: number;
  height: number;
  getContext(
    kind: "2d",
  ): { getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } } | null;
}

/** The page's document, as the callbacks run in the browser see it (this file compiles without the DOM lib). */
interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
  querySelector(sel: string): PageElement | null;
  querySelectorAll(sel: string): Iterable<PageElement>;
  scrollIntoView(): void;
}
declare const document: { getElementById(id: string): PageElement | null };

const CHROMIUM = process.env.BENCHMAX_CHROMIUM ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) {
  console.warn(
    `report-browser.test: skipped, no Chromium at ${CHROMIUM} (apt-get install -y chromium, or set BENCHMAX_CHROMIUM)`,
  );
}

let browser: Browser | undefined;
let root: string;
let server: Server | undefined;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "benchmax-report-browser-"));
  if (!available) return;
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--no-sandbox",
      "--disable-background-networking",
      "--disable-gpu",
      "--disable-component-update",
      "--no-first-run",
    ],
  });
});
afterAll(async () => {
  await browser?.close();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  // the run dirs go; the screenshots stay under root for a look
  for (const f of readdirSync(root)) if (!f.endsWith(".png")) rmSync(join(root, f), { recursive: true, force: true });
  if (available) console.log(`report screenshots under ${root}`);
});

/** A page that may load only what `allow` matches (file:// by default): the report works offline. */
async function openPage(url: string, allow: RegExp = /^file:/) {
  const context: BrowserContext = await browser!.newContext({ viewport: { width: 1400, height: 1000 } });
  const blocked: string[] = [];
  await context.route(
    (u) => !allow.test(u.href),
    (route) => {
      blocked.push(route.request().url());
      return route.abort();
    },
  );
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  await page.goto(url);
  await page.waitForSelector("body[data-ready]");
  return { page, context, errors, blocked };
}

/** Every chart's size, drawn pixels and data points. */
async function chartStats(page: Page) {
  return page.evaluate(() => {
    const w = globalThis as unknown as {
      benchmaxCharts: Record<string, { canvas: Canvas; data: { datasets: { data: unknown[] }[] } }>;
    };
    return Object.fromEntries(
      Object.entries(w.benchmaxCharts).map(([id, c]) => {
        const { width, height } = c.canvas;
        const px = c.canvas.getContext("2d")!.getImageData(0, 0, width, height).data;
        let painted = 0;
        for (let i = 3; i < px.length; i += 4) if (px[i]! > 0) painted++;
        return [id, { width, height, painted, points: c.data.datasets.reduce((a, d) => a + d.data.length, 0) }];
      }),
    );
  });
}

/** Click a rollout in the table (after filtering to its task) and wait for its transcript. */
async function openTranscript(page: Page, task: string, rolloutId: string) {
  await page.fill("#filter-task", task);
  await page.click(`#rollout-table tr[data-rollout="${rolloutId}"]`);
  await page.waitForSelector(`#viewer[data-rollout="${rolloutId}"]:is([data-state=ready], [data-state=error])`);
  return page.evaluate(() => {
    const v = document.getElementById("viewer")!;
    const texts = (sel: string) => [...v.querySelectorAll(sel)].map((e) => (e.textContent ?? "").trim());
    return {
      state: v.getAttribute("data-state"),
      title: texts("h3")[0],
      facts: texts("dl.facts dd"),
      roles: [...v.querySelectorAll(".msg")].map((e) => e.getAttribute("data-role")),
      contents: texts(".msg > pre.content"),
      tools: [...v.querySelectorAll(".toolcall")].map((e) => e.getAttribute("data-tool")),
      args: texts(".toolcall pre.args"),
      components: Object.fromEntries(
        [...v.querySelectorAll("tr[data-component]")].map((tr) => [
          tr.getAttribute("data-component"),
          tr.querySelector("td.num")?.textContent,
        ]),
      ),
      error: texts(".errorbox")[0],
      text: v.textContent ?? "",
    };
  });
}

const rowCount = (page: Page) => page.locator("#rollout-table tbody tr").count();
const countText = (page: Page) => page.textContent("#filter-count");

describe.skipIf(!available)("report.html in headless Chromium", () => {
  it("at 50 rollouts: draws every chart offline, flags compare's regressions, filters, and shows a transcript", async () => {
    await makeRunDir(join(root, "base"), { tasks: 25, accuracy: 1, policy: "base" });
    await makeRunDir(join(root, "cand"), { tasks: 25, accuracy: 0.5, policy: "cand" });
    const w = await writeReportFiles(join(root, "cand"), { baseline: join(root, "base") });
    const { page, context, errors, blocked } = await openPage(pathToFileURL(w.path).href);
    try {
      expect(errors).toEqual([]);
      expect(blocked).toEqual([]);
      const charts = await chartStats(page);
      expect(Object.keys(charts).sort()).toEqual([
        "chart-compare",
        "chart-outcomes",
        "chart-passk", // two samples per task: pass@k and max@k
        "chart-reward",
        "chart-task-pass",
        "chart-tasks",
        "chart-tools",
        "chart-turns",
      ]);
      for (const [id, c] of Object.entries(charts)) {
        expect(c.width, id).toBeGreaterThan(0);
        expect(c.points, id).toBeGreaterThan(0);
        expect(c.painted, `${id} has drawn pixels`).toBeGreaterThan(500);
      }

      // the rows the page flags are the rows `compare` fails on
      const read = (d: string) => JSON.parse(readFileSync(join(root, d, "summary.json"), "utf8")) as GateSummary;
      const gate = compareRuns(read("base"), read("cand"));
      const flagged = await page.$$eval("#compare-table tr[data-regression]", (trs) =>
        trs.map((tr) => tr.getAttribute("data-metric")),
      );
      expect(flagged).toEqual(gate.rows.filter((r) => r.regression).map((r) => r.metric));
      expect(await page.getAttribute("#gate", "data-failed")).toBe("true");

      // filters: outcome, task (exact id or part of one), reward range
      expect(await countText(page)).toBe("50 rollouts");
      expect(await rowCount(page)).toBe(50);
      await page.fill("#filter-reward-min", "0.5");
      expect(await countText(page)).toBe("26 of 50 rollouts");
      await page.fill("#filter-reward-max", "0.5");
      expect(await countText(page)).toBe("0 of 50 rollouts");
      await page.click("#filter-clear");
      await page.selectOption("#filter-outcome", "truncated");
      expect(await countText(page)).toBe("0 of 50 rollouts");
      await page.selectOption("#filter-outcome", "completed");
      await page.fill("#filter-task", "t1");
      expect(await countText(page)).toBe("2 of 50 rollouts");
      await page.fill("#filter-task", "t2");
      expect(await countText(page)).toBe("2 of 50 rollouts");
      await page.fill("#filter-task", "t");
      expect(await countText(page)).toBe("50 rollouts");
      // a click on a task row shows its rollouts
      await page.click("#filter-clear");
      await page.click('#task-table tr:has(td:text-is("t13"))');
      expect(await page.inputValue("#filter-task")).toBe("t13");
      expect(
        await page.$$eval("#rollout-table tbody tr", (trs) => trs.map((t) => t.getAttribute("data-rollout"))),
      ).toEqual(["t13#0", "t13#1"]);

      // sorting by a column: rewards high to low, then back
      await page.click("#filter-clear");
      await page.click('#rollout-table th:text-is("reward")');
      const rewards = () =>
        page.$$eval("#rollout-table tbody tr td:nth-child(4)", (tds) => tds.map((td) => Number(td.textContent)));
      expect((await rewards()).slice(0, 26)).toEqual(new Array(26).fill(1));
      await page.click('#rollout-table th:text-is("reward")');
      expect((await rewards())[0]).toBeCloseTo(0.1);

      // the transcript: system prompt, each reply, tool calls with arguments, tool results, components, outcome
      const t = await openTranscript(page, "t3", "t3#1");
      expect(t.state).toBe("ready");
      expect(t.title).toBe("t3#1");
      expect(t.facts.slice(0, 3)).toEqual(["t3", "completed", "1"]);
      expect(t.roles).toEqual(["system", "user", "assistant", "tool", "assistant"]);
      expect(t.contents[0]).toContain("Add the numbers with the add tool");
      expect(t.contents[1]).toBe("3 + 4?");
      expect(t.tools).toEqual(["add"]);
      expect(JSON.parse(t.args[0]!)).toEqual({ a: 3, b: 4 });
      // [system, user, tool result, final reply]: the first reply holds only the call
      expect(t.contents.slice(2)).toEqual(["7", "<answer>7</answer>"]);
      expect(t.components).toEqual({ exact_match: "1", format: "1" });
      // a failed one shows its zero component
      const bad = await openTranscript(page, "t20", "t20#0");
      expect(bad.components).toEqual({ exact_match: "0", format: "1" });
      expect(bad.contents.at(-1)).toBe("<answer>0</answer>");
      expect(await page.getAttribute('#rollout-table tr[data-rollout="t20#0"]', "class")).toContain("selected");

      await page.evaluate(() => document.getElementById("rollouts")!.scrollIntoView());
      const shot = join(root, "report-50.png");
      await page.screenshot({ path: shot, fullPage: true });
      expect(statSync(shot).size).toBeGreaterThan(10_000);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it("at 20,000 rollouts: pages the table, loads a transcript chunk from file://, says when one is missing", async () => {
    const dir = join(root, "big");
    writeSyntheticRun(dir, 20_000, { group: 4 });
    const w = await writeReportFiles(dir);
    expect(w.bytes).toBeLessThanOrEqual(5 * 1024 * 1024);
    expect(w.transcriptFiles.length).toBeGreaterThan(5);
    const { page, context, errors, blocked } = await openPage(pathToFileURL(w.path).href);
    try {
      expect(blocked).toEqual([]);
      const charts = await chartStats(page);
      for (const [id, c] of Object.entries(charts)) {
        expect(c.painted, `${id} has drawn pixels`).toBeGreaterThan(500);
        // readable: histograms and top-N, never one bar per rollout
        expect(c.points, id).toBeLessThanOrEqual(60);
      }
      expect(await countText(page)).toBe("20000 rollouts");
      expect(await rowCount(page)).toBe(50);
      expect(await page.textContent("#rollout-table .pageinfo")).toBe("rows 1–50 of 20000");
      await page.click("#rollout-table .pager button:text('next ›')");
      expect(await page.textContent("#rollout-table .pageinfo")).toBe("rows 51–100 of 20000");

      // a rollout deep in the run: its chunk is loaded on demand by a <script> element
      const i = 4321 * 4 + 2;
      const expected = syntheticResult(i, { tasks: 5000, group: 4 });
      const t = await openTranscript(page, "q4321", "q4321#2");
      expect(t.state).toBe("ready");
      expect(t.roles).toEqual(expected.messages.map((m) => m.role));
      expect(t.contents[1]).toBe(expected.messages[1]!.content);
      expect(t.facts[1]).toBe(expected.outcome);
      const calls = expected.messages.flatMap((m) => (m.role === "assistant" ? (m.tool_calls ?? []) : []));
      expect(t.tools).toEqual(calls.map((c) => c.function.name));
      expect(t.args.map((a) => JSON.parse(a))).toEqual(calls.map((c) => JSON.parse(c.function.arguments)));
      expect(await page.$$eval("script[src]", (s) => s.map((e) => e.getAttribute("src")))).toHaveLength(1);

      // an error rollout shows its error and no reward
      let e = 0;
      while (syntheticResult(e, { tasks: 5000, group: 4 }).outcome !== "env_error") e++;
      const errRollout = syntheticResult(e, { tasks: 5000, group: 4 });
      await page.selectOption("#filter-outcome", "env_error");
      const te = await openTranscript(page, errRollout.taskId, errRollout.rolloutId);
      expect(te.error).toBe(`error: ${errRollout.error}`);
      expect(te.facts[2]).toBe("—");
      expect(te.text).toContain("not scored (env_error");

      await page.evaluate(() => document.getElementById("rollouts")!.scrollIntoView());
      await page.screenshot({ path: join(root, "report-20000-viewer.png") });
      await page.screenshot({ path: join(root, "report-20000.png"), fullPage: true });
      expect(statSync(join(root, "report-20000.png")).size).toBeGreaterThan(10_000);
      expect(errors).toEqual([]);

      // a chunk missing from beside the page: a clear message, not a hang
      const last = w.transcriptFiles.at(-1)!;
      renameSync(last, `${last}.away`);
      await page.selectOption("#filter-outcome", "");
      const gone = await openTranscript(page, "q4999", "q4999#3");
      expect(gone.state).toBe("error");
      expect(gone.error).toMatch(
        /Transcript not available: could not load report\.transcripts\/chunk-\d+\.js: keep the folder report\.transcripts\/ next to report\.html/,
      );
      renameSync(`${last}.away`, last);
    } finally {
      await context.close();
    }
  }, 90_000);

  it("shows hostile text in ids, prompts and tool results as text, never as markup", async () => {
    const dir = join(root, "hostile");
    const evil = `</script><img src=x onerror="globalThis.pwned=1"><b>bold</b>`;
    const results = Array.from({ length: 4 }, (_, i) => {
      const r = syntheticResult(i, { tasks: 2, group: 2 });
      return {
        ...r,
        taskId: `t"${evil}`,
        rolloutId: `t"${evil}#${i}`,
        error: evil,
        messages: r.messages.map((m) => (m.role === "tool" || m.role === "user" ? { ...m, content: evil } : m)),
      };
    });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "results.jsonl"), results.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const w = await writeReportFiles(dir);
    const { page, context, errors } = await openPage(pathToFileURL(w.path).href);
    try {
      expect(
        await page.evaluate(
          (id) => (globalThis as unknown as { benchmaxOpenRollout(id: string): boolean }).benchmaxOpenRollout(id),
          results[1]!.rolloutId,
        ),
      ).toBe(true);
      await page.waitForSelector("#viewer[data-state=ready]");
      expect(await page.textContent("#viewer h3")).toBe(results[1]!.rolloutId);
      expect(await page.$$eval("#viewer .msg[data-role=user] pre", (p) => p.map((e) => e.textContent))).toEqual([evil]);
      expect(await page.locator("img").count()).toBe(0);
      expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined();
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("served over http: loads transcript chunks with fetch and opens a #rollout= link", async () => {
    const dir = join(root, "served");
    await makeRunDir(dir, { tasks: 6 });
    const w = await writeReportFiles(dir, { transcripts: "sidecar", chunkBytes: 2_000 });
    expect(w.transcriptFiles.length).toBeGreaterThan(1);
    const types: Record<string, string> = { ".html": "text/html", ".js": "text/javascript" };
    const requested: string[] = [];
    server = createServer((req, res) => {
      const path = normalize(join(dir, decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname)));
      requested.push(req.url ?? "");
      if (!path.startsWith(dir) || !existsSync(path)) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" });
      res.end(readFileSync(path));
    });
    await new Promise<void>((r) => server!.listen(0, "127.0.0.1", r));
    const port = (server.address() as AddressInfo).port;
    const { page, context, errors } = await openPage(
      `http://127.0.0.1:${port}/report.html#rollout=${encodeURIComponent("t5#1")}`,
      new RegExp(`^http://127\\.0\\.0\\.1:${port}/`),
    );
    try {
      await page.waitForSelector('#viewer[data-rollout="t5#1"][data-state=ready]');
      expect(await page.textContent("#viewer h3")).toBe("t5#1");
      expect(await page.$$eval("script[src]", (s) => s.length)).toBe(0);
      const t = await openTranscript(page, "t0", "t0#0");
      expect(t.roles).toEqual(["system", "user", "assistant", "tool", "assistant"]);
      expect(requested.filter((u) => u.includes("chunk-")).length).toBe(2);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);
});
