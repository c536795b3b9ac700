import { existsSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { buildInitialMessages, type Env, seededRandom, type Task, textOf, UsageError } from "@benchmax/core";
import { type SkyrlRow, writeSkyrlParquet } from "./parquet.js";
import { absolutePathsIn, commonRoot, relativizePaths } from "./portable-paths.js";
import { writeShim } from "./shim.js";

export interface ExportSkyrlOptions {
  /** Output folder: train.parquet, validation.parquet, python/benchmax_skyrl, export.json. */
  out: string;
  /** The tasks to export (default: the env's `tasks.loadTasks(dataset, {split: datasetSplit, limit})`). */
  tasks?: Task[];
  dataset?: string;
  datasetSplit?: string;
  limit?: number;
  /** Fraction of tasks in train.parquet, the rest in validation.parquet. Default 0.9. */
  trainFraction?: number;
  /** Shuffle seed (default 0); tasks are shuffled before the split. */
  seed?: number;
  /** The env id SkyRL is launched with (`environment.env_class`). Default `benchmax_<env>`. */
  envClass?: string;
  /** Put each task as JSON in extra_info.task, so a server without the dataset can run it. Default true. */
  inlineTasks?: boolean;
  /** Also write the Python shim under `out/python`. Default true. */
  writeShim?: boolean;
  /**
   * Rows carry file paths relative to this folder (`./x/y.xlsx`), which the env server resolves against its own
   * `--data-root`. Default: the `dataset` folder, else the deepest folder holding every file the tasks name.
   * `false` keeps absolute paths.
   */
  dataRoot?: string | false;
}

export interface ExportSkyrlResult {
  train: number;
  validation: number;
  files: string[];
  envClass: string;
  /** Put this on PYTHONPATH to import benchmax_skyrl. */
  pythonPath?: string;
  /** The folder file paths in the rows are relative to (undefined: the tasks name no files). */
  dataRoot?: string;
}

/** Parse `--split train=0.9` (or `0.9`). */
export function parseSplit(spec: string | undefined): number {
  if (spec === undefined) return 0.9;
  const m = /^(?:train=)?([0-9]*\.?[0-9]+)$/.exec(spec.trim());
  const f = m ? Number(m[1]) : Number.NaN;
  if (!(f > 0 && f <= 1))
    throw new UsageError(`--split must be train=<fraction in (0, 1]>, e.g. train=0.9; got "${spec}"`);
  return f;
}

function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  const rand = seededRandom(seed >>> 0 || 0x9e3779b9);
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** One task as a SkyRL row; with `dataRoot`, file paths under it become relative (`./…`). */
export function skyrlRow(
  env: Env,
  task0: Task,
  index: number,
  split: string,
  envClass: string,
  inline = true,
  dataRoot?: string,
): SkyrlRow {
  const prompt = buildInitialMessages(env, task0, "hermes").map((m) => ({ role: m.role, content: textOf(m.content) }));
  const task = dataRoot ? relativizePaths(task0, dataRoot) : task0;
  const gt = task.groundTruth;
  return {
    data_source: `benchmax/${env.name}`,
    prompt,
    env_class: envClass,
    reward_spec: { method: "rule", ground_truth: typeof gt === "string" ? gt : (JSON.stringify(gt) ?? "") },
    extra_info: { task_id: task.id, index, split, env: env.name, task: inline ? JSON.stringify(task) : "" },
  };
}

/** The data root of an export: explicit, the dataset's folder, or the deepest folder holding every task file. */
export function exportDataRoot(
  tasks: Task[],
  options: { dataRoot?: string | false; dataset?: string },
): string | undefined {
  if (options.dataRoot === false) return undefined;
  if (options.dataRoot !== undefined) return resolve(options.dataRoot);
  const paths = tasks.flatMap((t) => absolutePathsIn(t));
  if (paths.length === 0) return undefined;
  if (options.dataset && existsSync(options.dataset)) {
    const d = resolve(options.dataset);
    const root = statSync(d).isDirectory() ? d : dirname(d);
    const all = commonRoot([root, ...paths]);
    if (all) return all;
  }
  return commonRoot(paths);
}

interface SplitRows {
  env: Env;
  envClass: string;
  train: SkyrlRow[];
  validation: SkyrlRow[];
  dataRoot?: string;
}

async function splitRows(env: Env, options: Omit<ExportSkyrlOptions, "out">): Promise<SplitRows> {
  let tasks = options.tasks;
  if (!tasks) {
    const own = env.capabilities?.tasks;
    if (!own?.loadTasks) throw new UsageError(`env ${env.name} has no dataset loader; pass tasks`);
    tasks = await own.loadTasks(options.dataset, { split: options.datasetSplit, limit: options.limit });
  }
  if (options.limit !== undefined) tasks = tasks.slice(0, options.limit);
  if (tasks.length === 0) throw new UsageError(`env ${env.name}: no tasks to export`);
  const frac = options.trainFraction ?? 0.9;
  if (!(frac > 0 && frac <= 1)) throw new UsageError(`train fraction must be in (0, 1], got ${frac}`);
  const order = shuffled(tasks, options.seed ?? 0);
  let nTrain = Math.round(order.length * frac);
  if (frac < 1 && order.length >= 2) nTrain = Math.min(Math.max(nTrain, 1), order.length - 1);
  const envClass = options.envClass ?? `benchmax_${env.name.replace(/[^A-Za-z0-9_]/g, "_")}`;
  const inline = options.inlineTasks ?? true;
  const dataRoot = exportDataRoot(tasks, options);
  const train = order.slice(0, nTrain).map((t, i) => skyrlRow(env, t, i, "train", envClass, inline, dataRoot));
  const validation = order.slice(nTrain).map((t, i) => skyrlRow(env, t, i, "validation", envClass, inline, dataRoot));
  return { env, envClass, train, validation, dataRoot };
}

async function writeExport(
  out: string,
  train: SkyrlRow[],
  validation: SkyrlRow[],
  shim: boolean,
  manifest: Record<string, unknown>,
): Promise<{ files: string[]; pythonPath?: string }> {
  await mkdir(out, { recursive: true });
  const files = [join(out, "train.parquet"), join(out, "validation.parquet")];
  await writeSkyrlParquet(files[0]!, train);
  await writeSkyrlParquet(files[1]!, validation);
  let pythonPath: string | undefined;
  if (shim) {
    pythonPath = join(out, "python");
    files.push(await writeShim(pythonPath));
  }
  files.push(join(out, "export.json"));
  await writeFile(files[files.length - 1]!, `${JSON.stringify({ ...manifest, pythonPath }, null, 2)}\n`);
  return { files, pythonPath };
}

/**
 * `benchmax export skyrl`: the env's tasks as SkyRL training rows (train.parquet / validation.parquet) and the
 * Python shim that connects SkyRL to a `benchmax serve` server.
 */
export async function exportSkyrl(env: Env, options: ExportSkyrlOptions): Promise<ExportSkyrlResult> {
  const out = resolve(options.out);
  const { envClass, train, validation, dataRoot } = await splitRows(env, options);
  const { files, pythonPath } = await writeExport(out, train, validation, options.writeShim !== false, {
    env: env.name,
    envClass,
    train: train.length,
    validation: validation.length,
    trainFraction: options.trainFraction ?? 0.9,
    seed: options.seed ?? 0,
    dataset: options.dataset ?? "fixtures",
    dataRoot,
  });
  return { train: train.length, validation: validation.length, files, envClass, pythonPath, dataRoot };
}

export interface MixedEnvExport extends Omit<ExportSkyrlOptions, "out" | "writeShim" | "trainFraction" | "seed"> {
  env: Env;
}

export interface ExportSkyrlMixedResult {
  train: number;
  validation: number;
  files: string[];
  envs: Array<{ env: string; envClass: string; train: number; validation: number; dataRoot?: string }>;
  pythonPath?: string;
}

/**
 * Several envs as one SkyRL dataset: each row keeps its env's `env_class` (SkyRL builds each trajectory's env from
 * the row), rows of all envs are shuffled together with `seed`. Register one shim class per env and route each to
 * its own servers (`BENCHMAX_ENV_CLASSES`, see the README).
 */
export async function exportSkyrlMixed(
  entries: MixedEnvExport[],
  options: { out: string; trainFraction?: number; seed?: number; writeShim?: boolean },
): Promise<ExportSkyrlMixedResult> {
  if (entries.length === 0) throw new UsageError("a mixed export needs at least one env");
  const parts: SplitRows[] = [];
  for (const e of entries) {
    const part = await splitRows(e.env, { ...e, trainFraction: options.trainFraction, seed: options.seed });
    if (parts.some((p) => p.envClass === part.envClass))
      throw new UsageError(`two envs of a mixed export share env_class ${part.envClass}; set envClass`);
    parts.push(part);
  }
  const reindex = (rows: SkyrlRow[]) =>
    shuffled(rows, options.seed ?? 0).map((r, i) => ({ ...r, extra_info: { ...r.extra_info, index: i } }));
  const train = reindex(parts.flatMap((p) => p.train));
  const validation = reindex(parts.flatMap((p) => p.validation));
  const envs = parts.map((p) => ({
    env: p.env.name,
    envClass: p.envClass,
    train: p.train.length,
    validation: p.validation.length,
    dataRoot: p.dataRoot,
  }));
  const { files, pythonPath } = await writeExport(
    resolve(options.out),
    train,
    validation,
    options.writeShim !== false,
    {
      env: envs.map((e) => e.env).join(","),
      envs,
      train: train.length,
      validation: validation.length,
      trainFraction: options.trainFraction ?? 0.9,
      seed: options.seed ?? 0,
    },
  );
  return { train: train.length, validation: validation.length, files, envs, pythonPath };
}
