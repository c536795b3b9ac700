import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRun } from "./load-run.js";
import { makeRunDir } from "./make-run.test-util.js";
import { buildReportData } from "./report-data.js";
import { TranscriptStore } from "./transcripts.js";
import { writeReport } from "./write-report.js";

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "benchmax-report-rl-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the report's RL panels", () => {
  it("shows pass@k, max@k, the zero-variance share, the breakdown by metadata and the gold beside the answer", async () => {
    const dir = join(root, "run");
    // 8 tasks × 2 samples, 6 of 8 right (both samples agree): pass@1 = pass@2 = 0.75, every group has zero variance
    const summary = await makeRunDir(dir, { tasks: 8, accuracy: 0.75 });
    expect(summary.rl!.passAtK).toEqual({ 1: 0.75, 2: 0.75 });
    expect(summary.rl!.zeroVarianceShare).toBe(1);
    for (const level of ["easy", "hard"]) {
      const slice = summary.breakdown!.level![level]!;
      expect([slice.n, slice.scored, slice.passRate]).toEqual([8, 8, 0.75]);
      expect(slice.meanReward).toBeCloseTo((3 * 1 + 0.1) / 4, 12);
    }
    const html = readFileSync(await writeReport(dir), "utf8");
    expect(html).toContain('<h2 id="rl">RL numbers</h2>');
    expect(html).toMatch(/pass@2<\/div><div class="value">75\.0%/);
    expect(html).toMatch(/zero-variance groups<\/div><div class="value">100\.0%/);
    expect(html).toContain('<table class="breakdown" data-field="level">');
    expect(html).toContain('<canvas id="chart-passk">');
    // t7 is wrong: its transcript holds the extracted answer and the gold
    expect(html).toMatch(/"explain":\{"extracted":"0","gold":"15"\}/);
    expect(html).toMatch(/"taskMeta":\{"level":"hard"\}/);
  });

  it("computes the RL numbers from results.jsonl for a run whose summary.json predates them", async () => {
    const dir = join(root, "old");
    await makeRunDir(dir, { tasks: 4, accuracy: 0.5 });
    const s = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
    delete s.rl;
    delete s.breakdown;
    delete s.tokens;
    delete s.responseChars;
    writeFileSync(join(dir, "summary.json"), JSON.stringify(s));
    const store = new TranscriptStore();
    const data = buildReportData(loadRun(dir, { transcripts: store, dropMessages: true }));
    expect(data.rl!.passAtK).toEqual({ 1: 0.5, 2: 0.5 });
    expect(Object.keys(data.breakdown!.level!)).toEqual(["easy", "hard"]);
    expect(data.responseChars).toBeUndefined();
  });
});
