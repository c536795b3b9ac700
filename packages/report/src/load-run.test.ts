import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readResults } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { forEachJsonLine, loadRun } from "./load-run.js";
import { TranscriptStore } from "./transcripts.js";

const root = mkdtempSync(join(tmpdir(), "benchmax-load-run-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const read = (path: string) => {
  const out: unknown[] = [];
  forEachJsonLine(path, (v) => out.push(v));
  return out;
};

describe("forEachJsonLine", () => {
  it("reads lines longer than its buffer and characters split across reads, like core's readResults", () => {
    const path = join(root, "big.jsonl");
    // 3 MiB lines of multi-byte text: every read boundary falls inside a line, most inside a character
    const rows = [0, 1, 2].map((i) => ({ i, text: "é€😀".repeat(300_000 + i) }));
    writeFileSync(path, `${rows.map((r) => JSON.stringify(r)).join("\n")}\n\n`);
    expect(read(path)).toEqual(rows);
    expect(read(path)).toEqual(readResults(path));
  });

  it("skips a torn last line and names any other malformed line", () => {
    const torn = join(root, "torn.jsonl");
    writeFileSync(torn, '{"a":1}\n{"a":2}\n{"a":');
    expect(read(torn)).toEqual([{ a: 1 }, { a: 2 }]);
    const bad = join(root, "bad.jsonl");
    writeFileSync(bad, '{"a":1}\n\nnope\n{"a":2}\n');
    expect(() => read(bad)).toThrow(`${bad}:3: malformed results line`);
  });
});

describe("loadRun", () => {
  it("streams conversations into a store and keeps only the tool calls' names in the rows", () => {
    const dir = join(root, "run");
    const r = (id: string, outcome: string, attempt: number) => ({
      taskId: "t",
      rolloutId: id,
      sample: 0,
      attempt,
      outcome,
      turns: 2,
      toolCalls: 1,
      toolErrors: 0,
      durationMs: 1,
      messages: [
        { role: "system", content: "sys" },
        { role: "assistant", content: '<tool_call>{"name": "add", "arguments": {"a": 1}}</tool_call>' },
        { role: "tool", tool_call_id: "c0", content: "1" },
      ],
    });
    mkdirSync(dir, { recursive: true });
    const lines = [r("t#0", "infra_error", 0), r("t#1", "completed", 0), r("t#0", "completed", 1)];
    writeFileSync(join(dir, "results.jsonl"), lines.map((l) => `${JSON.stringify(l)}\n`).join(""));
    const store = new TranscriptStore();
    const run = loadRun(dir, { transcripts: store, dropMessages: true });
    store.finish();
    // the retry replaced the first attempt; the summary is recomputed from the last results
    expect(run.results.map((x) => [x.rolloutId, x.attempt])).toEqual([
      ["t#1", 0],
      ["t#0", 1],
    ]);
    expect(run.summary.outcomes.infra_error).toBe(0);
    expect(run.results[0]!.messages).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "0", type: "function", function: { name: "add", arguments: "" } }],
      },
    ]);
    expect(run.transcripts!.refs.get("t#0")).toEqual([0, 2]);
    const chunk = JSON.parse(store.chunkJson(0));
    expect(chunk[2]).toMatchObject({ rolloutId: "t#0", attempt: 1 });
    expect(chunk[2].messages).toHaveLength(3);
  });
});
