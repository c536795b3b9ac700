import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type RolloutResult, readResults, summarize, UsageError } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compareRuns, type GateSummary } from "./compare-runs.js";
import { escapeHtml, scriptJson } from "./html-escape.js";
import { loadRun } from "./load-run.js";
import { makeRunDir } from "./make-run.test-util.js";
import { buildReportData, countHistogram, type ReportData, rewardHistogram, rolloutRows } from "./report-data.js";
import { writeSyntheticRun } from "./synthetic-run.test-util.js";
import { toolCallNames } from "./tool-calls.js";
import { CHUNK_CALLBACK, TranscriptStore, transcriptOf } from "./transcripts.js";
import { writeReport, writeReportFiles } from "./write-report.js";

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "benchmax-report-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The page's embedded data. */
function pageData(html: string): ReportData {
  return JSON.parse(html.match(/<script id="report-data" type="application\/json">(.*?)<\/script>/s)![1]!);
}

/** The metrics the page marks as regressions. */
function flaggedMetrics(html: string): string[] {
  return [...html.matchAll(/<tr data-metric="([^"]+)" data-regression="true">/g)].map((m) => m[1]!).sort();
}

/** A run dir written from results (summary computed the way `benchmax eval` does). */
function writeRun(dir: string, results: RolloutResult[], summaryExtra: Partial<GateSummary> = {}) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "results.jsonl"), results.map((r) => `${JSON.stringify(r)}\n`).join(""));
  const summary = { ...summarize(results, { env: "adder", policy: "p", passThreshold: 1 }), ...summaryExtra };
  writeFileSync(join(dir, "summary.json"), JSON.stringify(summary));
  return summary as GateSummary;
}

describe("writeReport", () => {
  it("writes one self-contained report.html with the transcripts inlined for a small run", async () => {
    const dir = join(root, "run");
    const summary = await makeRunDir(dir);
    const w = await writeReportFiles(dir);
    expect(w.path).toBe(join(dir, "report.html"));
    expect(w.transcriptFiles).toEqual([]);
    const html = readFileSync(w.path, "utf8");
    expect(w.bytes).toBe(Buffer.byteLength(html));
    expect(html.startsWith("<!doctype html>")).toBe(true);
    // chart.js is inlined: no external script or stylesheet
    expect(html).not.toMatch(/<script[^>]+src=/);
    expect(html).not.toMatch(/<link[^>]+stylesheet/);
    expect(html).toContain("Chart.js");
    for (const id of [
      "chart-reward",
      "chart-outcomes",
      "chart-turns",
      "chart-tasks",
      "chart-task-pass",
      "chart-tools",
    ]) {
      expect(html).toContain(id);
    }
    expect(html).not.toContain(`<canvas id="chart-compare">`);
    const data = pageData(html);
    expect(data.summary.n).toBe(summary.n);
    expect(data.index.rows).toHaveLength(16);
    expect(data.tasks).toHaveLength(8);
    expect(data.transcripts).toEqual({ mode: "inline", chunks: 1 });
    // the Hermes <tool_call> blocks in the replies count as calls of the add tool
    expect(data.tools).toEqual([{ name: "add", calls: summary.toolCalls.mean * summary.n }]);
    const transcripts = JSON.parse(
      html.match(/<script id="report-transcripts-0" type="application\/json">(.*?)<\/script>/s)![1]!,
    );
    expect(transcripts).toHaveLength(16);
    const [, , , , , , , , , chunk, pos] = data.index.rows.find((r) => r[0] === "t3#1")!;
    const t = transcripts[pos];
    expect(chunk).toBe(0);
    expect(t.rolloutId).toBe("t3#1");
    expect(t.rewards).toEqual({ exact_match: 1, format: 1 });
    expect(t.messages[0]).toMatchObject({ role: "system" });
    expect(t.messages.some((m: { role: string }) => m.role === "tool")).toBe(true);
  });

  it("moves the transcripts of a large run into sidecar chunk files and keeps the page under 5 MB at 20,000 rollouts", async () => {
    const dir = join(root, "big");
    writeSyntheticRun(dir, 20_000);
    const w = await writeReportFiles(dir);
    expect(w.bytes).toBeLessThanOrEqual(5 * 1024 * 1024);
    expect(w.transcriptFiles.length).toBeGreaterThan(1);
    const html = readFileSync(w.path, "utf8");
    expect(html).not.toContain("report-transcripts-0");
    const data = pageData(html);
    expect(data.index.rows).toHaveLength(20_000);
    expect(data.tasks).toHaveLength(5_000);
    expect(data.worstTasks).toHaveLength(20);
    expect(data.transcripts).toEqual({ mode: "sidecar", chunks: w.transcriptFiles.length, dir: "report.transcripts" });
    // charts stay one bar per bin, not per rollout
    expect(data.rewardHistogram).toHaveLength(10);
    expect(data.turnsHistogram.labels.length).toBeLessThanOrEqual(30);
    expect(data.taskPassHistogram.tasks.reduce((a, b) => a + b, 0)).toBe(
      data.tasks.filter((t) => t.passRate !== null).length,
    );
    // each chunk calls back with the page's id, its number and its transcripts, in index order
    const seen = new Set<string>();
    for (const [i, f] of w.transcriptFiles.entries()) {
      const text = readFileSync(f, "utf8");
      expect(statSync(f).size).toBeLessThan(2 * 1024 * 1024);
      const m = text.match(new RegExp(`^${CHUNK_CALLBACK}\\((.*)\\);\\n$`, "s"))!;
      const [id, n, list] = JSON.parse(`[${m[1]}]`) as [string, number, { rolloutId: string }[]];
      expect(id).toBe(data.reportId);
      expect(n).toBe(i);
      for (const t of list) seen.add(t.rolloutId);
    }
    expect(seen.size).toBe(20_000);
    const [, , , , , , , , , chunk, pos] = data.index.rows[12_345]!;
    const chunkText = readFileSync(w.transcriptFiles[chunk]!, "utf8");
    const list = JSON.parse(`[${chunkText.slice(chunkText.indexOf("(") + 1, chunkText.lastIndexOf(")"))}]`)[2];
    expect(list[pos].rolloutId).toBe(data.index.rows[12_345]![0]);

    // rewriting the small way removes the stale chunks
    await writeReportFiles(dir, { transcripts: "none" });
    expect(existsSync(join(dir, "report.transcripts"))).toBe(false);
  }, 60_000);

  it("writes sidecar chunks next to a custom --out and inlines on request", async () => {
    const dir = join(root, "custom");
    await makeRunDir(dir, { tasks: 4 });
    const out = join(root, "custom-out", "my report.html");
    mkdirSync(join(root, "custom-out"), { recursive: true });
    const w = await writeReportFiles(dir, { out, transcripts: "sidecar" });
    expect(w.transcriptFiles).toEqual([join(root, "custom-out", "my report.transcripts", "chunk-0000.js")]);
    expect(pageData(readFileSync(out, "utf8")).transcripts.dir).toBe("my report.transcripts");
    await writeReportFiles(dir, { out, transcripts: "inline" });
    expect(existsSync(join(root, "custom-out", "my report.transcripts"))).toBe(false);
    expect(readdirSync(join(root, "custom-out"))).toEqual(["my report.html"]);
  });

  it("flags the same regressions as `benchmax compare`, error rate included", async () => {
    const base = join(root, "base");
    const cand = join(root, "cand");
    await makeRunDir(base, { accuracy: 1, policy: "base" });
    await makeRunDir(cand, { accuracy: 0.5, policy: "cand" });
    const w = await writeReportFiles(cand, { baseline: base });
    expect(w.failed).toBe(true);
    const html = readFileSync(w.path, "utf8");
    expect(html).toContain("Comparison with baseline");
    expect(html).toContain("chart-compare");
    const readSummary = (d: string) => JSON.parse(readFileSync(join(d, "summary.json"), "utf8")) as GateSummary;
    const gate = compareRuns(readSummary(base), readSummary(cand));
    const expected = gate.rows.filter((r) => r.regression).map((r) => r.metric);
    expect(expected).toEqual(["reward.mean", "passRate", "component.exact_match"]);
    expect(flaggedMetrics(html)).toEqual([...expected].sort());
    expect(html).toContain('data-failed="true"');
    const data = buildReportData(loadRun(cand), loadRun(base));
    expect(data.baseline!.check).toEqual(gate);
    expect(data.tasks.find((t) => t.taskId === "t7")).toMatchObject({ passRate: 0, baselinePassRate: 1 });
    // the worst-tasks chart shows the tasks that lost the most
    expect(data.worstTasks.slice(0, 4).map((t) => t.taskId)).toEqual(["t4", "t5", "t6", "t7"]);

    // error rate: one transient infra error in 208 rollouts passes the gate, three fail it — in both
    const ok = readResults(join(base, "results.jsonl"))[0]!;
    const many = (n: number, errors: number): RolloutResult[] =>
      Array.from({ length: n }, (_, i) => ({
        ...ok,
        taskId: `t${i}`,
        rolloutId: `t${i}#0`,
        ...(i < errors
          ? { outcome: "infra_error" as const, reward: undefined, rewards: undefined, error: "HTTP 503" }
          : {}),
      }));
    const b208 = join(root, "b208");
    writeRun(b208, many(208, 0));
    for (const [errors, failed] of [
      [1, false],
      [3, true],
    ] as const) {
      const c = join(root, `c208-${errors}`);
      const cs = writeRun(c, many(208, errors));
      const verdict = compareRuns(readSummary(b208), cs);
      expect(verdict.failed).toBe(failed);
      const wr = await writeReportFiles(c, { baseline: b208 });
      expect(wr.failed).toBe(failed);
      const page = readFileSync(wr.path, "utf8");
      expect(flaggedMetrics(page)).toEqual(
        verdict.rows
          .filter((r) => r.regression)
          .map((r) => r.metric)
          .sort(),
      );
      expect(flaggedMetrics(page).includes("errorRate")).toBe(failed);
    }
    // the tolerance is the gate's option, passed through
    const strict = await writeReportFiles(join(root, "c208-1"), {
      baseline: b208,
      compare: { maxErrorRateIncrease: 0 },
    });
    expect(strict.failed).toBe(true);
    expect(flaggedMetrics(readFileSync(strict.path, "utf8"))).toEqual(["errorRate"]);
  });

  it("lists why compare refuses runs that are not comparable", async () => {
    await makeRunDir(join(root, "refuse-src"));
    const ok = readResults(join(root, "refuse-src", "results.jsonl"));
    const b = join(root, "refuse-b");
    const c = join(root, "refuse-c");
    writeRun(b, ok);
    writeRun(c, ok.slice(0, 10), { env: "crm" });
    const w = await writeReportFiles(c, { baseline: b });
    expect(w.failed).toBe(true);
    const html = readFileSync(w.path, "utf8");
    expect(html).toContain('id="mismatches"');
    expect(html).toContain("different env: baseline adder, candidate crm");
    expect(html).toMatch(/different rollout count: baseline 16.*candidate 10/);
    const allowed = await writeReportFiles(c, { baseline: b, compare: { allow: { env: true, rollouts: true } } });
    expect(allowed.failed).toBe(false);
  });

  it("rejects a dir without results and bad options with a clear error", async () => {
    const empty = join(root, "empty");
    rmSync(empty, { recursive: true, force: true });
    await expect(writeReport(join(root, "missing"))).rejects.toThrow(/no such run directory/);
    mkdirSync(empty);
    await expect(writeReport(empty)).rejects.toThrow(UsageError);
    await expect(writeReport(empty)).rejects.toThrow(/no results\.jsonl/);
    writeFileSync(join(empty, "results.jsonl"), "\n");
    await expect(writeReport(empty)).rejects.toThrow(/holds no results/);
    writeFileSync(join(empty, "results.jsonl"), 'not json\n{"taskId":"a"}\n');
    await expect(writeReport(empty)).rejects.toThrow(/results\.jsonl:1/);
    const dir = join(root, "run");
    await expect(writeReport(dir, { transcripts: "all" as never })).rejects.toThrow(/transcripts must be one of/);
    await expect(writeReport(dir, { compare: { maxDrop: -1 } })).rejects.toThrow(/maxDrop must be a number >= 0/);
  });

  it("summarises from results when summary.json is missing, counting a retried rollout once", async () => {
    const dir = join(root, "nosummary");
    await makeRunDir(dir);
    rmSync(join(dir, "summary.json"));
    const lines = readFileSync(join(dir, "results.jsonl"), "utf8");
    const first = JSON.parse(lines.split("\n")[0]!) as RolloutResult;
    writeFileSync(
      join(dir, "results.jsonl"),
      `${JSON.stringify({ ...first, outcome: "infra_error", reward: undefined, attempt: 0 })}\n${lines}`,
    );
    const run = loadRun(dir);
    expect(run.summary.n).toBe(16);
    expect(run.summary.outcomes.infra_error).toBe(0);
    expect(rolloutRows(buildReportData(run))).toHaveLength(16);
  });
});

describe("helpers", () => {
  it("bins rewards, counting only scored rollouts", () => {
    const mk = (reward: number | undefined, outcome = "completed") =>
      ({ outcome, reward, taskId: "t", turns: 1, toolCalls: 0 }) as never;
    const bins = rewardHistogram([mk(0), mk(1), mk(0.55), mk(undefined, "infra_error")], 10);
    expect(bins.map((b) => b.count)).toEqual([1, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
  });

  it("bins counts one value a bin up to 30 values, wider beyond", () => {
    expect(countHistogram({ turns: [0, 1, 1, 3] })).toEqual({
      labels: ["0", "1", "2", "3"],
      series: { turns: [1, 2, 0, 1] },
    });
    const wide = countHistogram({ a: [0, 59, 100], b: [5] });
    expect(wide.labels.length).toBeLessThanOrEqual(30);
    expect(wide.labels[0]).toBe("0–3");
    expect(wide.series.a!.reduce((x, y) => x + y, 0)).toBe(3);
    expect(wide.series.b![1]).toBe(1);
  });

  it("reads tool calls from OpenAI tool_calls and from Hermes <tool_call> text", () => {
    const call = (name: string) => ({ id: "c", type: "function" as const, function: { name, arguments: "{}" } });
    expect(toolCallNames({ role: "assistant", content: null, tool_calls: [call("a"), call("b")] })).toEqual(["a", "b"]);
    expect(
      toolCallNames({
        role: "assistant",
        content: 'x <tool_call>\n{"name": "search", "arguments": {}}\n</tool_call><tool_call>{oops</tool_call>',
      }),
    ).toEqual(["search", "(malformed call)"]);
    expect(toolCallNames({ role: "assistant", content: "no calls" })).toEqual([]);
  });

  it("cuts oversized messages in transcripts and drops inline image data", () => {
    const r = {
      taskId: "t",
      rolloutId: "t#0",
      outcome: "completed",
      messages: [
        { role: "tool", tool_call_id: "c", content: "x".repeat(50) },
        { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/png;base64,AAAA" } }] },
      ],
    } as unknown as RolloutResult;
    const t = transcriptOf(r, 10);
    expect(t.messages[0]!.content).toBe(`${"x".repeat(10)}\n… [40 more characters cut by the report]`);
    expect(t.messages[1]!.content).toEqual([{ type: "image_url", image_url: { url: "data:…" } }]);
    const store = new TranscriptStore({ chunkBytes: 1 });
    expect(store.add(r)).toEqual([0, 0]);
    expect(store.add(r)).toEqual([1, 0]);
    store.finish();
    expect(store.chunks).toHaveLength(2);
  });

  it("escapes data and text embedded in the page", () => {
    expect(escapeHtml(`<b a="x">&'`)).toBe("&lt;b a=&quot;x&quot;&gt;&amp;&#39;");
    const s = scriptJson({ x: "</script><!--" });
    expect(s).not.toContain("</script");
    expect(JSON.parse(s)).toEqual({ x: "</script><!--" });
  });
});
