import { copyFileSync, existsSync, mkdtempSync, readdirSync, realpathSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { fixturesDir } from "../dataset.js";
import { runCode, runCodeIsolation } from "../run-code.js";
import { jailAvailable } from "./jail.js";

const hasBuiltinModule = typeof (process as { getBuiltinModule?: unknown }).getBuiltinModule === "function";
if (!hasBuiltinModule)
  console.warn("[env-excel] skipping the run_code grant walk: this Node has no process.getBuiltinModule");
console.info(`[env-excel] run_code isolation here: ${runCodeIsolation()}`);

function sandbox(): { dir: string; file: string } {
  const dir = mkdtempSync(join(tmpdir(), "rc-grants-"));
  const file = join(dir, "workbook.xlsx");
  copyFileSync(join(fixturesDir(), "spreadsheetbench/spreadsheet/101/1_101_input.xlsx"), file);
  return { dir, file };
}

/** Every gold/answer/solution file on the host that a sandbox must never read. */
function secrets(): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else if (/answer|golden|solution/i.test(n)) out.push(p);
    }
  };
  walk(fixturesDir());
  // the same files through the workspace symlink an installed package resolves through
  const viaNodeModules = resolve(fixturesDir(), "../../../node_modules/@benchmax/env-excel/fixtures/solutions.json");
  if (existsSync(viaNodeModules)) out.push(viaNodeModules);
  return out;
}

// Runs inside the sandbox: leaves the vm context, reads its own --allow-fs-read grants, walks each (following
// symlinks, as the permission model does) and tries to read every gold/answer/solution file it meets, then the
// known host paths.
const PROBE = (known: string[]) => `
const p = workbook.constructor.constructor("return process")();
const fs = p.getBuiltinModule("fs");
const path = p.getBuiltinModule("path");
const grants = p.execArgv.filter((a) => a.startsWith("--allow-fs-read=")).map((a) => a.slice("--allow-fs-read=".length));
const found = [];
const readable = [];
let files = 0;
const walk = (f, depth) => {
  if (depth > 12) return;
  let st;
  try { st = fs.statSync(f); } catch { return; }
  if (st.isDirectory()) {
    let names = [];
    try { names = fs.readdirSync(f); } catch { return; }
    for (const n of names) walk(path.join(f, n), depth + 1);
    return;
  }
  files++;
  if (/answer|golden|solution/i.test(f)) {
    found.push(f);
    try { fs.readFileSync(f); readable.push(f); } catch {}
  }
};
for (const g of grants) walk(g, 0);
for (const k of ${JSON.stringify(known)}) {
  try { fs.readFileSync(k); readable.push(k); } catch {}
  try { fs.readFileSync(path.join("/work/../../..", k)); readable.push("../" + k); } catch {}
}
console.log(JSON.stringify({ grants, files, found, readable }));
`;

describe.each([
  ["the jail", true],
  ["the permission model alone (no namespaces)", false],
] as const)("run_code in %s: what the sandbox can read", (_name, jail) => {
  it.skipIf(!hasBuiltinModule || (jail && !jailAvailable().ok))(
    "grants name single files and the workspace only; no gold, answer or solution file is readable",
    async () => {
      const known = secrets();
      expect(known.length).toBeGreaterThan(20);
      const { dir, file } = sandbox();
      const r = await runCode(file, dir, PROBE(known), { timeoutMs: 20_000, jail });
      const seen = JSON.parse(r.output) as { grants: string[]; files: number; found: string[]; readable: string[] };
      expect(seen.readable).toEqual([]);
      expect(seen.grants.length).toBeGreaterThanOrEqual(3);
      expect(seen.files).toBeGreaterThanOrEqual(2); // the walk did reach the granted files
      for (const g of seen.grants) expect(g).not.toMatch(/node_modules/);
      if (jail) {
        // the live process gets its code over a pipe, and the workbook in memory
        expect(seen.grants.sort()).toEqual(["/box/child.mjs", "/box/exceljs.cjs", "/work"]);
      } else {
        // host paths: the workspace folder, and files only (never a package folder)
        const ws = realpathSync(dir);
        for (const g of seen.grants) if (g !== ws) expect(statSync(g).isFile(), g).toBe(true);
        expect(seen.grants).toContain(ws);
      }
    },
    30_000,
  );
});

describe.each([
  ["the jail", true],
  ["prlimit alone (no namespaces)", false],
] as const)("run_code in %s: limits outside the V8 heap", (_name, jail) => {
  it.skipIf(!hasBuiltinModule)(
    "writing 1 GB stops at the disk limit with a clear message; the workbook is untouched",
    async () => {
      const { dir, file } = sandbox();
      const before = statSync(file).size;
      const code = `const p = workbook.constructor.constructor("return process")();
const fs = p.getBuiltinModule("fs");
const B = workbook.constructor.constructor("return Buffer")();
const chunk = B.alloc(16 << 20, 1);
const fd = fs.openSync(p.execArgv.includes("--allow-fs-write=/work") ? "/work/big.bin" : p.argv[2] + ".big", "w");
for (let i = 0; i < 64; i++) fs.writeSync(fd, chunk);`;
      await expect(runCode(file, dir, code, { maxDiskMb: 32, timeoutMs: 20_000, jail })).rejects.toThrow(
        /disk limit \(32 MB/,
      );
      expect(statSync(file).size).toBe(before);
    },
    30_000,
  );

  it.skipIf(!hasBuiltinModule)(
    "allocating 4 GB of Buffers stops at the memory limit",
    async () => {
      const { dir, file } = sandbox();
      const code =
        'const B = workbook.constructor.constructor("return Buffer")();\nconst a = []; for (let i = 0; i < 64; i++) a.push(B.alloc(64 << 20, 1));';
      // filling 768 MB takes a while on a loaded machine: the time limit is not what this test is about
      await expect(runCode(file, dir, code, { maxMemoryMb: 768, timeoutMs: 60_000, jail })).rejects.toThrow(
        /memory limit \(768 MB|ran out of memory/,
      );
    },
    90_000,
  );
});
