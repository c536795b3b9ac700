import Table from "cli-table3";
import type { Command } from "commander";
import { compareRuns, loadRunSummary } from "../compare-runs.js";
import { fmt } from "../format.js";
import { addGateOptions, type GateFlags, gateOptions, OVERRIDE_FLAG } from "../gate-options.js";

interface CompareFlags extends GateFlags {
  json?: boolean;
}

export function register(program: Command): void {
  const cmd = program
    .command("compare <base> <cand>")
    .description(
      "compare two run dirs; exit 1 on a regression, or when the runs are not comparable (the CI gate for benchmark regression runs)",
    );
  addGateOptions(cmd)
    .option("--json", "print JSON")
    .action((baseDir: string, candDir: string, flags: CompareFlags) => {
      const base = loadRunSummary(baseDir);
      const cand = loadRunSummary(candDir);
      const res = compareRuns(base, cand, gateOptions(flags));
      const overrideFlag = OVERRIDE_FLAG;
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(res, null, 2)}\n`);
      } else {
        const t = new Table({ head: ["metric", "base", "cand", "delta", "status"], style: { head: [], border: [] } });
        for (const r of res.rows) {
          const status = r.regression ? "REGRESSION" : r.note ? r.note : "ok";
          t.push([
            r.metric,
            fmt(r.base),
            fmt(r.cand),
            r.delta === null ? "—" : (r.delta >= 0 ? "+" : "") + fmt(r.delta),
            status,
          ]);
        }
        process.stdout.write(`${t.toString()}\n`);
        for (const m of res.mismatches) {
          process.stdout.write(
            m.allowed ? `note: ${m.message} (allowed by ${overrideFlag[m.kind]})\n` : `not comparable: ${m.message}\n`,
          );
        }
        const tol = `max drop ${res.maxDrop}, max error-rate increase ${res.maxErrorRateIncrease}`;
        if (!res.comparable) {
          const flagsNeeded = [...new Set(res.mismatches.filter((m) => !m.allowed).map((m) => overrideFlag[m.kind]))];
          process.stdout.write(
            `gate failed: ${candDir} and ${baseDir} are different runs; re-run the candidate like the baseline, or pass ${flagsNeeded.join(" ")} to compare them anyway\n`,
          );
        } else if (res.regression) {
          process.stdout.write(`regression: candidate ${candDir} is worse than ${baseDir} (${tol})\n`);
        } else {
          process.stdout.write(`no regression (${tol})\n`);
        }
      }
      if (res.failed) process.exitCode = 1;
    });
}
