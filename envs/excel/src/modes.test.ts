import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runRollout } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { createExcelEnv } from "./index.js";
import { findSoffice } from "./libreoffice.js";
import { rawXlsx } from "./raw-xlsx.js";

const soffice = findSoffice();
if (!soffice) console.warn("[env-excel] skipping LibreOffice recalculation tests: soffice is not installed");

describe("recalc modes", () => {
  const none = createExcelEnv({ recalc: "none" });
  afterAll(() => none.close());

  it("recalc=none: formulas written by the model have no cached value, so formula tasks fail (official compare alone)", async () => {
    const [task] = (await none.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
    const r = await runRollout(none, task!, none.capabilities!.reference!.referencePolicy(), { maxTurns: 4 });
    expect(r.rewards).toEqual({ pass: 0, soft: 0 });
    const cases = r.metadata?.cases as Array<{ message: string }>;
    expect(cases[0]!.message).toMatch(/output has None/);
  });

  it.skipIf(!soffice)(
    "recalc=libreoffice scores the reference solutions 1.0",
    async () => {
      const lo = createExcelEnv({ recalc: "libreoffice" });
      const [task] = (await lo.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
      const r = await runRollout(lo, task!, lo.capabilities!.reference!.referencePolicy(), { maxTurns: 4 });
      expect(r.rewards).toEqual({ pass: 1, soft: 1 });
      await lo.close();
    },
    120_000,
  );

  it("recalc=libreoffice without soffice is a clear usage error", () => {
    if (soffice) return;
    expect(() => createExcelEnv({ recalc: "libreoffice" })).toThrow(/needs LibreOffice/);
  });
});

describe("replay on the other test cases", () => {
  it("a recorded call that fails on another case fails that case only", async () => {
    const dir = mkdtempSync(join(tmpdir(), "excel-replay-"));
    const sheet = (name: string, v: number) => ({ name, rows: `<row r="1"><c r="A1"><v>${v}</v></c></row>` });
    writeFileSync(join(dir, "in1.xlsx"), rawXlsx({ sheets: [sheet("Data", 1)] }));
    writeFileSync(join(dir, "in2.xlsx"), rawXlsx({ sheets: [sheet("Other", 1)] }));
    writeFileSync(join(dir, "in3.xlsx"), rawXlsx({ sheets: [sheet("Data", 5)] }));
    const gold = (v: number) =>
      rawXlsx({
        sheets: [{ name: "Data", rows: `<row r="1"><c r="A1"><v>${v}</v></c><c r="B1"><v>${v * 2}</v></c></row>` }],
      });
    writeFileSync(join(dir, "g1.xlsx"), gold(1));
    writeFileSync(join(dir, "g2.xlsx"), gold(1));
    writeFileSync(join(dir, "g3.xlsx"), gold(5));
    const env = createExcelEnv();
    const task = env.capabilities!.tasks!.parseTask!(
      {
        id: "r1",
        prompt: "double A1 into B1",
        ground_truth: {
          answer_position: "Data!A1:B1",
          cases: [1, 2, 3].map((n) => ({ input: join(dir, `in${n}.xlsx`), answer: join(dir, `g${n}.xlsx`) })),
        },
      },
      join(dir, "rows.jsonl:1"),
    );
    await env.init("r", task);
    const w = await env.runTool("r", { name: "write_cell", arguments: { sheet: "Data", cell: "B1", value: "=A1*2" } });
    expect(w.isError).toBe(false);
    const bad = await env.runTool("r", { name: "write_cell", arguments: { sheet: "Nope", cell: "B1", value: 1 } });
    expect(bad.isError).toBe(true); // failed calls are not recorded
    const rewards = await env.computeReward("r", [], task);
    expect(rewards.pass).toBe(0);
    expect(rewards.soft).toBeCloseTo(2 / 3);
    const meta = env.capabilities!.metadata!.rolloutMetadata!("r") as {
      cases: Array<{ pass: boolean; message: string }>;
      replayed_calls: number;
    };
    expect(meta.replayed_calls).toBe(1);
    expect(meta.cases.map((c) => c.pass)).toEqual([true, false, true]);
    expect(meta.cases[1]!.message).toMatch(/replaying call #1 \(write_cell\) failed: no sheet named "Data"/);
    await env.close();
  });
});
