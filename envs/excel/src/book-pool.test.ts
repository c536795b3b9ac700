/**
 * The book pool from the model's side: structured calls on worker threads (the built dist/compare-worker.js, as a
 * served env runs them), a call past its limit stopping only its worker, and the rollout's file staying the truth.
 */
import { copyFileSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import type { BookJob } from "./book-host.js";
import { BookPool, builtExecArgv } from "./book-pool.js";
import { fixturesDir } from "./dataset.js";

const script = new URL("../dist/compare-worker.js", import.meta.url);
const built = existsSync(fileURLToPath(script));
if (!built) console.warn("[env-excel] book pool tests skipped: dist/compare-worker.js is not built (run npx tsup)");

const pools: BookPool[] = [];
afterAll(() => Promise.all(pools.map((p) => p.close())));
const input = join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_input.xlsx");

function rollout(): string {
  const file = join(mkdtempSync(join(tmpdir(), "book-pool-")), "workbook.xlsx");
  copyFileSync(input, file);
  return file;
}
const job = (file: string, version: number, op: BookJob["op"], args: Record<string, unknown>): BookJob => ({
  kind: "book",
  file,
  version,
  op,
  args,
  modelFile: false,
  stale: false,
  embedded: true,
});

describe.skipIf(!built)("book pool: the structured tools on worker threads", () => {
  it("writes reach the file; reads see them; a worker past its limit fails only its call", async () => {
    const pool = new BookPool(script, 2);
    pools.push(pool);
    const file = rollout();
    const w = await pool.run(job(file, 0, "write_cell", { cell: "B8", value: "=SUM(B2:B7)" }));
    expect(w).toMatchObject({ wrote: true, fresh: true });
    const r = await pool.run(job(file, 1, "read_range", { range: "B8" }));
    expect(r.text).toMatch(/1957\.08/);
    expect(pool.stats()).toMatchObject({ workers: 1, pinned: 1, queued: 0 });

    // a pool whose limit every call passes: the call is a readable tool error, the file unchanged
    const strict = new BookPool(script, 1, 1);
    pools.push(strict);
    const t = await strict.run(job(file, 1, "write_cell", { cell: "B8", value: 5 }));
    expect(t.toolError).toMatch(/ran past 1 ms and was stopped/);
    expect((await pool.run(job(file, 1, "read_range", { range: "B8" }))).text).toMatch(/SUM\(B2:B7\)/);
  }, 120_000);

  it("a non-zip file the model's code wrote is a tool error from the worker, never parsed on this thread", async () => {
    const pool = new BookPool(script, 1);
    pools.push(pool);
    const file = rollout();
    writeFileSync(file, "junk");
    const r = await pool.run({ ...job(file, 1, "read_range", { range: "A1" }), modelFile: true });
    expect(r.toolError).toMatch(/the workbook file your code wrote cannot be opened: not an xlsx file/);
  }, 60_000);
});

describe("builtExecArgv", () => {
  it("keeps loaders and conditions, drops per-process flags a worker refuses and the source condition", () => {
    expect(
      builtExecArgv([
        "--expose-gc",
        "--max-old-space-size=4096",
        "--conditions=@benchmax/source",
        "-C",
        "@benchmax/source",
        "--import",
        "tsx",
        "--conditions",
        "custom",
        "--enable-source-maps",
        "--no-warnings",
      ]),
    ).toEqual(["--import=tsx", "--conditions=custom", "--enable-source-maps", "--no-warnings"]);
  });

  it("a worker starts under a parent run with --expose-gc (the benches' flag)", async () => {
    const w = new Worker("require('node:worker_threads').parentPort.postMessage(1)", {
      eval: true,
      execArgv: builtExecArgv(["--expose-gc", "--no-warnings"]),
    });
    const got = await new Promise((res, rej) => {
      w.once("message", res);
      w.once("error", rej);
    });
    expect(got).toBe(1);
    await w.terminate();
  });
});
