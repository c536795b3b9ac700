import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { GapMeter, LineSplitter, measure, parseArgs } from "../../../scripts/max-output-gap.mjs";

/** scripts/max-output-gap.mjs: CI's check that a cold `npm start` never stays silent over 10 s (issue 27). */
const script = fileURLToPath(new URL("../../../scripts/max-output-gap.mjs", import.meta.url));

/** A clock that moves `stepMs` on every reading: the gaps are fixed by the script, not by the machine's speed. */
const steppingClock = (stepMs: number) => {
  let t = 0;
  return () => {
    const now = t;
    t += stepMs;
    return now;
  };
};

const sink = () => {
  const chunks: string[] = [];
  return { chunks, write: (c: string) => chunks.push(c) };
};

describe("max-output-gap", () => {
  it("keeps the largest silence, counting the start and the exit", () => {
    const m = new GapMeter(0);
    m.line(1_000, "installing");
    m.line(3_000, "building core");
    m.line(14_000, "building cli");
    expect(m.finish(15_000)).toEqual({
      maxGapMs: 11_000,
      before: "building core",
      after: "building cli",
      totalMs: 15_000,
      lines: 3,
      over: [],
    });

    // with a limit, every gap over it is listed, longest first
    const limited = new GapMeter(0, 10_000);
    limited.line(10_500, "a");
    limited.line(11_000, "b");
    limited.line(23_000, "c");
    expect(limited.finish(23_100).over).toEqual([
      { ms: 12_000, before: "b", after: "c" },
      { ms: 10_500, before: "(start)", after: "a" },
    ]);

    const quietStart = new GapMeter(100);
    quietStart.line(12_100, "first line");
    expect(quietStart.finish(12_200)).toMatchObject({ maxGapMs: 12_000, before: "(start)", after: "first line" });

    const quietEnd = new GapMeter(0);
    quietEnd.line(1, "only line");
    expect(quietEnd.finish(20_001)).toMatchObject({ maxGapMs: 20_000, before: "only line", after: "(exit)" });
  });

  it("splits chunks into lines at \\n, \\r\\n and \\r (progress updates), keeping a last line without a newline", () => {
    const lines: string[] = [];
    const s = new LineSplitter((t) => lines.push(t));
    s.push("a");
    s.push("bc\nde");
    s.push("f\r\n10%\r20%\r");
    s.push("tail");
    expect(lines).toEqual(["abc", "def", "10%", "20%"]);
    s.end();
    expect(lines).toEqual(["abc", "def", "10%", "20%", "tail"]);
  });

  it("parses --max-s and the command after --, refusing anything else", () => {
    expect(parseArgs(["--max-s", "10", "--", "npm", "start"])).toEqual({ maxS: 10, command: ["npm", "start"] });
    expect(parseArgs(["--max-s=2.5", "--", "x", "--max-s", "1"])).toEqual({
      maxS: 2.5,
      command: ["x", "--max-s", "1"],
    });
    expect(() => parseArgs(["--", "npm", "start"])).toThrow(/--max-s/);
    expect(() => parseArgs(["--max-s", "ten", "--", "x"])).toThrow(/--max-s/);
    expect(() => parseArgs(["--max-s", "10"])).toThrow(/no command/);
    expect(() => parseArgs(["--max", "10", "--", "x"])).toThrow(/unknown option --max/);
  });

  it("passes the command's output through and measures it (a stepping clock: 4 s between readings)", async () => {
    const out = sink();
    const err = sink();
    const child = [process.execPath, "-e", "console.log('one'); console.error('two')"];
    const ok = await measure(child, { maxS: 5, now: steppingClock(4_000), out, err });
    expect(out.chunks.join("")).toBe("one\n");
    expect(err.chunks.join("")).toBe("two\n");
    expect(ok).toMatchObject({ code: 0, maxGapMs: 4_000, totalMs: 12_000, lines: 2 });
    expect(ok.report).toMatch(
      /^max-output-gap: largest gap 4\.0 s \(after .*\), total 12\.0 s, 2 lines; limit 5 s: ok$/,
    );

    const over = await measure(child, { maxS: 3, now: steppingClock(4_000), out: sink(), err: sink() });
    expect(over.code).toBe(1);
    expect(over.report).toMatch(
      /limit 3 s: over the limit\nmax-output-gap: 3 gaps over 3 s, the longest: 4\.0 s before "(one|two)"; 4\.0 s before "(one|two)"; 4\.0 s before "\(exit\)"$/,
    );
  });

  it("exits with the command's own status when it fails, and 127 when it cannot run", async () => {
    const failed = await measure([process.execPath, "-e", "console.log('x'); process.exit(3)"], {
      maxS: 100,
      now: steppingClock(1),
      out: sink(),
      err: sink(),
    });
    expect(failed.code).toBe(3);
    expect(failed.report).toMatch(/the command failed \(exit 3\)$/);
    const missing = await measure(["/nonexistent/benchmax-no-such-command"], { maxS: 100, out: sink(), err: sink() });
    expect(missing.code).toBe(127);
    expect(missing.report).toMatch(/could not run \/nonexistent\/benchmax-no-such-command/);
  });

  it("as a CLI: passes output through, prints its summary on stderr, fails over the limit, 64 on bad usage", () => {
    const run = (args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: "utf8" });
    // any real command is silent for more than 0 s between its start and its first line
    const r = run(["--max-s", "0", "--", process.execPath, "-e", "console.log('hello')"]);
    expect(r.stdout).toBe("hello\n");
    expect(r.stderr).toMatch(
      /^max-output-gap: largest gap \d+\.\d s .* 1 lines; limit 0 s: over the limit\nmax-output-gap: 2 gaps over 0 s, the longest: .*\n$/,
    );
    expect(r.status).toBe(1);
    const bad = run(["--", "true"]);
    expect(bad.status).toBe(64);
    expect(bad.stderr).toMatch(/--max-s <seconds> is required/);
  });
});
