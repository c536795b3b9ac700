#!/usr/bin/env node
// The one benchmark runner: `npm run bench` (after setup builds every package) runs each bench/<area>.mjs in its own
// Node process, reads the last stdout line as {"area", "figures": [...]}, and writes bench/results.json and
// bench/results.md (figures beside their goals and same-run baselines, with the machine they ran on).
// A benchmark that fails, times out or prints no valid JSON is recorded as failed with its error — never invented.
//
// Usage: node bench/run.mjs [--only area1,area2] [--timeout-s 300] [--out DIR]
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import os from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = resolve(benchDir, "..");

function parseArgs(argv) {
  const opts = { only: undefined, timeoutS: 300, out: benchDir, dir: benchDir };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      return v;
    };
    if (a === "--only") opts.only = next().split(",").filter(Boolean);
    else if (a === "--timeout-s") {
      opts.timeoutS = Number(next());
      if (!Number.isFinite(opts.timeoutS) || opts.timeoutS <= 0)
        throw new Error("--timeout-s must be a positive number");
    } else if (a === "--out") opts.out = resolve(next());
    else if (a === "--bench-dir") opts.dir = resolve(next());
    else if (a === "-h" || a === "--help") {
      console.log("usage: node bench/run.mjs [--only area1,area2] [--timeout-s 300] [--out DIR] [--bench-dir DIR]");
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  return opts;
}

/** The benchmark files: every bench/*.mjs but this runner, sorted. */
export function discover(dir = benchDir) {
  return readdirSync(dir)
    .filter((f) => f.endsWith(".mjs") && f !== "run.mjs")
    .sort();
}

/** A file may ask for a longer limit than the default with a `// bench-timeout-s: N` line in its first 2 KB. */
export function fileTimeoutS(file, fallbackS) {
  const head = readFileSync(file, "utf8").slice(0, 2048);
  const m = /bench-timeout-s:\s*(\d+)/.exec(head);
  return m ? Math.max(Number(m[1]), fallbackS) : fallbackS;
}

/** Check one figure against the contract; returns a list of problems (empty when fine). */
export function figureProblems(f, i) {
  const at = `figures[${i}]${f && typeof f.id === "string" ? ` (${f.id})` : ""}`;
  const p = [];
  if (f === null || typeof f !== "object" || Array.isArray(f)) return [`${at} is not an object`];
  if (typeof f.id !== "string" || !f.id) p.push(`${at}.id must be a non-empty string`);
  if (typeof f.label !== "string") p.push(`${at}.label must be a string`);
  if (typeof f.value !== "number" || !Number.isFinite(f.value)) p.push(`${at}.value must be a finite number`);
  if (typeof f.unit !== "string") p.push(`${at}.unit must be a string`);
  if (f.goal !== undefined && typeof f.goal !== "string") p.push(`${at}.goal must be a string`);
  if (f.pass !== undefined && typeof f.pass !== "boolean") p.push(`${at}.pass must be a boolean`);
  if (f.baseline !== undefined) {
    const b = f.baseline;
    if (b === null || typeof b !== "object" || typeof b.label !== "string" || typeof b.value !== "number") {
      p.push(`${at}.baseline must be {label: string, value: number}`);
    }
  }
  if (f.ratio !== undefined && (typeof f.ratio !== "number" || !Number.isFinite(f.ratio))) {
    p.push(`${at}.ratio must be a finite number`);
  }
  if (f.note !== undefined && typeof f.note !== "string") p.push(`${at}.note must be a string`);
  return p;
}

/** Parse a benchmark's stdout: the last non-empty line must be the result JSON. */
export function parseBenchOutput(stdout, expectedArea) {
  const lines = stdout.split("\n").filter((l) => l.trim());
  const last = lines[lines.length - 1];
  if (!last) throw new Error("printed nothing on stdout (expected one JSON line at the end)");
  let obj;
  try {
    obj = JSON.parse(last);
  } catch (e) {
    throw new Error(`last stdout line is not JSON (${e.message}): ${last.slice(0, 200)}`);
  }
  if (obj === null || typeof obj !== "object" || Array.isArray(obj)) throw new Error("result is not a JSON object");
  if (typeof obj.area !== "string" || !obj.area) throw new Error('result has no "area" string');
  if (!Array.isArray(obj.figures)) throw new Error('result has no "figures" array');
  const problems = obj.figures.flatMap((f, i) => figureProblems(f, i));
  if (problems.length) throw new Error(`bad figures: ${problems.join("; ")}`);
  const ids = new Set();
  for (const f of obj.figures) {
    if (ids.has(f.id)) throw new Error(`duplicate figure id ${f.id}`);
    ids.add(f.id);
  }
  return { area: obj.area || expectedArea, figures: obj.figures };
}

function tail(s, n = 2000) {
  return s.length > n ? `…${s.slice(-n)}` : s;
}

/** Run one bench file in a child Node process with a time limit. */
export function runBenchFile(file, { timeoutMs, cwd = root, echo = true } = {}) {
  const area = basename(file, ".mjs");
  const started = Date.now();
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, ["--expose-gc", file], {
      cwd,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, BENCHMAX_BENCH: "1" },
      detached: process.platform !== "win32",
    });
    let stdout = "";
    let stderr = "";
    let timedOut = false;
    child.stdout.on("data", (d) => {
      stdout += d;
      if (stdout.length > 20_000_000) stdout = stdout.slice(-10_000_000);
    });
    child.stderr.on("data", (d) => {
      stderr += d;
      if (echo) process.stderr.write(`  [${area}] ${d}`.replace(/\n(?=.)/g, `\n  [${area}] `));
      if (stderr.length > 2_000_000) stderr = stderr.slice(-1_000_000);
    });
    const kill = (sig) => {
      try {
        // the whole process group: a benchmark may have started servers or workers
        if (child.pid && process.platform !== "win32") process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        /* already gone */
      }
    };
    // a Ctrl-C of the runner takes the benchmark's whole process group with it
    const onSignal = (sig) => {
      kill("SIGKILL");
      process.exit(sig === "SIGINT" ? 130 : 143);
    };
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
    const timer = setTimeout(() => {
      timedOut = true;
      kill("SIGTERM");
      setTimeout(() => kill("SIGKILL"), 5000).unref();
    }, timeoutMs);
    child.on("error", (e) => {
      clearTimeout(timer);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolvePromise({
        area,
        file: basename(file),
        status: "failed",
        error: `could not start: ${e.message}`,
        durationMs: Date.now() - started,
        figures: [],
      });
    });
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      // anything the benchmark left running in its group goes too
      kill("SIGKILL");
      const durationMs = Date.now() - started;
      const base = { area, file: basename(file), durationMs };
      if (timedOut) {
        resolvePromise({
          ...base,
          status: "failed",
          error: `timed out after ${Math.round(timeoutMs / 1000)} s`,
          stderrTail: tail(stderr),
          figures: [],
        });
        return;
      }
      if (code !== 0) {
        resolvePromise({
          ...base,
          status: "failed",
          error: `exited with ${code ?? signal}`,
          stderrTail: tail(stderr),
          figures: [],
        });
        return;
      }
      try {
        const parsed = parseBenchOutput(stdout, area);
        resolvePromise({ ...base, area: parsed.area, status: "ok", figures: parsed.figures });
      } catch (e) {
        resolvePromise({ ...base, status: "failed", error: e.message, stderrTail: tail(stderr), figures: [] });
      }
    });
  });
}

/** Format a generated file the way the repo's lint wants it (best effort: skipped when biome is not installed). */
export function formatGenerated(paths) {
  const biome = join(root, "node_modules", ".bin", "biome");
  if (!existsSync(biome)) return;
  spawnSync(biome, ["format", "--write", ...paths], { cwd: root, stdio: "ignore" });
}

export function machineInfo() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus[0]?.model?.trim() ?? "unknown",
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    date: new Date().toISOString(),
  };
}

function fmtNum(v) {
  if (typeof v !== "number") return "";
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return "0";
  const a = Math.abs(v);
  if (a >= 1000) return v.toLocaleString("en-US", { maximumFractionDigits: 0 });
  if (a >= 1) return String(Math.round(v * 100) / 100);
  return String(Number(v.toPrecision(3)));
}

function cell(s) {
  return String(s ?? "")
    .replace(/\|/g, "\\|")
    .replace(/\n/g, " ");
}

/** The markdown report: one table per area, machine on top, failed benchmarks listed with their errors. */
export function renderMarkdown(results) {
  const m = results.machine;
  const out = [];
  out.push("# benchmax benchmarks", "");
  out.push(
    `Ran ${m.date} on ${m.cpuModel} (${m.cores} cores), ${m.memoryGiB} GiB memory, Node ${m.node}, ${m.os}.`,
    "Ratios are against a baseline measured in the same run.",
    "",
  );
  const s = results.summary;
  out.push(
    `${s.benchmarks} benchmark files: ${s.ok} ok, ${s.failed} failed; ${s.figures} figures, ${s.passed} meet their goal, ${s.missed} miss it.`,
    "",
  );
  for (const b of results.benchmarks) {
    out.push(`## ${b.area}${b.status === "failed" ? " — FAILED" : ""}`, "");
    out.push(`\`bench/${b.file}\`, ${fmtNum(b.durationMs / 1000)} s.`, "");
    if (b.status === "failed") {
      out.push(`Error: ${cell(b.error)}`, "");
      if (b.stderrTail) out.push("```", b.stderrTail.trim().split("\n").slice(-15).join("\n"), "```", "");
      continue;
    }
    if (b.figures.length === 0) {
      out.push("(no figures)", "");
      continue;
    }
    out.push(
      "| figure | value | unit | goal | pass | same-run baseline | ratio |",
      "|---|---:|---|---|:---:|---|---:|",
    );
    for (const f of b.figures) {
      const pass = f.pass === undefined ? "" : f.pass ? "yes" : "**no**";
      const baseline = f.baseline ? `${cell(f.baseline.label)}: ${fmtNum(f.baseline.value)}` : "";
      const label = `${cell(f.label)} (\`${f.id}\`)${f.note ? ` — ${cell(f.note)}` : ""}`;
      out.push(
        `| ${label} | ${fmtNum(f.value)} | ${cell(f.unit)} | ${cell(f.goal)} | ${pass} | ${baseline} | ${f.ratio === undefined ? "" : `${fmtNum(f.ratio)}×`} |`,
      );
    }
    out.push("");
  }
  return `${out.join("\n")}\n`;
}

export function summarize(benchmarks) {
  const figures = benchmarks.flatMap((b) => b.figures);
  return {
    benchmarks: benchmarks.length,
    ok: benchmarks.filter((b) => b.status === "ok").length,
    failed: benchmarks.filter((b) => b.status === "failed").length,
    figures: figures.length,
    passed: figures.filter((f) => f.pass === true).length,
    missed: figures.filter((f) => f.pass === false).length,
  };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let files = discover(opts.dir);
  if (opts.only) {
    const unknown = opts.only.filter((a) => !files.includes(`${a}.mjs`));
    if (unknown.length)
      throw new Error(`no benchmark ${unknown.join(", ")} (have: ${files.map((f) => basename(f, ".mjs")).join(", ")})`);
    files = files.filter((f) => opts.only.includes(basename(f, ".mjs")));
  }
  const machine = machineInfo();
  console.error(`benchmax bench: ${files.length} benchmark files, ${opts.timeoutS} s limit each`);
  const benchmarks = [];
  for (const f of files) {
    console.error(`▶ ${f}`);
    const r = await runBenchFile(join(opts.dir, f), {
      timeoutMs: fileTimeoutS(join(opts.dir, f), opts.timeoutS) * 1000,
    });
    console.error(
      r.status === "ok"
        ? `✓ ${f}: ${r.figures.length} figures in ${fmtNum(r.durationMs / 1000)} s`
        : `✗ ${f}: ${r.error}`,
    );
    benchmarks.push(r);
  }
  const results = { machine, summary: summarize(benchmarks), benchmarks };
  const md = renderMarkdown(results);
  mkdirSync(opts.out, { recursive: true });
  writeFileSync(join(opts.out, "results.json"), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(opts.out, "results.md"), md);
  formatGenerated([join(opts.out, "results.json"), join(opts.out, "results.md")]);
  process.stdout.write(md);
  console.error(`wrote ${join(opts.out, "results.json")} and results.md`);
  if (results.summary.failed > 0) process.exitCode = 1;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`benchmax bench: ${e.message}`);
    process.exit(2);
  });
}
