import { writeReportFiles } from "@benchmax/report";
import type { Command } from "commander";
import { addGateOptions, type GateFlags, gateOptions } from "../gate-options.js";

interface ReportFlags extends GateFlags {
  baseline?: string;
  out?: string;
}

/**
 * `benchmax report RUN_DIR [--baseline DIR]` — a self-contained report.html in the run dir. With several run dirs
 * (`benchmax report A B C`, oldest first) the report is C's, with each metric's curve across A, B and C.
 */
export function register(program: Command): void {
  const cmd = program
    .command("report <runDirs...>")
    .description(
      "write a self-contained report.html (charts inlined, works offline) into a run dir; with several run dirs (oldest first), into the last, with curves across them all",
    )
    .option("--baseline <dir>", "a baseline run dir to compare against (flagged as `benchmax compare` would)")
    .option("--out <file>", "where to write (default: the last RUN_DIR/report.html)");
  addGateOptions(cmd).action(async (runDirs: string[], flags: ReportFlags) => {
    const runDir = runDirs[runDirs.length - 1]!;
    const written = await writeReportFiles(runDir, {
      ...(runDirs.length > 1 ? { series: runDirs.slice(0, -1) } : {}),
      baseline: flags.baseline,
      out: flags.out,
      compare: gateOptions(flags),
    });
    for (const t of written.tooLarge ?? [])
      process.stderr.write(
        `benchmax: ${t.file}:${t.line}: line of ${t.bytes.toLocaleString("en-US")} bytes, too large to read: left out of the report's rows\n`,
      );
    process.stdout.write(`wrote ${written.path}\n`);
  });
}
