import { writeReportFiles } from "@benchmax/report";
import type { Command } from "commander";
import { addGateOptions, type GateFlags, gateOptions } from "../gate-options.js";

interface ReportFlags extends GateFlags {
  baseline?: string;
  out?: string;
}

/** `benchmax report RUN_DIR [--baseline DIR]` — a self-contained report.html in the run dir. */
export function register(program: Command): void {
  const cmd = program
    .command("report <runDir>")
    .description("write a self-contained report.html (charts inlined, works offline) into a run dir")
    .option("--baseline <dir>", "a baseline run dir to compare against (flagged as `benchmax compare` would)")
    .option("--out <file>", "where to write (default RUN_DIR/report.html)");
  addGateOptions(cmd).action(async (runDir: string, flags: ReportFlags) => {
    const written = await writeReportFiles(runDir, {
      baseline: flags.baseline,
      out: flags.out,
      compare: gateOptions(flags),
    });
    process.stdout.write(`wrote ${written.path}\n`);
  });
}
