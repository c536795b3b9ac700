import { copyFileSync, mkdtempSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolResult } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { fixturesDir } from "./dataset.js";
import { createExcelEnv } from "./index.js";
import { pythonAvailable, runPython } from "./run-python.js";
import { loadWorkbook } from "./workbook.js";

const py = pythonAvailable();
if (!py.ok) console.warn(`[env-excel] skipping run_python tests: ${py.reason}`);

function sandbox(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "py-test-"));
  const file = join(dir, "workbook.xlsx");
  copyFileSync(join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_input.xlsx"), file);
  return { dir, file };
}
const gold = join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_answer.xlsx");

describe.skipIf(!py.ok)("run_python", () => {
  it("edits the workbook with openpyxl and returns print output", async () => {
    const { dir, file } = sandbox();
    const r = await runPython(
      file,
      dir,
      "wb = openpyxl.load_workbook(workbook_path)\nws = wb['Sheet1']\nws['C1'] = 'hi'\nprint(ws['A1'].value, 1 + 1)\nwb.save(workbook_path)",
    );
    expect(r.output).toBe("Item 2\n");
    const wb = await loadWorkbook(readFileSync(file));
    expect(wb.getWorksheet("Sheet1")!.getCell("C1").value).toBe("hi");
  });

  it("an exception is a tool error with the traceback of the model's code; the workbook is unchanged", async () => {
    const { dir, file } = sandbox();
    const before = readFileSync(file);
    await expect(
      runPython(
        file,
        dir,
        "wb = openpyxl.load_workbook(workbook_path)\nwb.save(workbook_path)\nraise ValueError('boom')",
      ),
    ).rejects.toThrow(/code.py", line 3[\s\S]*ValueError: boom/);
    expect(readFileSync(file).equals(before)).toBe(true);
    await expect(runPython(file, dir, "def (")).rejects.toThrow(/SyntaxError/);
  });

  it("cannot read a gold file, list the host, or leave the jail", async () => {
    const { dir, file } = sandbox();
    await expect(runPython(file, dir, `open(${JSON.stringify(gold)}, "rb").read()`)).rejects.toThrow(
      /FileNotFoundError/,
    );
    const r = await runPython(
      file,
      dir,
      "import os\nprint(sorted(os.listdir('/')), sorted(os.listdir('/work')), sorted(os.listdir('/box')))\ntry:\n  os.chroot('/usr')\nexcept OSError as e:\n  print(type(e).__name__)",
    );
    expect(r.output).toBe(
      "['box', 'dev', 'lib', 'lib64', 'usr', 'work'] ['workbook.xlsx'] ['runner.py']\nPermissionError\n",
    );
  });

  it("has no network: a socket to a host port fails", async () => {
    const server = createServer((s) => s.end("hello"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    const port = (server.address() as { port: number }).port;
    const { dir, file } = sandbox();
    await expect(
      runPython(file, dir, `import socket\nsocket.create_connection(("127.0.0.1", ${port}), timeout=2).recv(5)`),
    ).rejects.toThrow(/Network is unreachable|Connection refused|Cannot assign requested address/);
    server.close();
  });

  it("writing 1 GB stops at the disk limit; allocating 4 GB stops at the memory limit", async () => {
    const { dir, file } = sandbox();
    await expect(
      runPython(
        file,
        dir,
        "chunk = b'0' * (16 << 20)\nwith open('big.bin', 'wb') as f:\n  for _ in range(64): f.write(chunk)",
        {
          maxDiskMb: 32,
        },
      ),
    ).rejects.toThrow(/run_python hit the disk limit \(32 MB\)[\s\S]*No space left on device/);
    expect(statSync(file).size).toBeGreaterThan(0);
    await expect(runPython(file, dir, "b = bytearray(4 << 30)", { maxMemoryMb: 512 })).rejects.toThrow(
      /run_python hit the memory limit \(512 MB\)[\s\S]*MemoryError/,
    );
  });

  it("code that never ends is killed at the time limit", async () => {
    const { dir, file } = sandbox();
    await expect(runPython(file, dir, "while True: pass", { timeoutMs: 1500 })).rejects.toThrow(
      /timed out after 1500 ms/,
    );
  });
});

describe.skipIf(!py.ok)("run_python in the env", () => {
  const env = createExcelEnv({ tools: "python" });
  afterAll(() => env.close());
  const text = (r: ToolResult) => (typeof r.content === "string" ? r.content : JSON.stringify(r.content));

  it("tools=python offers run_python (and the read tools), and the reward sees its edits on every test case", async () => {
    expect(
      env
        .listTools()
        .map((t) => t.name)
        .sort(),
    ).toEqual(["list_sheets", "read_range", "run_python"]);
    const [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
    await env.init("py1", task!);
    const r = await env.runTool("py1", {
      name: "run_python",
      arguments: {
        code: "wb = openpyxl.load_workbook(workbook_path)\nws = wb.active\nws['B8'] = '=SUM(B2:B7)'\nwb.save(workbook_path)",
      },
    });
    expect(r.isError, text(r)).toBe(false);
    expect(await env.computeReward("py1", [], task!)).toEqual({ pass: 1, soft: 1 });
    await env.release("py1");
  });
});

describe.skipIf(!py.ok)("run_python: the jail's devices", () => {
  it("/dev/null takes writes, /dev/urandom gives bytes", async () => {
    const { dir, file } = sandbox();
    const r = await runPython(
      file,
      dir,
      "import os\nopen('/dev/null', 'w').write('x')\nprint(len(open('/dev/urandom', 'rb').read(8)), len(os.urandom(4)))",
    );
    expect(r.output).toBe("8 4\n");
  });
});
