import { setMaxListeners } from "node:events";
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import {
  datasetHash,
  type Env,
  loadTasksFromFile,
  normalizeTaskIds,
  parsePlainRow,
  RunDir,
  type RunIdentity,
  rewardWeightsOf,
  runMany,
  type Task,
  type ToolFormat,
  UsageError,
} from "@benchmax/core";
import type { GateSummary } from "@benchmax/report";
import type { Command } from "commander";
import { listInstalledEnvs, loadEnvModule, parseKeyValues, resolveEnvEntry } from "../env-loader.js";
import { configRunName, configRunsName, type EvalConfigRun, loadEvalConfig } from "../eval-config.js";
import { summaryTable, terminalWidth } from "../format.js";
import {
  addPolicyOptions,
  checkReachable,
  makePolicy,
  type PolicyFlags,
  parseIntFlag,
  parseSamplingArgs,
  samplingIdentity,
} from "../policy-options.js";
import { progressReporter } from "../progress.js";
import { runVersions } from "../versions.js";

export interface EvalFlags extends PolicyFlags {
  all?: boolean;
  limit?: number;
  group: number;
  concurrency: number;
  maxTurns: number;
  out?: string;
  resume?: boolean;
  force?: boolean;
  json?: boolean;
  dataset?: string;
  split?: string;
  envOpt: string[];
  /** Unset: `defaultToolFormat`. */
  toolFormat?: ToolFormat;
  retries: number;
  endpoint?: string;
  token?: string;
  quiet?: boolean;
  allowOracle?: boolean;
  /** An eval config file (TOML or JSON): several envs, models and endpoints in one go. */
  config?: string;
  /** The checkpoint evaluated (a label recorded in run.json; `compare` names it). */
  checkpoint?: string;
  /** Env options as values (from a config file's env_args); else parsed from --env-opt. */
  envOptions?: Record<string, unknown>;
}

const envOptionsOf = (flags: EvalFlags): Record<string, unknown> => flags.envOptions ?? parseKeyValues(flags.envOpt);

const collect = (v: string, prev: string[]) => [...prev, v];

export function register(program: Command): void {
  const cmd = program
    .command("eval [env]")
    .description(
      "evaluate a policy on an env (its embedded fixtures by default) and write a run dir; with --config, every env × model of an eval config file",
    )
    .option("--all", "every installed env")
    .option(
      "--config <file>",
      "an eval config file (TOML or JSON: [endpoints.NAME] aliases and [[eval]] tables): one run dir per env × endpoint under --out, then one table; the file's keys override these flags",
    )
    .option("--checkpoint <label>", "the checkpoint evaluated, recorded in run.json (compare names it)")
    .option("--limit <n>", "only the first N tasks (N >= 1)", (v) => parseIntFlag(v, "--limit", 1))
    .option("--group <g>", "rollouts per task (GRPO group size)", (v) => parseIntFlag(v, "--group", 1), 1)
    .option("--concurrency <c>", "rollouts in flight", (v) => parseIntFlag(v, "--concurrency", 1), 16)
    .option("--max-turns <n>", "assistant turns per rollout", (v) => parseIntFlag(v, "--max-turns", 1), 10)
    .option("--out <dir>", "run dir (default runs/<env>-<time>; with --all, one subdir per env)")
    .option("--resume", "continue the run in --out, skipping finished rollouts")
    .option("--force", "overwrite an existing run in --out")
    .option("--json", "print the summary as JSON instead of a table")
    .option("--dataset <path>", "a dataset file or folder instead of the fixtures")
    .option("--split <name>", "dataset split where the env has several")
    .option("--env-opt <key=value>", "env option (repeatable)", collect, [])
    .option(
      "--tool-format <format>",
      "hermes (tool calls as <tool_call> text) | openai (native tool_calls); default: openai for --policy openai without --base-url (the OpenAI API), else hermes",
    )
    .option("--retries <n>", "re-runs of an infra_error rollout", (v) => parseIntFlag(v, "--retries"), 2)
    .option("--endpoint <urls>", "run against env server(s): URL[,URL…]")
    .option("--token <token>", "bearer token for --endpoint")
    .option(
      "--allow-oracle",
      "run a policy that reads the gold answer (an oracle) on a dataset other than the fixtures",
    )
    .option("--quiet", "no progress output");
  addPolicyOptions(cmd).action(async (envSpec: string | undefined, flags: EvalFlags) => {
    const code = await evalCommand(envSpec, flags);
    if (code) process.exitCode = code;
  });
}

async function openEnv(spec: string, flags: EvalFlags): Promise<{ env: Env; local?: Env; entry?: string }> {
  const options = envOptionsOf(flags);
  if (flags.endpoint) {
    const endpoints = flags.endpoint
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    const server = (await import("@benchmax/server" as string).catch(() => {
      throw new UsageError("--endpoint needs @benchmax/server installed");
    })) as { connectRemoteEnv(e: string[], o?: { token?: string }): Promise<Env> };
    const remote = await server.connectRemoteEnv(endpoints, { token: flags.token });
    // tasks come from the local env package when installed
    let local: Env | undefined;
    try {
      local = await (await loadEnvModule(spec)).createEnv(options);
    } catch {
      local = undefined;
    }
    return { env: remote, local };
  }
  const entry = resolveEnvEntry(spec);
  const mod = await loadEnvModule(spec);
  return { env: await mod.createEnv(options), entry };
}

/** The env's tasks: its own loader, else `--dataset` read with its row parser (plain rows without one). */
async function loadTasks(env: Env, flags: EvalFlags): Promise<Task[]> {
  const own = env.capabilities?.tasks;
  if (own?.loadTasks) return own.loadTasks(flags.dataset, { limit: flags.limit, split: flags.split });
  if (!flags.dataset) {
    throw new UsageError(`env ${env.name} has no embedded tasks: pass --dataset <file.jsonl>`);
  }
  const parse = own?.parseTask ? own.parseTask.bind(own) : (row: unknown, where: string) => parsePlainRow(row, where);
  return loadTasksFromFile(flags.dataset, parse, { limit: flags.limit });
}

/** Shell-quote one argument for the printed resume command. */
function shq(a: string): string {
  return /^[A-Za-z0-9_./:=@,+-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/**
 * The command that continues an interrupted run: the same arguments, with --out and --resume. With --all and an
 * --out, the whole --out is resumed; with --all and default run dirs, the interrupted env alone.
 */
export function resumeCommand(argv: string[], outDir: string, all?: { spec: string; out?: string }): string {
  let args = argv.slice(2).filter((a) => a !== "--force" && a !== "--resume");
  if (all?.out) outDir = all.out;
  else if (all) args = args.map((a) => (a === "--all" ? all.spec : a));
  const i = args.findIndex((a) => a === "--out" || a.startsWith("--out="));
  if (i >= 0) {
    if (args[i] === "--out") args.splice(i, 2);
    else args.splice(i, 1);
  }
  // never echo a secret into the terminal (and its scrollback, CI logs): the key comes from the environment instead
  let redacted = false;
  for (let j = 0; j < args.length; j++) {
    if (args[j] === "--api-key") {
      args.splice(j, 2);
      redacted = true;
      j--;
    } else if (args[j]!.startsWith("--api-key=")) {
      args.splice(j, 1);
      redacted = true;
      j--;
    }
  }
  const cmd = ["npx", "benchmax", ...args, "--out", outDir, "--resume"].map(shq).join(" ");
  return redacted ? `OPENAI_API_KEY=<your key> ${cmd}` : cmd;
}

/** A folder `eval --out` may write into: new, empty, or a benchmax run dir (with --all, a folder of run dirs). */
export function checkOutDir(out: string, all: boolean): void {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory()) throw new UsageError(`--out ${out} is not a folder`);
  const entries = readdirSync(out);
  if (entries.length === 0) return;
  const isRun = (d: string) => new RunDir(d).isRun();
  if (isRun(out)) return;
  if (all && entries.every((e) => statSync(join(out, e)).isDirectory() && isRun(join(out, e)))) return;
  throw new UsageError(
    `--out ${out} is a folder that holds other things (${entries.slice(0, 3).join(", ")}${entries.length > 3 ? ", …" : ""}), not a benchmax run: give a new or empty folder`,
  );
}

/** The run dir name of an env spec: a package or env name, or the name of the folder a path points to (`.` too). */
export function runName(spec: string): string {
  const trimmed = spec.replace(/[\\/]+$/, "");
  const name =
    /^(\.{1,2}|~)?$/.test(trimmed) || /^[.~]?[\\/]/.test(spec) || (trimmed.includes("/") && !trimmed.startsWith("@"))
      ? basename(resolve(spec))
      : trimmed.replace(/^.*[\\/]/, "");
  return name.replace(/^\.+/, "") || "env";
}

/**
 * The tool format when --tool-format is not given: the OpenAI API (no --base-url) parses native tool calls; a
 * self-hosted endpoint may not (vLLM needs --enable-auto-tool-choice), so Hermes text, which every chat model can
 * write, is the default there, with a note.
 */
export function defaultToolFormat(flags: Pick<EvalFlags, "policy" | "baseUrl">): {
  format: ToolFormat;
  note?: string;
} {
  if (flags.policy !== "openai") return { format: "hermes" };
  if (!(flags.baseUrl ?? process.env.OPENAI_BASE_URL)) return { format: "openai" };
  return {
    format: "hermes",
    note: "tool calls as Hermes <tool_call> text (--tool-format hermes); pass --tool-format openai if the endpoint returns native tool_calls",
  };
}

interface EvalOneResult {
  summary: GateSummary;
  firstError?: string;
  interrupted: boolean;
}

async function evalOne(
  spec: string,
  flags: EvalFlags,
  outDir: string,
  signal: AbortSignal,
  multi: boolean,
): Promise<EvalOneResult> {
  if (!["hermes", "openai"].includes(flags.toolFormat ?? "hermes")) {
    throw new UsageError(`--tool-format must be hermes or openai, got "${flags.toolFormat}"`);
  }
  const rd = new RunDir(outDir);
  // with --all or --config, a run the interrupted invocation never reached starts afresh
  if (flags.resume && multi && !rd.hasResults()) flags = { ...flags, resume: false };
  if (flags.resume && !rd.hasResults()) {
    throw new UsageError(`--resume: no results.jsonl in ${outDir} (pass the run's --out dir)`);
  }
  if (!flags.resume && !flags.force) {
    const existing = rd.runFiles();
    if (existing.length) {
      throw new UsageError(
        `${outDir} already holds a run (${existing.join(", ")}): pass --resume to continue it, --force to overwrite it, or another --out`,
      );
    }
  }
  const { env, local, entry } = await openEnv(spec, flags);
  const taskSource = local ?? env;
  try {
    let tasks: Task[] = await loadTasks(taskSource, flags);
    if (flags.limit !== undefined) tasks = tasks.slice(0, flags.limit);
    tasks = normalizeTaskIds(tasks, flags.dataset);
    if (tasks.length === 0) throw new UsageError(`env ${env.name}: the dataset has no tasks`);
    const policy = await makePolicy(local ?? env, flags);
    const oracle = policy.oracle === true;
    if (oracle && flags.dataset && !flags.allowOracle) {
      throw new UsageError(
        `policy ${policy.name} of ${env.name} is an oracle (it reads the gold answer): its score on ${flags.dataset} says nothing about a model. Use --policy openai, or pass --allow-oracle to run it anyway`,
      );
    }
    const config: Record<string, unknown> = {
      maxTurns: flags.maxTurns,
      toolFormat: flags.toolFormat,
      split: flags.split ?? null,
      envOptions: envOptionsOf(flags),
      limit: flags.limit ?? null,
      ...samplingIdentity(flags),
      ...(flags.checkpoint !== undefined ? { checkpoint: flags.checkpoint } : {}),
    };
    const identity: RunIdentity = {
      env: env.name,
      dataset: flags.dataset ?? "fixtures",
      datasetHash: datasetHash(tasks),
      tasks: tasks.length,
      group: flags.group,
      expectedRollouts: tasks.length * flags.group,
      completed: false,
      policy: policy.name,
      oracle,
      config,
    };
    if (flags.resume)
      rd.checkResume(identity, tasks, flags.group, rewardWeightsOf(env), env.capabilities?.reward?.componentRange);
    else if (flags.force) RunDir.create(outDir, { force: true });
    rd.writeIdentity(identity);
    const resultsPath = rd.resultsPath;
    const progress = progressReporter(env.name, { quiet: flags.quiet || flags.json });
    const run = await runMany(env, tasks, policy, {
      group: flags.group,
      concurrency: flags.concurrency,
      maxTurns: flags.maxTurns,
      maxTokens: undefined,
      toolFormat: flags.toolFormat,
      retries: flags.retries,
      resultsPath,
      resume: flags.resume,
      // the final-state artifacts the env's reward reads, kept for `benchmax rescore`
      artifacts: env.capabilities?.artifacts ? rd : undefined,
      signal,
      onEvent: (e) => {
        if (!signal.aborted || e.type === "end") progress(e);
      },
    });
    // rollouts cut short by Ctrl-C are neither written nor counted: a resume runs them again
    const interrupted = signal.aborted;
    const core = run.summary({
      env: env.name,
      policy: policy.name,
      versions: runVersions(entry),
      config: { ...config, group: flags.group, concurrency: flags.concurrency, dataset: identity.dataset },
    });
    identity.completed = !interrupted && core.n >= identity.expectedRollouts;
    const summary: GateSummary = { ...core, run: identity };
    rd.writeSummary(summary);
    rd.writeIdentity(identity);
    return { summary, firstError: run.aggregate.firstError, interrupted };
  } finally {
    await env.close();
    if (local && local !== env) await local.close();
  }
}

/** One run of an `eval` invocation: an env, the flags it runs with, and its run dir. */
interface EvalJob {
  spec: string;
  flags: EvalFlags;
  outDir: string;
}

export async function evalCommand(envSpec: string | undefined, flags: EvalFlags): Promise<number> {
  if (flags.config) return evalConfigCommand(envSpec, flags);
  let specs: string[];
  if (flags.all) {
    if (envSpec) throw new UsageError("give an env or --all, not both");
    specs = listInstalledEnvs().map((e) => e.name);
    if (specs.length === 0) throw new UsageError("no @benchmax/env-* packages are installed");
  } else {
    if (!envSpec) throw new UsageError("name an env (benchmax list shows them), pass --all, or --config FILE");
    specs = [envSpec];
  }
  flags = withToolFormat(flags);
  checkRunFlags(flags, Boolean(flags.all));
  const jobs = specs.map((spec) => {
    const name = runName(spec);
    const outDir = flags.out ? (specs.length > 1 ? join(flags.out, name) : flags.out) : RunDir.defaultPath(name);
    return { spec, flags, outDir };
  });
  return runJobs(jobs, flags, {
    multi: Boolean(flags.all),
    resumeOf: (job) =>
      resumeCommand(process.argv, job.outDir, flags.all ? { spec: job.spec, out: flags.out } : undefined),
  });
}

/** --tool-format's default for these flags, with its note on stderr (once per invocation). */
function withToolFormat(flags: EvalFlags, noted = new Set<string>()): EvalFlags {
  if (flags.toolFormat !== undefined) return flags;
  const { format, note } = defaultToolFormat(flags);
  if (note && !flags.quiet && !flags.json && !noted.has(note)) {
    noted.add(note);
    process.stderr.write(`benchmax: note: ${note}\n`);
  }
  return { ...flags, toolFormat: format };
}

function checkRunFlags(flags: EvalFlags, multi: boolean): void {
  if (flags.resume && !flags.out) throw new UsageError("--resume needs --out <run dir>");
  if (flags.resume && flags.force) throw new UsageError("give --resume or --force, not both");
  if (flags.out) checkOutDir(flags.out, multi);
}

type ConfigSettings = EvalConfigRun["settings"];

/** The config file's settings that stand for a flag: a setting the file gives wins over the flag. */
const SETTING_FLAG = {
  n: "limit",
  group: "group",
  max_turns: "maxTurns",
  concurrency: "concurrency",
  retries: "retries",
  temperature: "temperature",
  top_p: "topP",
  max_tokens: "maxTokens",
  seed: "seed",
  sampling_args: "samplingArgs",
  timeout: "timeout",
  dataset: "dataset",
  split: "split",
} as const satisfies { [K in keyof ConfigSettings]?: FlagFor<ConfigSettings[K]> };

/** A flag that can hold a setting's value. */
type FlagFor<V> = { [F in keyof EvalFlags]-?: Exclude<V, undefined> extends EvalFlags[F] ? F : never }[keyof EvalFlags];

/** The flags a config run's settings set (only those it gives). */
function settingsAsFlags(s: ConfigSettings): Partial<EvalFlags> {
  const out: Record<string, unknown> = {};
  for (const [key, flag] of Object.entries(SETTING_FLAG)) {
    const v = s[key as keyof typeof SETTING_FLAG];
    if (v !== undefined) out[flag] = v;
  }
  return out as Partial<EvalFlags>;
}

/**
 * `eval --config FILE`: each env × endpoint (or model) of each `[[eval]]` is one run, in `<out>/<env>-<endpoint>`,
 * run one after another like `eval --all`; then one results table, and the gate on each run.
 */
async function evalConfigCommand(envSpec: string | undefined, cli: EvalFlags): Promise<number> {
  if (envSpec) throw new UsageError(`give an env or --config, not both (the file names the envs)`);
  if (cli.all) throw new UsageError("give --all or --config, not both");
  const { runs } = loadEvalConfig(cli.config!);
  const out = cli.out ?? RunDir.defaultPath(configRunsName(cli.config!));
  const flags = { ...cli, out };
  checkRunFlags(flags, true);
  const seen = new Map<string, number>();
  const noted = new Set<string>();
  const jobs: EvalJob[] = runs.map((r) => {
    const s = r.settings;
    let f: EvalFlags = {
      ...flags,
      ...settingsAsFlags(s),
      policy: r.policy,
      model: r.model,
      baseUrl: r.baseUrl,
      apiKey: r.apiKey ?? flags.apiKey,
      checkpoint: r.checkpoint,
      envOptions: s.env_args ?? envOptionsOf(flags),
      toolFormat: s.tool_format ?? r.endpointToolFormat ?? flags.toolFormat,
    };
    if (f.samplingArgs) f.samplingArgs = parseSamplingArgs(JSON.stringify(f.samplingArgs));
    f = withToolFormat(f, noted);
    // the same env and endpoint twice (other settings): a second run dir, numbered
    const base = configRunName(runName(r.env), r.label);
    const count = (seen.get(base) ?? 0) + 1;
    seen.set(base, count);
    return { spec: r.env, flags: f, outDir: join(out, count > 1 ? `${base}-${count}` : base) };
  });
  // every endpoint answers before the first run starts: a dead one found after an hour of runs wastes that hour
  const urls = [
    ...new Set(jobs.flatMap((j) => (j.flags.policy === "openai" && j.flags.baseUrl ? [j.flags.baseUrl] : []))),
  ];
  for (const u of urls) await checkReachable(u, Math.min((flags.timeout ?? 120) * 1000, 10_000));
  return runJobs(jobs, flags, {
    multi: true,
    resumeOf: () => resumeCommand(process.argv, out, { spec: "", out }),
  });
}

async function runJobs(
  jobs: EvalJob[],
  flags: EvalFlags,
  options: { multi: boolean; resumeOf: (job: EvalJob) => string },
): Promise<number> {
  const summaries: GateSummary[] = [];
  const firstErrors: Array<string | undefined> = [];
  const dirs: string[] = [];
  const abort = new AbortController();
  // each model call in flight links one abort listener to this signal (and unlinks it when done): --concurrency 32
  // means 32 listeners, which is no leak, so Node's warning past 10 would only be noise on stderr
  setMaxListeners(0, abort.signal);
  let interrupts = 0;
  // Ctrl-C, and SIGTERM (a CI cancel, `timeout`, Kubernetes): stop starting rollouts, write the partial summary
  let exitCode = 130;
  const onSignal = (sig: NodeJS.Signals) => {
    interrupts++;
    if (process.stderr.isTTY) process.stderr.write("\x1b[?25h");
    if (interrupts > 1) {
      process.stderr.write(`\nbenchmax: ${sig} again; exiting without a summary\n`);
      process.exit(exitCode);
    }
    exitCode = sig === "SIGTERM" ? 143 : 130;
    process.stderr.write(
      sig === "SIGTERM"
        ? "\nbenchmax: terminated (SIGTERM); finishing the summary\n"
        : "\nbenchmax: interrupted; finishing the summary (Ctrl-C again to quit at once)\n",
    );
    abort.abort();
  };
  const onSigint = () => onSignal("SIGINT");
  const onSigterm = () => onSignal("SIGTERM");
  process.on("SIGINT", onSigint);
  process.on("SIGTERM", onSigterm);
  try {
    for (const job of jobs) {
      if (abort.signal.aborted) break;
      const { outDir } = job;
      const { summary, firstError, interrupted } = await evalOne(
        job.spec,
        job.flags,
        outDir,
        abort.signal,
        options.multi,
      );
      summaries.push(summary);
      firstErrors.push(firstError);
      dirs.push(outDir);
      if (interrupted) {
        const done = summary.n;
        process.stderr.write(
          `benchmax: ${summary.env}: stopped after ${done} of ${summary.run?.expectedRollouts} rollouts; partial summary in ${join(outDir, "summary.json")}\n`,
        );
        process.stderr.write(`resume with: ${options.resumeOf(job)}\n`);
      }
    }
  } finally {
    process.off("SIGINT", onSigint);
    process.off("SIGTERM", onSigterm);
  }
  if (flags.json) {
    process.stdout.write(`${JSON.stringify(jobs.length === 1 && !flags.config ? summaries[0] : summaries, null, 2)}\n`);
  } else {
    process.stdout.write(`${summaryTable(summaries, terminalWidth())}\n`);
    for (const d of dirs) process.stdout.write(`run dir: ${d}\n`);
  }
  if (abort.signal.aborted) return exitCode;
  // the gate, on each run: a run whose every rollout failed with infra_error fails the command
  let failed = 0;
  summaries.forEach((s, i) => {
    if (s.n > 0 && s.outcomes.infra_error === s.n) {
      failed++;
      const who = jobs.length > 1 ? `${s.env} (${s.policy}, ${dirs[i]})` : s.env;
      process.stderr.write(`benchmax: every rollout of ${who} failed with infra_error: ${firstErrors[i]}\n`);
    }
  });
  return failed ? 1 : 0;
}
