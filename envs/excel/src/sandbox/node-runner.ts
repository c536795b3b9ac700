/**
 * run_code's live interpreter (runs inside the jail under Node's permission model as
 * `node … /box/child.mjs /box/exceljs.cjs`): loads exceljs once, says it is ready, then runs each request's code
 * (an async function body) in one persistent `vm` context whose `workbook` global is an exceljs Workbook, so
 * globals the code assigns (`x = 1`, `globalThis.rows = …`) and the loaded workbook carry over between calls.
 *
 * Requests: `exec` (workbook bytes first when the host sends them; `save` asks for the workbook's bytes back after
 * the code, otherwise they stay in memory until a `save` request) and `save`. Between requests the host keeps the
 * process stopped (live-jail.ts): a timer loop the code leaves runs only during the rollout's later requests.
 */
export const NODE_RUNNER = String.raw`
import { createRequire } from "node:module";
import vm from "node:vm";
const [exceljsPath] = process.argv.slice(2);
const ExcelJS = createRequire(exceljsPath)(exceljsPath);
let out = "";
let limit = 8000;
const fmt = (a) => (typeof a === "string" ? a : (() => { try { return JSON.stringify(a); } catch { return String(a); } })());
const log = (...args) => { if (out.length <= limit) out += args.map(fmt).join(" ") + "\n"; };
const ctx = vm.createContext({ ExcelJS, workbook: null, console: { log, info: log, warn: log, error: log } });
// chunks are kept until a whole frame is in, then joined once (joining on every chunk copied a large workbook
// once per pipe chunk)
let parts = [];
let have = 0;
const frames = [];
let wake = null;
process.stdin.on("data", (d) => {
  parts.push(d);
  have += d.length;
  for (;;) {
    if (have < 8) break;
    if (parts[0].length < 8) parts = [Buffer.concat(parts, have)];
    const hl = parts[0].readUInt32BE(0), bl = parts[0].readUInt32BE(4);
    if (have < 8 + hl + bl) break;
    const buf = parts.length === 1 ? parts[0] : Buffer.concat(parts, have);
    frames.push({ head: JSON.parse(buf.subarray(8, 8 + hl).toString("utf8")), body: buf.subarray(8 + hl, 8 + hl + bl) });
    const rest = buf.subarray(8 + hl + bl);
    parts = rest.length ? [rest] : [];
    have = rest.length;
  }
  if (frames.length && wake) { const w = wake; wake = null; w(); }
});
process.stdin.on("end", () => process.exit(0));
const next = async () => { while (!frames.length) await new Promise((r) => { wake = r; }); return frames.shift(); };
const send = (head, body = Buffer.alloc(0)) => new Promise((r) => {
  const json = Buffer.from(JSON.stringify(head), "utf8");
  const hdr = Buffer.alloc(8);
  hdr.writeUInt32BE(json.length, 0);
  hdr.writeUInt32BE(body.length, 4);
  process.stdout.write(Buffer.concat([hdr, json, body]), r);
});
const clean = (e) => e && e.stack ? String(e.stack).split("\n").filter((l) => !l.includes("node:") && !l.includes("exceljs")).slice(0, 6).join("\n") : String(e);
const save = async () => Buffer.from(await ctx.workbook.xlsx.writeBuffer());
// warm the paths a rollout's first call takes before saying ready (V8 compiles each function on its first call and
// optimises it only after many, which made a first exceljs load several times slower than a later one): build a
// small workbook with the common parts (styles, shared strings, formulas, dates, merges, names, two sheets), save it,
// load it WARM_LOADS times (2 loads left a rollout's first load at about 3 times the CPU of a hot one; 12 bring it
// near), and run a script that reads it in the rollout's own context; the pool's jails do this at low priority
const WARM_LOADS = 12;
try {
  const w = new ExcelJS.Workbook();
  for (const name of ["warm", "two"]) {
    const s = w.addWorksheet(name);
    for (let r = 1; r <= 20; r++) {
      s.getCell(r, 1).value = r;
      s.getCell(r, 1).numFmt = "0.00";
      s.getCell(r, 2).value = "t" + (r % 5);
      s.getCell(r, 2).font = { bold: true };
      s.getCell(r, 2).fill = { type: "pattern", pattern: "solid", fgColor: { argb: "FFFF0000" } };
      s.getCell(r, 3).value = { formula: "A" + r + "*2", result: r * 2 };
      s.getCell(r, 3).border = { top: { style: "thin" } };
      s.getCell(r, 4).value = new Date(r * 1e9);
    }
    s.mergeCells("E1:F2");
    s.getCell("G1").value = { richText: [{ text: "r", font: { bold: true } }] };
    s.getCell("H1").value = { text: "l", hyperlink: "https://example.com" };
    s.getColumn(1).width = 12;
  }
  w.definedNames.add("warm!$A$1:$A$3", "nm");
  const book = Buffer.from(await w.xlsx.writeBuffer());
  for (let i = 0; i < WARM_LOADS; i++) {
    const r = new ExcelJS.Workbook();
    await r.xlsx.load(book);
    r.worksheets[0].getCell("A2").value;
    if (i < 2) await r.xlsx.writeBuffer();
    ctx.workbook = r;
  }
  // the rollout's context itself (its first script compiles there), then it is as new: no workbook, no globals added
  const before = new Set(Object.keys(ctx));
  await new vm.Script("(async () => {\nconst s = workbook.worksheets[0]; s.getCell('A2').value; s.getRow(2).values; s.eachRow(() => {});\n})()", { filename: "warm.js" }).runInContext(ctx, { timeout: 10000 });
  for (const k of Object.keys(ctx)) if (!before.has(k)) delete ctx[k];
} catch {}
ctx.workbook = null;
const tm = () => performance.now();
await send({ t: "ready" });
for (;;) {
  const { head, body } = await next();
  if (head.t === "save") {
    try { await send({ t: "saved", ok: true }, await save()); }
    catch (e) { await send({ t: "saved", ok: false, err: clean(e) }); }
    continue;
  }
  out = "";
  limit = Number(head.maxOut) || 8000;
  let ok = true, err = "", back = Buffer.alloc(0), wb = "same";
  const t0 = tm(), c0 = process.cpuUsage(), ms = { wb: 0, code: 0, save: 0, cpu: 0 };
  try {
    if (head.wb) {
      const w = new ExcelJS.Workbook();
      await w.xlsx.load(body);
      ctx.workbook = w;
    }
    const t1 = tm();
    ms.wb = t1 - t0;
    const script = new vm.Script("(async () => {\n" + head.code + "\n})()", { filename: "code.js" });
    await script.runInContext(ctx, { timeout: Number(head.timeoutMs) || 10000 });
    const t2 = tm();
    ms.code = t2 - t1;
    if (head.save) { back = await save(); wb = "changed"; } else wb = "unsaved";
    ms.save = tm() - t2;
  } catch (e) {
    ok = false;
    wb = "changed";
    err = clean(e);
  }
  const c = process.cpuUsage(c0);
  ms.cpu = (c.user + c.system) / 1000;
  await send({ t: "done", ok, out: out.slice(0, limit), trunc: out.length > limit, err, wb, ms }, back);
}
`;
