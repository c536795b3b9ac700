import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeRunDir } from "./make-run.test-util.js";
import { writeReport } from "./write-report.js";

/** Where the screenshots go: committed beside the package's tests, for a look without running them. */
const OUT = join(dirname(fileURLToPath(import.meta.url)), "..", "test-output");
const CHROMIUM = process.env.BENCHMAX_CHROMIUM ?? "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`rl-panels-browser.test: skipped, no Chromium at ${CHROMIUM}`);

interface El {
  textContent: string | null;
  getAttribute(n: string): string | null;
  querySelectorAll(s: string): El[];
}
declare const document: { querySelectorAll(s: string): El[]; getElementById(id: string): El | null };

let browser: Browser | undefined;
let root: string;
beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "benchmax-rl-browser-"));
  if (available) browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox", "--disable-gpu"] });
});
afterAll(async () => {
  await browser?.close();
  rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!available)("the report's RL panels in headless Chromium", () => {
  it("draws pass@k/max@k, the breakdown table, and the gold beside the extracted answer of a failed rollout", async () => {
    const dir = join(root, "run");
    await makeRunDir(dir, { tasks: 8, accuracy: 0.75 });
    const page = await browser!.newPage({ viewport: { width: 1400, height: 1000 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(pathToFileURL(await writeReport(dir)).href);
    await page.waitForSelector("body[data-ready]");
    const cards = await page.$$eval("#rl-cards .card", (cs) => cs.map((c) => c.textContent));
    expect(cards).toContain("pass@275.0%");
    expect(cards).toContain("zero-variance groups100.0%");
    const points = await page.evaluate(() => {
      const w = globalThis as unknown as {
        benchmaxCharts: Record<string, { data: { datasets: { data: number[] }[] } }>;
      };
      return w.benchmaxCharts["chart-passk"]!.data.datasets.map((d) => d.data);
    });
    expect(points[0]).toEqual([0.75, 0.75]);
    const rows = await page.$$eval('table.breakdown[data-field="level"] tbody tr', (trs) =>
      trs.map((tr) => tr.getAttribute("data-value")),
    );
    expect(rows).toEqual(["easy", "hard"]);
    // t7 is answered wrong: the viewer shows what was extracted and the gold
    await page.fill("#filter-task", "t7");
    await page.click('#rollout-table tr[data-rollout="t7#0"]');
    await page.waitForSelector('#viewer[data-rollout="t7#0"][data-state=ready]');
    expect(await page.textContent("#viewer .explain code.extracted")).toBe("0");
    expect(await page.textContent("#viewer .explain code.gold")).toBe("15");
    mkdirSync(OUT, { recursive: true });
    const shot = join(OUT, "report-rl-panels.png");
    await page.evaluate(() =>
      (document.getElementById("rl") as unknown as { scrollIntoView(): void }).scrollIntoView(),
    );
    await page.screenshot({ path: shot });
    expect(statSync(shot).size).toBeGreaterThan(10_000);
    const viewerShot = join(OUT, "report-answer-vs-gold.png");
    await page.locator("#viewer").screenshot({ path: viewerShot });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);

  it("draws each metric's curve across several runs (benchmax report A B C)", async () => {
    const accuracies = [0.25, 0.5, 0.75];
    const dirs = accuracies.map((_, i) => join(root, `series-${i}`));
    for (const [i, d] of dirs.entries()) await makeRunDir(d, { tasks: 8, accuracy: accuracies[i]! });
    const path = await writeReport(dirs[2]!, { series: dirs.slice(0, 2) });
    const page = await browser!.newPage({ viewport: { width: 1400, height: 900 } });
    const errors: string[] = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(pathToFileURL(path).href);
    await page.waitForSelector("body[data-ready]");
    const curves = await page.evaluate(() => {
      const w = globalThis as unknown as {
        benchmaxCharts: Record<string, { data: { labels: string[]; datasets: { label: string; data: number[] }[] } }>;
      };
      const c = w.benchmaxCharts["chart-runs"]!;
      return { labels: c.data.labels, sets: Object.fromEntries(c.data.datasets.map((d) => [d.label, d.data])) };
    });
    expect(curves.labels).toEqual(["series-0", "series-1", "series-2"]);
    expect(curves.sets["pass rate"]).toEqual([0.25, 0.5, 0.75]);
    expect(curves.sets.exact_match).toEqual([0.25, 0.5, 0.75]);
    expect(curves.sets["pass@2"]).toEqual([0.25, 0.5, 0.75]);
    await page.evaluate(() =>
      (document.getElementById("runs") as unknown as { scrollIntoView(): void }).scrollIntoView(),
    );
    mkdirSync(OUT, { recursive: true });
    await page.screenshot({ path: join(OUT, "report-across-runs.png") });
    expect(errors).toEqual([]);
    await page.close();
  }, 60_000);
});
