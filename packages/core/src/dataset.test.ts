import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadTasksFromFile, parsePlainRow, readRows, validateRows } from "./dataset.js";
import { DatasetError } from "./errors.js";

const dir = mkdtempSync(join(tmpdir(), "bmx-ds-"));

describe("datasets", () => {
  it("reads JSONL with line numbers and JSON arrays", async () => {
    const p = join(dir, "a.jsonl");
    writeFileSync(
      p,
      '{"prompt":"a","ground_truth":1}\n\n{"messages":[{"role":"user","content":"b"}],"ground_truth":2}\n',
    );
    const rows = await readRows(p);
    expect(rows.map((r) => r.where)).toEqual([`${p}:1`, `${p}:3`]);
    const tasks = await loadTasksFromFile(p, (row, where) => parsePlainRow(row, where));
    expect(tasks[0]).toMatchObject({ prompt: "a", groundTruth: 1 });
    expect(tasks[1]!.messages).toHaveLength(1);
    const j = join(dir, "b.json");
    writeFileSync(j, JSON.stringify([{ id: 7, prompt: "x", ground_truth: "y" }]));
    expect((await loadTasksFromFile(j, (row, where) => parsePlainRow(row, where)))[0]!.id).toBe("7");
  });

  it("names file:line and field on bad rows", async () => {
    const p = join(dir, "bad.jsonl");
    writeFileSync(p, '{"prompt":"ok","ground_truth":1}\n{"prompt":5,"ground_truth":1}\n{broken\n');
    await expect(readRows(p)).rejects.toThrow(`${p}:3: malformed JSON line`);
    try {
      parsePlainRow({ prompt: 5, ground_truth: 1 }, "data.jsonl:2");
      expect.unreachable();
    } catch (e) {
      expect(e).toBeInstanceOf(DatasetError);
      expect((e as DatasetError).message).toMatch(/^data\.jsonl:2: prompt: /);
    }
    expect(() => parsePlainRow({ prompt: "x" }, "f:1")).toThrow(/ground_truth/);
    await expect(readRows(join(dir, "missing.jsonl"))).rejects.toThrow(/cannot read dataset file \(ENOENT\)/);
  });

  it("validates every row and reports duplicates", async () => {
    const p = join(dir, "v.jsonl");
    writeFileSync(
      p,
      '{"id":1,"prompt":"a","ground_truth":1}\n{"id":1,"prompt":"b","ground_truth":1}\n{"prompt":"c"}\n',
    );
    const r = await validateRows(p, (row, where) => parsePlainRow(row, where));
    expect(r).toMatchObject({ total: 3, valid: 1, invalid: 2 });
    expect(r.errors[0]!.message).toMatch(/duplicate task id "1"/);
    expect(r.errors[1]!.line).toBe(3);
  });

  it("lists every malformed JSON line with the rejected rows, in line order, and keeps checking", async () => {
    const p = join(dir, "m.jsonl");
    writeFileSync(
      p,
      '{"prompt":"a","ground_truth":1}\n{oops\n{"prompt":"c"}\nnot json\n{"prompt":"e","ground_truth":2}\n',
    );
    const r = await validateRows(p, (row, where) => parsePlainRow(row, where), 0);
    expect(r).toMatchObject({ total: 5, valid: 2, invalid: 3 });
    expect(r.errors.map((e) => e.line)).toEqual([2, 3, 4]);
    expect(r.errors[0]!.message).toMatch(/malformed JSON line/);
    expect(r.errors[1]!.where).toBe(`${p}:3`);
    await expect(validateRows(join(dir, "missing.jsonl"), (x) => x)).rejects.toThrow(/cannot read dataset file/);
  });
});
