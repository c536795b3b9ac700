import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fixturesDir } from "./dataset.js";
import { networkIsolated, runCode } from "./run-code.js";
import { loadWorkbook } from "./workbook.js";

function sandbox(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "rc-test-"));
  const file = join(dir, "workbook.xlsx");
  copyFileSync(join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_input.xlsx"), file);
  return { dir, file };
}
// the escape tests reach the child's `process` and ask it for built-in modules (process.getBuiltinModule: Node ≥ 20.16)
const hasBuiltinModule = typeof (process as { getBuiltinModule?: unknown }).getBuiltinModule === "function";
if (!hasBuiltinModule)
  console.warn("[env-excel] skipping run_code escape tests: this Node has no process.getBuiltinModule");
if (!networkIsolated())
  console.warn("[env-excel] skipping the run_code network test: unshare -rn is not available here");
const ESCAPE = 'const p = workbook.constructor.constructor("return process")();\n';

describe("run_code sandbox", () => {
  it("runs code against the workbook and saves it", async () => {
    const { dir, file } = sandbox();
    const r = await runCode(
      file,
      dir,
      "const ws = workbook.getWorksheet('Sheet1');\nws.getCell('C1').value = 'hi';\nconsole.log(ws.getCell('A1').value, 1 + 1);",
    );
    expect(r.output).toBe("Item 2\n");
    const wb = await loadWorkbook(readFileSync(file));
    expect(wb.getWorksheet("Sheet1")!.getCell("C1").value).toBe("hi");
  });

  it("a workbook past the in-place size goes out and back in whole (thread-pool file I/O, many pipe chunks)", async () => {
    const { dir, file } = sandbox();
    // distinct strings: the saved xlsx stays well past 64 KB after compression
    await runCode(
      file,
      dir,
      "const ws = workbook.addWorksheet('big');\nfor (let r = 1; r <= 6000; r++) ws.getCell(r, 1).value = 'row ' + r + ' ' + (r * 7919).toString(36) + ' ' + Math.sin(r);",
    );
    const size = readFileSync(file).length;
    expect(size).toBeGreaterThan(64 * 1024);
    // a second rollout's interpreter takes that file in through its pipe
    const other = sandbox();
    copyFileSync(file, other.file);
    const r = await runCode(
      other.file,
      other.dir,
      "const ws = workbook.getWorksheet('big');\nconsole.log(ws.rowCount, ws.getCell(5999, 1).value);",
    );
    expect(r.output).toBe(`6000 row 5999 ${(5999 * 7919).toString(36)} ${Math.sin(5999)}\n`);
  }, 120_000);

  it("errors in the code are tool errors with the message", async () => {
    const { dir, file } = sandbox();
    await expect(runCode(file, dir, "throw new Error('boom')")).rejects.toThrow(/boom/);
    await expect(runCode(file, dir, "this is not js")).rejects.toThrow(/SyntaxError/);
  });

  it.skipIf(!hasBuiltinModule)("cannot read or write files outside the workspace (Node permission model)", async () => {
    const { dir, file } = sandbox();
    const gold = join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_answer.xlsx");
    await expect(
      runCode(file, dir, `${ESCAPE}p.getBuiltinModule("fs").readFileSync(${JSON.stringify(gold)})`),
    ).rejects.toThrow(/ERR_ACCESS_DENIED|Access to this API has been restricted|ENOENT/);
    await expect(
      runCode(
        file,
        dir,
        `${ESCAPE}p.getBuiltinModule("fs").writeFileSync(${JSON.stringify(join(tmpdir(), "rc-ESCAPE.txt"))}, "x")`,
      ),
    ).rejects.toThrow(/ERR_ACCESS_DENIED|Access to this API has been restricted|ENOENT|EROFS/);
  });

  it.skipIf(!hasBuiltinModule)("cannot start subprocesses", async () => {
    const { dir, file } = sandbox();
    await expect(runCode(file, dir, `${ESCAPE}p.getBuiltinModule("child_process").execSync("id")`)).rejects.toThrow(
      /ERR_ACCESS_DENIED|Access to this API has been restricted/,
    );
  });

  it.skipIf(!networkIsolated() || !hasBuiltinModule)("has no network (empty network namespace)", async () => {
    const server = createServer((s) => s.end("hello"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    const { dir, file } = sandbox();
    const code = `${ESCAPE}const net = p.getBuiltinModule("net");\nawait new Promise((resolve, reject) => { const s = net.connect(${port}, "127.0.0.1", () => resolve()); s.on("error", reject); });\nconsole.log("connected");`;
    await expect(runCode(file, dir, code)).rejects.toThrow(/ECONNREFUSED|ENETUNREACH|EADDRNOTAVAIL/);
    server.close();
  });

  it("kills code that hangs, synchronously or asynchronously", async () => {
    const { dir, file } = sandbox();
    await expect(runCode(file, dir, "while (true) {}", { timeoutMs: 500 })).rejects.toThrow(/timed out after 500 ms/);
    await expect(runCode(file, dir, "while (true) await Promise.resolve();", { timeoutMs: 500 })).rejects.toThrow(
      /timed out/,
    );
    // a promise that never settles keeps the live process waiting: the time limit ends it
    await expect(runCode(file, dir, "await new Promise(() => {});", { timeoutMs: 500 })).rejects.toThrow(
      /timed out after 500 ms/,
    );
  });

  it("stops code that allocates without bound", async () => {
    const { dir, file } = sandbox();
    const code = "const a = []; while (true) a.push(new Array(1e6).fill(Math.random()));";
    await expect(runCode(file, dir, code, { maxOldSpaceMb: 64, timeoutMs: 20_000 })).rejects.toThrow(
      /out of memory|killed|failed/,
    );
  });

  it("truncates long output", async () => {
    const { dir, file } = sandbox();
    const r = await runCode(file, dir, "for (let i = 0; i < 10000; i++) console.log('line', i);", {
      maxOutputChars: 200,
    });
    expect(r.output.length).toBeLessThan(300);
    expect(r.output).toMatch(/output truncated at 200 characters/);
  });
});
