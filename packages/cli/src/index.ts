import { DatasetError, InfraError, UsageError } from "@benchmax/core";
import { Command, CommanderError } from "commander";
import * as add from "./commands/add.js";
import * as audit from "./commands/audit.js";
import * as build from "./commands/build.js";
import * as compare from "./commands/compare.js";
import * as deploy from "./commands/deploy.js";
import * as evalCmd from "./commands/eval.js";
import * as exportCmd from "./commands/export.js";
import * as generate from "./commands/generate.js";
import * as info from "./commands/info.js";
import * as list from "./commands/list.js";
import * as newCmd from "./commands/new.js";
import * as play from "./commands/play.js";
import * as report from "./commands/report.js";
import * as rescore from "./commands/rescore.js";
import * as score from "./commands/score.js";
import * as search from "./commands/search.js";
import * as serve from "./commands/serve.js";
import * as validate from "./commands/validate.js";
import * as watch from "./commands/watch.js";
import { cliVersion } from "./version.js";

export { deployFiles } from "./commands/deploy.js";
export { type CompareOptions, type CompareResult, compareRuns, loadRunSummary } from "./compare-runs.js";
export { createEnv, listInstalledEnvs, loadEnvModule, parseKeyValues, resolveEnvEntry } from "./env-loader.js";
export {
  DEFAULT_BASE_IMAGE,
  envDockerfile,
  IMAGE_TARGETS,
  type ImageTarget,
  imageTags,
} from "./ship/image.js";
export { type FleetOptions, kubernetesObjects, kustomization, skypilotTask } from "./ship/manifests.js";

/** Thrown by a command to end with a given exit code after printing its own output. */
export class ExitCode extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

export function buildProgram(): Command {
  const program = new Command("benchmax")
    .description("RL environments for fine-tuning LLMs on tool use")
    .version(cliVersion(), "-v, --version")
    .showHelpAfterError("(run with --help for usage)")
    .exitOverride();
  for (const m of [
    list,
    info,
    evalCmd,
    score,
    compare,
    validate,
    serve,
    exportCmd,
    report,
    generate,
    newCmd,
    audit,
    rescore,
    watch,
    play,
    search,
    add,
    build,
    deploy,
  ]) {
    m.register(program);
  }
  for (const c of program.commands) c.exitOverride();
  return program;
}

/** Errors a user can act on print as one line, whichever copy of @benchmax/core threw them (an env outside the repo). */
const USER_ERRORS = new Set(["UsageError", "DatasetError", "InfraError", "EnvError"]);

export function errorText(e: unknown): string {
  if (!(e instanceof Error)) return String(e);
  const known =
    e instanceof UsageError || e instanceof DatasetError || e instanceof InfraError || USER_ERRORS.has(e.name);
  if (process.env.BENCHMAX_DEBUG) return e.stack ?? e.message;
  return known ? e.message : `${e.message} (set BENCHMAX_DEBUG=1 for the stack trace)`;
}

/** Run the CLI; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof ExitCode) return e.code;
    if (e instanceof CommanderError) {
      // help and version exit 0; commander already printed the message
      return e.exitCode;
    }
    console.error(`benchmax: ${errorText(e)}`);
    return 1;
  }
}
