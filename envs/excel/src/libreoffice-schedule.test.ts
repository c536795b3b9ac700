/**
 * How a LibreOffice batch is shared among its processes (`LibreOfficeRecalc.runBatch`), with a scripted soffice in
 * LibreOffice's place: it takes the same command line, starts in a set time, then "converts" its files one after the
 * other, each in a set time, or sleeps for ever on a file marked hung. Each file's part is read from a marker in the
 * workbook itself (the file names are random), so the schedule's choices are checked without LibreOffice's own
 * timing: which process keeps a file two reach, and when the helper process starts.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { LibreOfficeRecalc, OutputRecalcError } from "./libreoffice.js";
import { rawSheetXlsx } from "./raw-xlsx.js";

const dir = mkdtempSync(join(tmpdir(), "excel-lo-schedule-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/**
 * A soffice stand-in: starts in `startMs` (`slowStartMs` when its first file is marked `start-slow`), then copies
 * each file to `--outdir` after `fileMs`, or sleeps for ever on a file marked `hang`.
 */
function scriptedSoffice(startMs: number, fileMs: number, slowStartMs = startMs): string {
  const path = join(dir, `soffice-${startMs}-${fileMs}-${slowStartMs}`);
  writeFileSync(
    path,
    `#!${process.execPath}
const { readFileSync, writeFileSync, renameSync } = require("node:fs");
const { inflateRawSync } = require("node:zlib");
const { basename, join } = require("node:path");
const args = process.argv.slice(2);
if (args.includes("--terminate_after_init")) process.exit(0);
const at = args.indexOf("--outdir");
const out = args[at + 1];
const files = args.slice(at + 2);
// the marker in the workbook's XML (every entry of the zip, inflated)
function part(file) {
  const b = readFileSync(file);
  let text = "";
  for (let o = 0; o + 30 <= b.length && b.readUInt32LE(o) === 0x04034b50; ) {
    const size = b.readUInt32LE(o + 18);
    const start = o + 30 + b.readUInt16LE(o + 26) + b.readUInt16LE(o + 28);
    text += inflateRawSync(b.subarray(start, start + size)).toString();
    o = start + size;
  }
  return /fake-lo:([a-z-]+)/.exec(text)?.[1] ?? "";
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  await sleep(part(files[0]) === "start-slow" ? ${slowStartMs} : ${startMs});
  for (const f of files) {
    if (part(f) === "hang") await new Promise(() => setInterval(() => {}, 60_000));
    await sleep(${fileMs});
    const name = basename(f);
    writeFileSync(join(out, "." + name), readFileSync(f));
    renameSync(join(out, "." + name), join(out, name));
  }
})();
`,
  );
  chmodSync(path, 0o755);
  return path;
}

/** A model-written workbook with its part for the scripted soffice ("" for a plain file). */
function book(k: number, part = ""): Buffer {
  return rawSheetXlsx([
    `<c r="A1"><v>${k}</v></c>`,
    ...(part ? [`<c r="B1" t="inlineStr"><is><t>fake-lo:${part}</t></is></c>`] : []),
  ]);
}

const timed = (p: Promise<Buffer>) => {
  const s = performance.now();
  return p.then(
    () => ({ ok: true as const, ms: performance.now() - s }),
    (e: Error) => ({ ok: false as const, e, ms: performance.now() - s }),
  );
};

describe("a LibreOffice batch's schedule (scripted soffice)", () => {
  it("of two processes on one file, the one that has converted keeps it over one still starting", async () => {
    // six files: forward 0 1 2 …, reverse 5 4 3 …, middle 3 2 4 …; the middle process takes 3 s to start. Reverse
    // reaches file 3 after two files while the middle one still starts on it: reverse keeps it and the middle one
    // stops, so the batch is done after three files, not after the slow start
    const lo = new LibreOfficeRecalc({
      soffice: scriptedSoffice(300, 100, 3000),
      jail: "off",
      // the scripted soffice converts only what its command line names: no standby
      standby: false,
      batchWindowMs: 1000,
      concurrency: 1,
      stallMs: 20_000,
    });
    const runs = await Promise.all(
      [0, 1, 2, 3, 4, 5].map((k) => timed(lo.recalc(book(k, k === 3 ? "start-slow" : "")))),
    );
    for (const r of runs) expect(r.ok).toBe(true);
    // the window (1 s) and three files after a 0.3 s start: about 1.7 s; the slow start alone ends at 4 s
    expect(Math.max(...runs.map((r) => r.ms)), runs.map((r) => r.ms.toFixed(0)).join("/")).toBeLessThan(3000);
    expect(lo.helpers).toBe(0);
    // the processes left are stopped once every file is out
    await expect.poll(() => lo.running.size, { timeout: 10_000 }).toBe(0);
  }, 30_000);

  it("a process lost on a file another is on is replaced by the helper at once, not after the suspicion time", async () => {
    // [v1, H, v2, v3, v4, H, v5, v6], 0.25 s a file: forward holds at the first hung file after v1; reverse and middle
    // take two files each and reach the second hung file together, and one of them stops. v2, which only a helper
    // can reach, goes to it then: done one start and one file after (about v1 + 0.85 s). Waiting until every process
    // is suspected (4× the 0.25 s a file takes, on the second hung file) would start the helper 1 s later
    const lo = new LibreOfficeRecalc({
      soffice: scriptedSoffice(300, 250),
      jail: "off",
      // the scripted soffice converts only what its command line names: no standby
      standby: false,
      batchWindowMs: 1000,
      concurrency: 1,
      stallMs: 20_000,
      timeoutMs: 5000,
    });
    const layout = [false, true, false, false, false, true, false, false];
    const runs = await Promise.all(layout.map((hung, k) => timed(lo.recalc(book(k, hung ? "hang" : "")))));
    const victims = runs.filter((_, k) => !layout[k]);
    console.info(
      `[env-excel] scripted batch with two hung files: victims ${victims.map((v) => (v.ms / 1000).toFixed(2)).join("/")} s`,
    );
    for (const v of victims) expect(v.ok).toBe(true);
    for (const [k, h] of runs.entries())
      if (layout[k]) {
        expect(h.ok).toBe(false);
        expect(h.ok ? undefined : h.e).toBeInstanceOf(OutputRecalcError);
      }
    expect(lo.helpers).toBe(1);
    const [v1, v2] = [victims[0]!.ms, victims[1]!.ms];
    expect(v2 - v1, "v2 after v1 (ms)").toBeLessThan(1450);
    expect(lo.running.size).toBe(0);
  }, 60_000);
});
