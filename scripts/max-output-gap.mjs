#!/usr/bin/env node
// Runs a command, passes its output through, and measures the longest silence: the largest gap between the start,
// each line it prints (stdout or stderr; a `\r` progress update counts as a line) and its exit. Fails when that gap
// is over the limit, so CI can hold `npm start` from a fresh clone to "progress at least every 10 s" (issue 27).
//   node scripts/max-output-gap.mjs --max-s 10 -- npm start
// Exit status: the command's own when it failed, 1 when the gap was over the limit, else 0. The summary goes to
// stderr as one line starting "max-output-gap:".
import { spawn } from "node:child_process";
import { constants } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

/** Keeps the largest gap between output lines; times are milliseconds from any one clock. */
export class GapMeter {
  /** `limitMs`: gaps longer than this are also listed (`over`), longest first. */
  constructor(start, limitMs = Number.POSITIVE_INFINITY) {
    this.limitMs = limitMs;
    this.overList = [];
    this.start = start;
    this.last = start;
    this.lastLine = "(start)";
    this.lines = 0;
    this.max = { ms: 0, before: "(start)", after: "(start)", at: start };
  }

  /** One complete line (its text, for the report) printed at `now`. */
  line(now, text) {
    this.#gap(now, text);
    this.lines++;
    this.lastLine = text;
  }

  /** The command exited at `now`: the silence before the exit counts too. */
  finish(now) {
    this.#gap(now, "(exit)");
    return {
      maxGapMs: this.max.ms,
      before: this.max.before,
      after: this.max.after,
      totalMs: now - this.start,
      lines: this.lines,
      over: [...this.overList].sort((x, y) => y.ms - x.ms),
    };
  }

  #gap(now, text) {
    const ms = now - this.last;
    if (ms > this.max.ms) this.max = { ms, before: this.lastLine, after: text, at: now };
    if (ms > this.limitMs) this.overList.push({ ms, before: this.lastLine, after: text });
    this.last = now;
  }
}

/** Splits a stream's chunks into lines at `\n` or `\r`, calling `onLine(text)` for each complete one. */
export class LineSplitter {
  constructor(onLine) {
    this.onLine = onLine;
    this.rest = "";
  }

  push(chunk) {
    const parts = (this.rest + chunk).split(/\r\n|\r|\n/);
    this.rest = parts.pop() ?? "";
    for (const p of parts) this.onLine(p);
  }

  /** A last line without a newline still counts, at the time the stream ends. */
  end() {
    if (this.rest !== "") this.onLine(this.rest);
    this.rest = "";
  }
}

export function parseArgs(argv) {
  const sep = argv.indexOf("--");
  const own = sep === -1 ? argv : argv.slice(0, sep);
  const command = sep === -1 ? [] : argv.slice(sep + 1);
  let maxS;
  for (let i = 0; i < own.length; i++) {
    if (own[i] === "--max-s") maxS = Number(own[++i]);
    else if (own[i]?.startsWith("--max-s=")) maxS = Number(own[i].slice("--max-s=".length));
    else throw new Error(`unknown option ${own[i]}`);
  }
  if (maxS === undefined || !Number.isFinite(maxS) || maxS < 0) throw new Error("--max-s <seconds> is required (>= 0)");
  if (command.length === 0) throw new Error("no command: max-output-gap --max-s <seconds> -- <command> [args…]");
  return { maxS, command };
}

const seconds = (ms) => (ms / 1000).toFixed(1);
const clip = (s) => JSON.stringify(s.length > 80 ? `${s.slice(0, 77)}...` : s);

/** Run `command`, pass its output through, resolve to {code, report}. `now` is the clock (ms). */
export function measure(
  command,
  { maxS, now = () => performance.now(), out = process.stdout, err = process.stderr } = {},
) {
  return new Promise((resolve) => {
    const meter = new GapMeter(now(), maxS === undefined ? undefined : maxS * 1000);
    const child = spawn(command[0], command.slice(1), { stdio: ["inherit", "pipe", "pipe"] });
    const splitters = [];
    for (const [stream, sink] of [
      [child.stdout, out],
      [child.stderr, err],
    ]) {
      const split = new LineSplitter((text) => meter.line(now(), text));
      splitters.push(split);
      stream.setEncoding("utf8");
      stream.on("data", (chunk) => {
        sink.write(chunk);
        split.push(chunk);
      });
    }
    const forward = (signal) => () => child.kill(signal);
    const onInt = forward("SIGINT");
    const onTerm = forward("SIGTERM");
    process.on("SIGINT", onInt);
    process.on("SIGTERM", onTerm);
    let finished = false;
    const done = (code, failure) => {
      if (finished) return;
      finished = true;
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
      for (const s of splitters) s.end();
      const r = meter.finish(now());
      const over = maxS !== undefined && r.maxGapMs > maxS * 1000;
      const verdict = failure ?? (code !== 0 ? `the command failed (exit ${code})` : over ? "over the limit" : "ok");
      const report =
        `max-output-gap: largest gap ${seconds(r.maxGapMs)} s (after ${clip(r.before)}, before ${clip(r.after)}), ` +
        `total ${seconds(r.totalMs)} s, ${r.lines} lines; limit ${maxS} s: ${verdict}` +
        (r.over.length > 1
          ? `\nmax-output-gap: ${r.over.length} gaps over ${maxS} s, the longest: ${r.over
              .slice(0, 5)
              .map((g) => `${seconds(g.ms)} s before ${clip(g.after)}`)
              .join("; ")}`
          : "");
      resolve({ code: code !== 0 ? code : over ? 1 : 0, report, ...r });
    };
    child.on("error", (e) => done(127, `could not run ${command[0]}: ${e.message}`));
    child.on("close", (code, signal) => done(code ?? 128 + (constants.signals[signal] ?? 0)));
  });
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`max-output-gap: ${e.message}\n`);
    process.exit(64);
  }
  const { code, report } = await measure(args.command, { maxS: args.maxS });
  process.stderr.write(`${report}\n`);
  process.exit(code);
}
