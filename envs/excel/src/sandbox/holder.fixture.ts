/**
 * Test fixture (bundled by live-interpreter.test.ts into a plain .mjs and run as a child Node process): an "env
 * process" that holds live interpreters. It reads JSON lines `{dir, file, code, lang}` on stdin, runs each in the
 * rollout's interpreter and writes `{ok, output}` lines; `{stats: true}` answers with the jails' host pids.
 */
import { createInterface } from "node:readline";
import { runCode } from "../run-code.js";
import { runPython } from "../run-python.js";
import { interpreterStats } from "./interpreters.js";

const rl = createInterface({ input: process.stdin });
rl.on("line", async (line) => {
  const req = JSON.parse(line) as { dir: string; file: string; code: string; lang?: string; stats?: boolean };
  if (req.stats) {
    process.stdout.write(`${JSON.stringify({ ok: true, stats: interpreterStats() })}\n`);
    return;
  }
  try {
    const run = req.lang === "js" ? runCode : runPython;
    const r = await run(req.file, req.dir, req.code, { timeoutMs: 20_000 });
    process.stdout.write(`${JSON.stringify({ ok: true, output: r.output })}\n`);
  } catch (e) {
    process.stdout.write(`${JSON.stringify({ ok: false, output: (e as Error).message })}\n`);
  }
});
