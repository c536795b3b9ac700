import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadTasksFromFile, parsePlainRow, readRows, validateRows } from "./dataset.js";

const dir = mkdtempSync(join(tmpdir(), "bmx-dataset-"));
const plain = (row: unknown, where: string) => parsePlainRow(row, where);

describe("validateRows on large files (issue 27)", () => {
  it("checks 300,000 JSONL rows and a 300,000-row JSON array (no spread of the rows into a call)", async () => {
    const n = 300_000;
    const lines: string[] = [];
    for (let i = 0; i < n; i++) lines.push(`{"id":"r${i}","prompt":"${i}+1?","ground_truth":"${i + 1}"}`);
    const jsonl = join(dir, "big.jsonl");
    writeFileSync(jsonl, `${lines.join("\n")}\n`);
    const a = await validateRows(jsonl, plain, 5);
    expect(a).toMatchObject({ total: n, valid: n, invalid: 0 });
    const json = join(dir, "big.json");
    writeFileSync(json, `[${lines.join(",")}]`);
    const b = await validateRows(json, plain, 5);
    expect(b).toMatchObject({ total: n, valid: n, invalid: 0 });
  }, 120_000);

  it("still reports malformed lines and duplicate ids with both places", async () => {
    const p = join(dir, "bad.jsonl");
    writeFileSync(
      p,
      '\uFEFF{"id":"a","prompt":"x","ground_truth":1}\n{oops\n\n{"id":"a","prompt":"y","ground_truth":2}\n',
    );
    const r = await validateRows(p, plain, 0);
    expect(r).toMatchObject({ total: 3, valid: 1, invalid: 2 });
    expect(r.errors.map((e) => e.where)).toEqual([`${p}:2`, `${p}:4`]);
    expect(r.errors[1]!.message).toContain(`duplicate task id "a" (first at ${p}:1)`);
  });
});

describe("non-regular files", () => {
  it("refuses a FIFO with no writer at once instead of blocking on it", async () => {
    const fifo = join(dir, "pipe.jsonl");
    execFileSync("mkfifo", [fifo]);
    await expect(validateRows(fifo, plain)).rejects.toThrow(/named pipe \(FIFO\), not a regular file/);
    await expect(readRows(fifo)).rejects.toThrow(/named pipe/);
    await expect(loadTasksFromFile(fifo, plain)).rejects.toThrow(/named pipe/);
    await expect(validateRows(dir, plain)).rejects.toThrow(/a folder, not a regular file/);
  });
});
