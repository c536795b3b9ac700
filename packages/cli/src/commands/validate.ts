import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { UsageError } from "@benchmax/core";
import type { Command } from "commander";
import { loadEnvModule, parseKeyValues } from "../env-loader.js";
import { parseIntFlag } from "../policy-options.js";
import { validateFile } from "../validate-file.js";

const collect = (v: string, prev: string[]) => [...prev, v];

export function register(program: Command): void {
  program
    .command("validate <env> <data>")
    .description("check every row of a dataset file against the env's task schema")
    .option("--max-errors <n>", "errors to list (0 = every one)", (v) => parseIntFlag(v, "--max-errors"), 0)
    .option("--env-opt <key=value>", "env option (repeatable)", collect, [])
    .option("--json", "print JSON")
    .action(async (spec: string, data: string, flags: { maxErrors: number; envOpt: string[]; json?: boolean }) => {
      const mod = await loadEnvModule(spec);
      const env = await mod.createEnv(parseKeyValues(flags.envOpt));
      try {
        const own = env.capabilities?.tasks;
        if (!own?.parseTask) throw new UsageError(`env ${env.name} has no task schema (parseTask)`);
        const parse = own.parseTask.bind(own);
        // a dataset folder (as `eval --dataset <folder>` takes) is read through its dataset.json
        const file = existsSync(data) && statSync(data).isDirectory() ? join(data, "dataset.json") : data;
        if (file !== data && !existsSync(file)) throw new UsageError(`no dataset.json in ${data}`);
        // rows that load but carry warnings (task.meta.warnings), e.g. an answer_position that always fails
        const warnings: Array<{ where: string; message: string }> = [];
        const report = await validateFile(
          file,
          (row, where) => {
            const task = parse(row, where);
            const w = (task?.meta as { warnings?: unknown } | undefined)?.warnings;
            if (Array.isArray(w)) for (const m of w) warnings.push({ where, message: String(m) });
            return task;
          },
          flags.maxErrors,
        );
        // an env may also check the dataset as a whole (crm: are its objects and Ids in the org?)
        const checkDataset = (env as { checkDataset?: (f: string) => Promise<{ lines: string[] }> }).checkDataset;
        const datasetCheck =
          checkDataset && report.invalid === 0 && report.total > 0 ? await checkDataset(file) : undefined;
        if (flags.json) process.stdout.write(`${JSON.stringify({ ...report, warnings, datasetCheck }, null, 2)}\n`);
        else {
          process.stdout.write(
            `${report.file}: ${report.total} rows, ${report.valid} valid, ${report.invalid} invalid\n`,
          );
          for (const e of report.errors)
            process.stdout.write(`  ${e.message.startsWith(e.where) ? e.message : `${e.where}: ${e.message}`}\n`);
          if (report.invalid > report.errors.length) {
            process.stdout.write(`  … and ${report.invalid - report.errors.length} more\n`);
          }
          if (warnings.length) process.stdout.write(`${warnings.length} warning(s):\n`);
          for (const w of flags.maxErrors ? warnings.slice(0, flags.maxErrors) : warnings)
            process.stdout.write(`  warning: ${w.where}: ${w.message}\n`);
          for (const line of datasetCheck?.lines ?? []) process.stdout.write(`${line}\n`);
        }
        if (report.invalid > 0 || report.total === 0) process.exitCode = 1;
      } finally {
        await env.close();
      }
    });
}
