/**
 * Issue 41's break 3 from the model's side, on the built env (dist/, its worker pools as `serve excel` runs them):
 * the model's code writes a 5 KB workbook whose answer cell uses CELL("filename") (the embedded engine lacks it, so
 * the scorer asks LibreOffice) and which holds an extra sheet part of 300k unclosed `<c>` tags (the external-reference
 * check before LibreOffice used to scan it in quadratic time on the event loop: a 42 s stall). Now the check runs on
 * a compare worker in linear time: from the moment the env has the model's file until its reward (and a victim
 * rollout's, run meanwhile on the same env), the event loop's delay stays under 50 ms; the attack scores 0 (never
 * env_error) and the victim 1. Slow: run_python in the jail and LibreOffice.
 */
import { existsSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { type AssistantMessage, type Env, type Policy, runRollout } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import type { ExcelTask } from "./dataset.js";
import { findSoffice } from "./libreoffice.js";
import { pythonAvailable } from "./run-python.js";

const dist = new URL("../dist/index.js", import.meta.url);
const built = existsSync(fileURLToPath(dist)) && existsSync(fileURLToPath(new URL("../dist/compare-worker.js", dist)));
const py = pythonAvailable();
const soffice = findSoffice();
const why = !built
  ? "dist/ is not built (npx tsup)"
  : !py.ok
    ? `run_python unavailable: ${py.reason}`
    : !soffice
      ? "soffice not installed"
      : "";
if (why) console.warn(`[env-excel] hostile XML rollout skipped: ${why}`);

/** Python the model sends: the rollout's workbook rewritten with the hostile parts (B8 is task 101's answer cell). */
const attack = (hostile: boolean) =>
  [
    "import openpyxl, zipfile, os",
    "wb = openpyxl.load_workbook(workbook_path); wb.active['B8'] = '=CELL(\"filename\")'; wb.save(workbook_path)",
    "src = zipfile.ZipFile(workbook_path); parts = {n: src.read(n) for n in src.namelist()}; src.close()",
    `parts['xl/worksheets/sheet9.xml'] = ('<worksheet><sheetData><row r="1">' + '<c>' * ${hostile ? 300_000 : 1}).encode()`,
    "z = zipfile.ZipFile(workbook_path, 'w', zipfile.ZIP_DEFLATED)",
    "[z.writestr(n, d) for n, d in parts.items()]; z.close()",
    "print(os.path.getsize(workbook_path))",
  ].join("\n");

const call = (name: string, args: Record<string, unknown>): AssistantMessage => ({
  role: "assistant",
  content: null,
  tool_calls: [{ id: "c0", type: "function", function: { name, arguments: JSON.stringify(args) } }],
});

describe.skipIf(!!why)("hostile XML from the model's side: no event-loop stall", () => {
  let env: Env<ExcelTask>;
  afterAll(() => env?.close());

  it("a 5 KB workbook of unclosed <c> tags on the LibreOffice path: loop delay < 50 ms, attack 0, victim 1", async () => {
    const mod = (await import(dist.href)) as { createExcelEnv(o: object): Env<ExcelTask> };
    env = mod.createExcelEnv({ tools: "all", runPythonTimeoutMs: 60_000 });
    const [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
    const victim = () => runRollout(env, task!, env.capabilities!.reference!.referencePolicy(), { maxTurns: 6 });
    let wrote = "";
    const h = monitorEventLoopDelay({ resolution: 5 });
    let victimDuringScoring: Promise<Awaited<ReturnType<typeof victim>>> | undefined;
    const attacker = (hostile: boolean): Policy => ({
      name: "hostile",
      act: async (input) => {
        const tools = input.messages.filter((m) => m.role === "tool");
        if (tools.length === 0) return { message: call("run_python", { code: attack(hostile) }) };
        wrote = String(tools[0]!.content);
        if (hostile) {
          // from here on the env reads the model's file (inspection, the compare, the external-reference check,
          // LibreOffice); a victim rollout runs on the same env meanwhile
          h.enable();
          victimDuringScoring = victim();
        }
        return { message: { role: "assistant", content: "done" } };
      },
    });
    // warm up: workers, interpreters, LibreOffice (its binary checked, its profile made) start once per process
    const [w0, w1] = await Promise.all([victim(), runRollout(env, task!, attacker(false), { maxTurns: 3 })]);
    expect(w0.rewards).toEqual({ pass: 1, soft: 1 });
    expect(w1.rewards).toEqual({ pass: 0, soft: 0 });
    const a = await runRollout(env, task!, attacker(true), { maxTurns: 3 });
    const v = await victimDuringScoring!;
    h.disable();
    const maxMs = h.max / 1e6;
    console.log(`[env-excel] hostile XML rollout: event-loop delay max ${maxMs.toFixed(1)} ms; attack wrote ${wrote}`);
    expect(wrote).not.toMatch(/^Error/);
    expect(Number(wrote.trim().split(/\s+/).pop())).toBeLessThan(64 * 1024);
    expect(a.error).toBeUndefined();
    expect(a.outcome).toBe("completed");
    expect(a.rewards).toEqual({ pass: 0, soft: 0 });
    expect(v.error).toBeUndefined();
    expect(v.rewards).toEqual({ pass: 1, soft: 1 });
    expect(maxMs, `event-loop delay max ${maxMs.toFixed(1)} ms`).toBeLessThan(50);
  }, 300_000);
});
