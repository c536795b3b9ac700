import { existsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import {
  type AuditReport,
  auditEnv,
  formatAuditReport,
  loadAuditConfig,
  TRANSPORTS,
  type Transport,
} from "@benchmax/audit";
import { type Env, type Task, UsageError } from "@benchmax/core";
import type { Command } from "commander";
import { createEnv, parseKeyValues, resolveEnvEntry } from "../env-loader.js";
import { parseIntFlag } from "../policy-options.js";

export interface AuditFlags {
  dataset?: string;
  split?: string;
  envOpt: string[];
  json?: boolean;
  transport: string;
  attack: string[];
  task: string[];
  maxTasks?: number;
  concurrency?: number;
}

const collect = (v: string, prev: string[]) => [...prev, v];

export function register(program: Command): void {
  program
    .command("audit <env>")
    .description(
      "run adversarial policies and gold-leak scans against an env, in process, over HTTP and over MCP; exits 1 on a finding",
    )
    .option("--dataset <path>", "audit these tasks (default: the env's fixtures)")
    .option("--split <name>", "dataset split where the env has several")
    .option("--env-opt <key=value>", "env option (repeatable)", collect, [])
    .option("--transport <name>", "in-process, http, mcp or all", "all")
    .option("--attack <name>", "only this attack (repeatable; see --json for the names)", collect, [])
    .option("--task <id>", "only this task (repeatable)", collect, [])
    .option("--max-tasks <n>", "tasks audited at most (default: audit.json's maxTasks, else 8)", (v) =>
      parseIntFlag(v, "--max-tasks"),
    )
    .option("--concurrency <n>", "episodes run at once (default 4)", (v) => parseIntFlag(v, "--concurrency", 1))
    .option("--json", "print the report as JSON")
    .action(async (spec: string, flags: AuditFlags) => {
      const report = await auditCommand(spec, flags);
      if (!report.ok) process.exitCode = 1;
    });
}

/** The env package folder a spec resolves to (where its audit.json lives). */
export function envPackageDir(spec: string): string | undefined {
  const abs = resolve(spec);
  if (existsSync(abs) && statSync(abs).isDirectory() && existsSync(join(abs, "package.json"))) return abs;
  let d = dirname(resolveEnvEntry(spec));
  for (;;) {
    if (existsSync(join(d, "package.json"))) return d;
    const up = dirname(d);
    if (up === d) return undefined;
    d = up;
  }
}

export async function auditCommand(spec: string, flags: AuditFlags): Promise<AuditReport> {
  const transports: Transport[] = flags.transport === "all" ? [...TRANSPORTS] : [flags.transport as Transport];
  if (!transports.every((t) => TRANSPORTS.includes(t))) {
    throw new UsageError(`--transport must be ${TRANSPORTS.join(", ")} or all, got "${flags.transport}"`);
  }
  const config = loadAuditConfig(envPackageDir(spec));
  if (flags.maxTasks !== undefined) config.maxTasks = flags.maxTasks;
  const env: Env = await createEnv(spec, parseKeyValues(flags.envOpt));
  try {
    let tasks: Task[] | undefined;
    if (flags.dataset || flags.split) {
      const own = env.capabilities?.tasks;
      if (!own?.loadTasks) throw new UsageError(`env ${env.name} has no dataset loader (--dataset)`);
      tasks = await own.loadTasks(flags.dataset, { split: flags.split });
    }
    const report = await auditEnv(env, {
      tasks,
      config,
      transports,
      attacks: flags.attack.length ? flags.attack : undefined,
      taskIds: flags.task.length ? flags.task : undefined,
      envSpec: spec,
      concurrency: flags.concurrency,
    });
    process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatAuditReport(report)}\n`);
    return report;
  } finally {
    await env.close();
  }
}
