import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { forEachJsonLine, type RolloutResult, summarize, UsageError } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRun } from "./load-run.js";
import { DEFAULT_MAX_LINE_BYTES } from "./run-files.js";
import { writeReportFiles } from "./write-report.js";

// Issue 41 (item 9): `report` followed a symlinked results file out of the run dir (and put what it read in the
// page), and one 200 MB line held it for 209 s. A run dir is data someone may hand you.

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "benchmax-run-files-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const row = (i: number, extra: Partial<RolloutResult> = {}): RolloutResult =>
  ({
    taskId: `t${i}`,
    rolloutId: `t${i}#0`,
    outcome: "completed",
    reward: 1,
    rewards: { correct: 1 },
    turns: 1,
    toolCalls: 0,
    durationMs: 1,
    messages: [
      { role: "user", content: `q${i}` },
      { role: "assistant", content: `a${i}` },
    ],
    ...extra,
  }) as RolloutResult;

function writeRun(dir: string, lines: string[], results: RolloutResult[] = []) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "results.jsonl"), lines.map((l) => `${l}\n`).join(""));
  if (results.length)
    writeFileSync(
      join(dir, "summary.json"),
      JSON.stringify(summarize(results, { env: "e", policy: "p", passThreshold: 1 })),
    );
}

describe("report: symlinks out of the run dir", () => {
  it("refuses a results.jsonl (or summary.json, run.json) that links out of the run dir, and writes nothing", async () => {
    const secret = join(root, "secret.jsonl");
    writeFileSync(secret, `${JSON.stringify(row(0, { messages: [{ role: "user", content: "TOP-SECRET" }] }))}\n`);
    for (const name of ["results.jsonl", "summary.json", "run.json"]) {
      const dir = join(root, `link-${name}`);
      writeRun(dir, [JSON.stringify(row(1))]);
      rmSync(join(dir, name), { force: true });
      symlinkSync(secret, join(dir, name));
      await expect(writeReportFiles(dir)).rejects.toThrow(UsageError);
      await expect(writeReportFiles(dir)).rejects.toThrow(
        `${join(dir, name)} is a symlink to ${secret}, outside the run dir ${dir}`,
      );
      expect(existsSync(join(dir, "report.html"))).toBe(false);
    }
    // a relative link climbing out is the same
    const up = join(root, "link-up");
    mkdirSync(up);
    symlinkSync("../secret.jsonl", join(up, "results.jsonl"));
    expect(() => loadRun(up)).toThrow(/is a symlink to .*secret\.jsonl, outside the run dir/);
  });

  it("reads a symlink that stays inside the run dir, and a run dir that is itself a link", async () => {
    const dir = join(root, "inside");
    writeRun(dir, [JSON.stringify(row(1)), JSON.stringify(row(2))]);
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "data", "r.jsonl"), readFileSync(join(dir, "results.jsonl")));
    rmSync(join(dir, "results.jsonl"));
    symlinkSync(join("data", "r.jsonl"), join(dir, "results.jsonl"));
    expect(loadRun(dir).results).toHaveLength(2);
    const alias = join(root, "alias");
    symlinkSync(dir, alias);
    const w = await writeReportFiles(alias);
    expect(existsSync(w.path)).toBe(true);
  });

  it("replaces a report.html that is a symlink instead of writing through it, and refuses a linked sidecar folder", async () => {
    const dir = join(root, "out-link");
    writeRun(dir, [JSON.stringify(row(1))]);
    const victim = join(root, "victim.txt");
    writeFileSync(victim, "keep me");
    symlinkSync(victim, join(dir, "report.html"));
    const w = await writeReportFiles(dir);
    expect(readFileSync(victim, "utf8")).toBe("keep me");
    expect(lstatSync(w.path).isSymbolicLink()).toBe(false);
    expect(readFileSync(w.path, "utf8")).toContain("<!doctype html>");
    const elsewhere = join(root, "elsewhere");
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, "chunk-0000.js"), "theirs");
    symlinkSync(elsewhere, join(dir, "report.transcripts"));
    await expect(writeReportFiles(dir, { transcripts: "sidecar" })).rejects.toThrow(
      /report\.transcripts is a symlink: the report does not write its transcripts folder through a link/,
    );
    expect(readFileSync(join(elsewhere, "chunk-0000.js"), "utf8")).toBe("theirs");
  });
});

describe("report: huge lines", () => {
  it("skips a ~20 MB line unread, names it on the page, and reads the other rows", async () => {
    const dir = join(root, "huge");
    const results = [row(1), row(2), row(3)];
    const huge = JSON.stringify(row(2, { messages: [{ role: "assistant", content: "x".repeat(20_000_000) }] }));
    expect(huge.length).toBeGreaterThan(DEFAULT_MAX_LINE_BYTES);
    writeRun(dir, [JSON.stringify(results[0]), huge, JSON.stringify(results[2])], results);
    const w = await writeReportFiles(dir);
    expect(w.tooLarge).toEqual([{ file: join(dir, "results.jsonl"), line: 2, bytes: huge.length }]);
    const html = readFileSync(w.path, "utf8");
    expect(html.length).toBeLessThan(5_000_000);
    expect(html).toContain('<div id="too-large"');
    expect(html).toContain(`${join(dir, "results.jsonl")}:2</code>: ${huge.length.toLocaleString("en-US")} bytes`);
    const run = loadRun(dir);
    expect(run.results.map((r) => r.rolloutId)).toEqual(["t1#0", "t3#0"]);
    // the summary still counts the rollout (summary.json)
    expect(run.summary.n).toBe(3);
  });

  it("a run whose only line is too large is refused with the line named; a lower limit is honoured", () => {
    const dir = join(root, "only-huge");
    writeRun(dir, [JSON.stringify(row(1, { error: "y".repeat(3_000_000) }))]);
    expect(() => loadRun(dir, { maxLineBytes: 1 << 20 })).toThrow(
      /results\.jsonl holds no result the report can read: line 1 \([\d,]+ bytes\) over the 1,048,576-byte limit/,
    );
    expect(loadRun(dir).results).toHaveLength(1);
  });

  it("core's reader skips an over-limit line without decoding it, or names it when no one is told", () => {
    const path = join(root, "lines.jsonl");
    writeFileSync(path, `{"a":1}\n{"b":"${"z".repeat(5000)}"}\n{"c":"é😀"}\n`);
    const seen: unknown[] = [];
    const skipped: Array<[number, number]> = [];
    forEachJsonLine(path, (v) => seen.push(v), { maxLineBytes: 1000, onTooLarge: (l, b) => skipped.push([l, b]) });
    expect(seen).toEqual([{ a: 1 }, { c: "é😀" }]);
    expect(skipped).toEqual([[2, 5008]]);
    expect(() => forEachJsonLine(path, () => {}, { maxLineBytes: 1000 })).toThrow(
      `${path}:2: line of 5,008 bytes, over the 1,000-byte limit a line may hold: not read`,
    );
  });
});
