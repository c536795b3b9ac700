import type { EvaluatedSubject } from "@benchmax/report";
import Table from "cli-table3";
import type { Command } from "commander";
import { compareRuns, type GateSummary, loadRunSummary, type TaskChange } from "../compare-runs.js";
import { fmt } from "../format.js";
import { addGateOptions, type GateFlags, gateOptions, OVERRIDE_FLAG } from "../gate-options.js";
import { parseIntFlag } from "../policy-options.js";

type EvaluatedSubjectField = keyof EvaluatedSubject;

/** The policy and what shaped its samples, as run.json records them (model, endpoint, temperature, …). */
export function describePolicy(s: GateSummary): string {
  const c = s.run?.config ?? {};
  const parts = [s.run?.policy ?? s.policy];
  const show: Array<[string, string]> = [
    ["baseUrl", "at"],
    ["checkpoint", "checkpoint"],
    ["temperature", "temperature"],
    ["topP", "top_p"],
    ["maxTokens", "max_tokens"],
    ["seed", "seed"],
    ["toolFormat", "tool format"],
  ];
  for (const [k, label] of show) {
    const v = c[k];
    if (v !== undefined && v !== null) parts.push(`${label} ${v}`);
  }
  const extra = c.samplingArgs;
  if (extra && typeof extra === "object" && Object.keys(extra).length)
    parts.push(`sampling args ${JSON.stringify(extra)}`);
  return parts.join(", ");
}

const EVALUATED_LABEL: Record<EvaluatedSubjectField, string> = {
  policy: "policy",
  model: "model",
  baseUrl: "base URL",
  checkpoint: "checkpoint",
};

interface CompareFlags extends GateFlags {
  json?: boolean;
  tasks?: number;
}

/** What changed task by task (after a rescore: what the reward change did), biggest drop first. */
export function taskTable(tasks: TaskChange[], max: number): string {
  const t = new Table({
    head: ["task", "base mean", "cand mean", "delta", "base pass", "cand pass"],
    style: { head: [], border: [] },
  });
  for (const c of tasks.slice(0, max)) {
    t.push([
      c.task,
      fmt(c.base?.meanReward ?? null),
      fmt(c.cand?.meanReward ?? null),
      c.delta === null ? (c.base ? "only in base" : "only in cand") : (c.delta >= 0 ? "+" : "") + fmt(c.delta),
      fmt(c.base?.passRate ?? null),
      fmt(c.cand?.passRate ?? null),
    ]);
  }
  const more = tasks.length > max ? `\n… and ${tasks.length - max} more (--tasks N, or --json)` : "";
  return `${tasks.length} task(s) changed:\n${t.toString()}${more}`;
}

export function register(program: Command): void {
  const cmd = program
    .command("compare <base> <cand>")
    .description(
      "compare two run dirs; exit 1 on a regression, or when the runs are not comparable (the CI gate for benchmark regression runs). The model, endpoint and checkpoint may differ (model vs model); the env, dataset, sampling, max turns, tool format and group must match",
    );
  addGateOptions(cmd)
    .option("--json", "print JSON")
    .option("--tasks <n>", "tasks shown in the table of changed tasks", (v) => parseIntFlag(v, "--tasks", 0), 20)
    .action((baseDir: string, candDir: string, flags: CompareFlags) => {
      const base = loadRunSummary(baseDir);
      const cand = loadRunSummary(candDir);
      const res = compareRuns(base, cand, gateOptions(flags));
      const overrideFlag = OVERRIDE_FLAG;
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(res, null, 2)}\n`);
      } else {
        // why the runs can't be compared comes first: a table of REGRESSION rows above it would mislead
        for (const m of res.mismatches) {
          process.stdout.write(
            m.allowed ? `note: ${m.message} (allowed by ${overrideFlag[m.kind]})\n` : `not comparable: ${m.message}\n`,
          );
        }
        // what was evaluated may differ (baseline model against a new model); how it was evaluated may not
        const { evaluated } = res;
        if (evaluated.differs.length) {
          const what = evaluated.differs.filter((k) => k !== "policy").map((k) => EVALUATED_LABEL[k]);
          process.stdout.write(
            `model vs model: baseline ${evaluated.base.policy}, candidate ${evaluated.cand.policy}${what.length ? ` (different ${what.join(", ")})` : ""}${res.comparable ? "; same protocol" : ""}\n`,
          );
        }
        process.stdout.write(
          `baseline:  ${baseDir} (${describePolicy(base)})\ncandidate: ${candDir} (${describePolicy(cand)})\n`,
        );
        const t = new Table({
          head: ["metric", `base: ${base.policy}`, `cand: ${cand.policy}`, "delta", "status"],
          style: { head: [], border: [] },
        });
        for (const r of res.rows) {
          const status = !res.comparable ? "not compared" : r.regression ? "REGRESSION" : r.note ? r.note : "ok";
          t.push([
            r.metric,
            fmt(r.base),
            fmt(r.cand),
            r.delta === null ? "—" : (r.delta >= 0 ? "+" : "") + fmt(r.delta),
            status,
          ]);
        }
        process.stdout.write(`${t.toString()}\n`);
        if (res.tasks.length) process.stdout.write(`${taskTable(res.tasks, flags.tasks ?? 20)}\n`);
        const tol = `max drop ${res.maxDrop}, max error-rate increase ${res.maxErrorRateIncrease}`;
        if (!res.comparable) {
          const flagsNeeded = [...new Set(res.mismatches.filter((m) => !m.allowed).map((m) => overrideFlag[m.kind]))];
          process.stdout.write(
            `gate failed: baseline ${baseDir} and candidate ${candDir} are different runs; re-run the candidate like the baseline, or pass ${flagsNeeded.join(" ")} to compare them anyway\n`,
          );
        } else if (res.regression) {
          process.stdout.write(
            `regression: candidate ${candDir} (${cand.policy}) is worse than baseline ${baseDir} (${base.policy}) (${tol})\n`,
          );
        } else {
          process.stdout.write(`no regression (${tol})\n`);
        }
      }
      if (res.failed) process.exitCode = 1;
    });
}
