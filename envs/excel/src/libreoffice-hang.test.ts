/**
 * One hanging workbook cannot hold its LibreOffice batch (issue 41, item 4), from the model's side: model-written
 * workbooks scored through `benchmax score` (recalc=libreoffice) share one batch with a workbook that makes soffice
 * spin. The hung file is cut without re-running the batch and scores 0 with a readable reason; the victims score 1
 * within twice their time alone (measured in the same run).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findSoffice, LibreOfficeRecalc } from "./libreoffice.js";
import { rawSheetXlsx } from "./raw-xlsx.js";
import { scoreOneCase } from "./reward.js";

const soffice = findSoffice();
if (!soffice) console.warn("[env-excel] skipping the LibreOffice hang tests: soffice is not installed");

const dir = mkdtempSync(join(tmpdir(), "excel-lo-hang-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A workbook LibreOffice spins on for minutes (20,000 formulas over a million rows each, none cached). */
function hangBook(): Buffer {
  const cells: string[] = [];
  for (let r = 1; r <= 20_000; r++) cells.push(`<c r="A${r}"><f>SUMPRODUCT(ROW($C$1:$C$1000000)*${r})</f></c>`);
  cells.push('<c r="B20001"><f>6*7</f></c>');
  return rawSheetXlsx(cells);
}

describe.skipIf(!soffice)("a hanging workbook in a LibreOffice batch", () => {
  it("is cut and scores 0 with a reason; the victims in its batch score 1 within 2× their time alone", async () => {
    const timeoutMs = 25_000;
    const lo = new LibreOfficeRecalc({
      soffice: soffice!,
      timeoutMs,
      stallMs: 3000,
      batchWindowMs: 1000,
      concurrency: 1,
    });
    writeFileSync(join(dir, "gold.xlsx"), rawSheetXlsx(['<c r="B8"><v>42</v></c>']));
    writeFileSync(join(dir, "hang.xlsx"), hangBook());
    const victims = [1, 2, 3].map((k) => {
      writeFileSync(join(dir, `v${k}.xlsx`), rawSheetXlsx([`<c r="A1"><v>${k}</v></c>`, '<c r="B8"><f>6*7</f></c>']));
      return `v${k}.xlsx`;
    });
    const score = async (outputFile: string) => {
      const t0 = performance.now();
      const r = await scoreOneCase(
        { id: outputFile, task: { answer_position: "B8" }, outputFile, goldFile: "gold.xlsx" },
        { baseDir: dir, options: {} },
        { mode: "libreoffice", libreoffice: () => lo },
      );
      return { r, ms: performance.now() - t0 };
    };
    await score(victims[0]!); // LibreOffice's profile is made once per process: not part of anyone's time
    const alone = await Promise.all(victims.map(score));
    for (const a of alone) expect(a.r.reward).toBe(1);
    const startBefore = lo.processes;
    // the hung file sits between victims in one batch (concurrency 1: a single batch holds all four)
    const [v1, hung, v2, v3] = await Promise.all([
      score(victims[0]!),
      score("hang.xlsx"),
      score(victims[1]!),
      score(victims[2]!),
    ]);
    const together = [v1!, v2!, v3!];
    console.info(
      `[env-excel] hung LibreOffice batch: victims ${together.map((v) => (v.ms / 1000).toFixed(1)).join("/")} s vs ${alone.map((v) => (v.ms / 1000).toFixed(1)).join("/")} s alone; hung file ${(hung!.ms / 1000).toFixed(1)} s (limit ${timeoutMs / 1000} s); ${lo.processes - startBefore} soffice processes`,
    );
    together.forEach((v, k) => {
      expect(v.r.reward).toBe(1);
      expect(v.ms).toBeLessThan(2 * alone[k]!.ms);
    });
    expect(hung!.r.reward).toBe(0);
    expect(String(hung!.r.metadata?.message)).toMatch(
      /LibreOffice could not recalculate the workbook: soffice timed out after 25000 ms on this workbook \(its workbook hung the recalculation\)/,
    );
    // cut once at its own limit, never re-run serially with its batch
    expect(hung!.ms).toBeLessThan(timeoutMs + 20_000);
    expect(lo.running.size).toBe(0);
  }, 300_000);

  it("two hung files hold neither end: the files between them go back to the queue after stallMs, not to the limit", async () => {
    const timeoutMs = 25_000;
    const stallMs = 3000;
    const lo = new LibreOfficeRecalc({ soffice: soffice!, timeoutMs, stallMs, batchWindowMs: 1000, concurrency: 1 });
    const victim = (k: number) => rawSheetXlsx([`<c r="A1"><v>${k}</v></c>`, '<c r="B8"><f>6*7</f></c>']);
    await lo.recalc(victim(0)); // the profile
    const t0 = performance.now();
    await Promise.all([1, 2].map((k) => lo.recalc(victim(k))));
    const alone = performance.now() - t0;
    const timed = (p: Promise<Buffer>) => {
      const s = performance.now();
      return p.then(
        (b) => ({ ok: true as const, b, ms: performance.now() - s }),
        (e: Error) => ({ ok: false as const, e, ms: performance.now() - s }),
      );
    };
    // [v1, hang, v2, v3, hang, v4]: each end reaches one hung file; v2 and v3 sit between them
    const runs = await Promise.all([
      timed(lo.recalc(victim(1))),
      timed(lo.recalc(hangBook())),
      timed(lo.recalc(victim(2))),
      timed(lo.recalc(victim(3))),
      timed(lo.recalc(hangBook())),
      timed(lo.recalc(victim(4))),
    ]);
    const victims = [runs[0]!, runs[2]!, runs[3]!, runs[5]!];
    console.info(
      `[env-excel] two hung files in a batch: victims ${victims.map((v) => (v.ms / 1000).toFixed(1)).join("/")} s (two alone: ${(alone / 1000).toFixed(1)} s); hung ${(runs[1]!.ms / 1000).toFixed(1)}/${(runs[4]!.ms / 1000).toFixed(1)} s`,
    );
    for (const v of victims) {
      expect(v.ok).toBe(true);
      // the outer ones within 2× alone; the middle ones wait for the two ends to stall, then for a new process: held
      // about (their time alone + stallMs + one start), never to the hung files' limit
      expect(v.ms).toBeLessThan(stallMs + 3 * alone + 3000);
      expect(v.ms).toBeLessThan(timeoutMs);
    }
    expect(victims[0]!.ms).toBeLessThan(2 * alone);
    expect(victims[3]!.ms).toBeLessThan(2 * alone);
    for (const h of [runs[1]!, runs[4]!]) {
      expect(h.ok).toBe(false);
      expect(String((h as { e: Error }).e)).toMatch(/its workbook hung the recalculation/);
      expect(h.ms).toBeLessThan(timeoutMs + 20_000);
    }
    expect(lo.running.size).toBe(0);
  }, 300_000);
});
