/**
 * The hostile files of hostile-xml.test.ts on the compare workers (the built dist/compare-worker.js, as a served env
 * runs them): the event loop's delay stays under 50 ms while they are sealed and compared, and a victim's compare on
 * the same pool scores right. Slow: a loaded machine's scheduling alone can delay a timer that long.
 */
import { existsSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { ComparePool } from "./compare-pool.js";
import { gold, HOSTILE, victimOut } from "./corpus/hostile-xml.js";

const script = new URL("../dist/compare-worker.js", import.meta.url);
const built = existsSync(fileURLToPath(script));
if (!built)
  console.warn("[env-excel] hostile XML on workers skipped: dist/compare-worker.js is not built (run npx tsup)");

describe.skipIf(!built)("hostile XML on the compare workers: the event loop never stalls", () => {
  const pool = new ComparePool(script, 2);
  afterAll(() => pool.close());

  it("sealing and comparing every hostile file keeps the event loop under 50 ms while a victim scores right", async () => {
    // warm the workers (their first job loads the module)
    await Promise.all([pool.compare(gold, victimOut, "A1", { recalcOutput: true }), pool.seal(victimOut)]);
    const h = monitorEventLoopDelay({ resolution: 5 });
    h.enable();
    const victims: Array<Promise<boolean>> = [];
    const results = await Promise.all(
      HOSTILE.map(async ([what, bytes, right]) => {
        victims.push(pool.compare(gold, victimOut, "A1", { recalcOutput: true }).then((r) => r.pass));
        const sealed = await pool.seal(bytes);
        const r = await pool.compare(gold, bytes, "A1", { recalcOutput: true });
        return { what, sealed, wrong: r.pass && !r.unscorable && !right };
      }),
    );
    h.disable();
    const maxMs = h.max / 1e6;
    console.log(`[env-excel] hostile XML on workers: event-loop delay max ${maxMs.toFixed(1)} ms`);
    expect(results.filter((r) => r.wrong).map((r) => r.what)).toEqual([]);
    expect(results.every((r) => r.sealed === undefined)).toBe(true); // nothing to refuse: the same bytes go on
    expect(await Promise.all(victims)).toEqual(HOSTILE.map(() => true));
    expect(maxMs, `event-loop delay max ${maxMs.toFixed(1)} ms`).toBeLessThan(50);
  }, 120_000);
});
