/**
 * A large model-written workbook through LibreOffice and the compare, on the built env's workers (dist/, as a served
 * env runs them; issue 41): its external references are refused on a worker, its LibreOffice re-save is read on the
 * thread pool into shared memory (never copied on the event loop to reach the compare worker), and it is compared on
 * a worker. The event loop's delay stays under 50 ms from the model's bytes to the verdict. Slow: LibreOffice, and a
 * loaded machine's scheduling alone can delay a timer that long.
 */
import { existsSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ComparePool } from "./compare-pool.js";
import { findSoffice, type LibreOfficeRecalc } from "./libreoffice.js";
import { rawSheetXlsx } from "./raw-xlsx.js";

const dist = new URL("../dist/index.js", import.meta.url);
const script = new URL("../dist/compare-worker.js", import.meta.url);
const built = existsSync(fileURLToPath(dist)) && existsSync(fileURLToPath(script));
const soffice = findSoffice();
const why = !built ? "dist/ is not built (npx tsup)" : !soffice ? "soffice is not installed" : "";
if (why) console.warn(`[env-excel] skipping the LibreOffice event-loop test: ${why}`);

/** A model's workbook of `rows` × 4 random numbers (incompressible: megabytes after LibreOffice's re-save), F8 = 42. */
function bigOutput(rows: number): Buffer {
  const cells: string[] = [];
  for (let r = 1; r <= rows; r++)
    for (const c of "ABCD") cells.push(`<c r="${c}${r}"><v>${Math.random() * 1e6}</v></c>`);
  cells.push('<c r="F8"><f>6*7</f></c>');
  return rawSheetXlsx(cells);
}

describe.skipIf(!!why)("a large output through LibreOffice: no event-loop stall", () => {
  const pool = new ComparePool(script, 2);
  afterAll(() => pool.close());

  it("sealing, recalculating, reading back and comparing it keeps the event loop under 50 ms", async () => {
    const mod = (await import(dist.href)) as { LibreOfficeRecalc: typeof LibreOfficeRecalc };
    const lo = new mod.LibreOfficeRecalc({ soffice: soffice!, batchWindowMs: 0 });
    const gold = rawSheetXlsx(['<c r="F8"><v>42</v></c>']);
    const small = rawSheetXlsx(['<c r="F8"><f>6*7</f></c>']);
    // the profile, the seal worker and the compare workers start once per process: not part of the batch
    await pool.compare(gold, await lo.recalc(small), "F8", {});
    // the model's file as the env holds it: read from its workspace into shared memory (tools.ts workbookBytes)
    const made = bigOutput(120_000);
    const big = Buffer.from(new SharedArrayBuffer(made.length));
    made.copy(big);
    const h = monitorEventLoopDelay({ resolution: 5 });
    h.enable();
    const t0 = performance.now();
    const out = await lo.recalc(big, "output");
    const r = await pool.compare(gold, out, "F8", {});
    const ms = performance.now() - t0;
    h.disable();
    const maxMs = h.max / 1e6;
    console.info(
      `[env-excel] large output through LibreOffice: ${(big.length / 1e6).toFixed(1)} MB in, ${(out.length / 1e6).toFixed(1)} MB re-saved, ${(ms / 1000).toFixed(1)} s; event-loop delay max ${maxMs.toFixed(1)} ms`,
    );
    expect(r.pass, r.message).toBe(true);
    expect(out.length).toBeGreaterThan(4_000_000);
    // read back into shared memory: the compare worker takes it as it is, without a copy on the event loop
    expect(out.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(maxMs, `event-loop delay max ${maxMs.toFixed(1)} ms`).toBeLessThan(50);
    expect(lo.running.size).toBe(0);
  }, 300_000);
});
