import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { mkdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { UsageError } from "../errors.js";
import { combineRewards } from "../reward.js";
import { OUTCOMES, type RolloutResult } from "../rollout-result.js";
import { CHECKPOINT_FILE } from "../series/series-checkpoint.js";
import { summarize } from "../summary.js";
import type { Task } from "../types.js";
import { type ArtifactRef, type ArtifactStore, sha256Hex } from "./artifacts.js";
import { type RunDirSummary, type RunIdentity, resumeMismatches } from "./identity.js";
import { forEachJsonLine, type JsonLinesOptions, readJsonLines } from "./jsonl.js";
import { resultRolloutId, rolloutIdOf } from "./rollout-id.js";

/** The range of an env's reward components when it declares none (`Env.rewardComponentRange`). */
export const DEFAULT_COMPONENT_RANGE: readonly [number, number] = [0, 1];

/**
 * The least and greatest reward `weights` can make of components within `range` (with no weights, the mean of the
 * components: `range` itself).
 */
export function rewardBounds(
  weights: Record<string, number>,
  range: readonly [number, number] = DEFAULT_COMPONENT_RANGE,
): [number, number] {
  const [lo, hi] = range;
  const ws = Object.values(weights);
  if (ws.length === 0) return [lo, hi];
  let min = 0;
  let max = 0;
  for (const w of ws) {
    if (w >= 0) {
      min += w * lo;
      max += w * hi;
    } else {
      min += w * hi;
      max += w * lo;
    }
  }
  return [min, max];
}

/** The files that make a folder a benchmax run dir. */
export const RUN_FILES = ["results.jsonl", "summary.json", "run.json", "report.html"] as const;

let tmpSeq = 0;
const tmpName = (p: string) => `${p}.tmp-${process.pid}-${++tmpSeq}`;

function writeAtomic(path: string, text: string): void {
  const tmp = tmpName(path);
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/**
 * A run directory, the one place that reads and writes it (eval, rescore, compare, report, serve --record):
 * `run.json` (the run's identity), `results.jsonl` (one rollout a line, appended as rollouts finish), `summary.json`,
 * and `artifacts/<sha256>` (the final-state artifacts rewards read, content-addressed: the same bytes are stored
 * once). It is an `ArtifactStore`: pass it as the `artifacts` option of runMany / Episode.
 */
export class RunDir implements ArtifactStore {
  readonly resultsPath: string;
  readonly summaryPath: string;
  readonly identityPath: string;
  readonly artifactsDir: string;

  constructor(readonly dir: string) {
    this.resultsPath = join(dir, "results.jsonl");
    this.summaryPath = join(dir, "summary.json");
    this.identityPath = join(dir, "run.json");
    this.artifactsDir = join(dir, "artifacts");
  }

  /** `runs/<env>-<time>`: a fresh default run dir path. */
  static defaultPath(env: string, root = "runs"): string {
    const stamp = new Date().toISOString().replace(/[:.]/g, "-").replace("Z", "");
    return join(root, `${env.replace(/[^A-Za-z0-9_.-]/g, "_")}-${stamp}`);
  }

  /** An existing run dir to read: a folder holding results.jsonl or summary.json; else a UsageError naming it. */
  static open(dir: string): RunDir {
    if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`${dir}: no such run directory`);
    const d = new RunDir(dir);
    if (!existsSync(d.resultsPath) && !existsSync(d.summaryPath)) {
      throw new UsageError(
        `${dir} is not a run dir: no results.jsonl (run \`benchmax eval <env> --out ${dir}\` first)`,
      );
    }
    return d;
  }

  /**
   * A run dir to write a new run into: new, empty, or (with `force`) an old run whose files are removed. A folder
   * holding another run is refused unless `force`; a folder holding other things is always refused.
   */
  static create(dir: string, options: { force?: boolean } = {}): RunDir {
    const d = new RunDir(dir);
    if (existsSync(dir)) {
      if (!statSync(dir).isDirectory()) throw new UsageError(`${dir} is not a folder`);
      const entries = readdirSync(dir);
      const runFiles = d.runFiles();
      if (runFiles.length && !options.force) {
        throw new UsageError(`${dir} already holds a run (${runFiles.join(", ")}): pass --force to overwrite it`);
      }
      const other = entries.filter((e) => !(RUN_FILES as readonly string[]).includes(e) && e !== "artifacts");
      if (other.length && !runFiles.length) {
        throw new UsageError(
          `${dir} is a folder that holds other things (${other.slice(0, 3).join(", ")}${other.length > 3 ? ", …" : ""}), not a benchmax run: give a new or empty folder`,
        );
      }
      d.clear();
    }
    mkdirSync(dir, { recursive: true });
    return d;
  }

  /** The run files present (results.jsonl, summary.json, run.json, report.html). */
  runFiles(): string[] {
    if (!existsSync(this.dir)) return [];
    const have = new Set(readdirSync(this.dir));
    return RUN_FILES.filter((f) => have.has(f));
  }

  /** A folder holding a run's identity or results. */
  isRun(): boolean {
    return existsSync(this.identityPath) || existsSync(this.resultsPath);
  }

  hasResults(): boolean {
    return existsSync(this.resultsPath);
  }

  /** Remove the run's files and artifacts (an overwrite). */
  clear(): void {
    for (const f of RUN_FILES) rmSync(join(this.dir, f), { force: true });
    rmSync(join(this.dir, CHECKPOINT_FILE), { force: true });
    rmSync(this.artifactsDir, { recursive: true, force: true });
  }

  readIdentity(): RunIdentity | undefined {
    if (!existsSync(this.identityPath)) return undefined;
    try {
      return JSON.parse(readFileSync(this.identityPath, "utf8")) as RunIdentity;
    } catch (e) {
      throw new UsageError(`${this.identityPath}: malformed run identity (${(e as Error).message})`);
    }
  }

  writeIdentity(identity: RunIdentity): void {
    mkdirSync(this.dir, { recursive: true });
    writeAtomic(this.identityPath, `${JSON.stringify(identity, null, 2)}\n`);
  }

  /**
   * Refuse a resume that would mix two runs: the identity in run.json must match `identity`, and every row of
   * results.jsonl a resume keeps must be a rollout of one of `tasks` × `group` (its rollout id and task id both this
   * dataset's), with a known outcome, finite components each within `componentRange` (the env's
   * `rewardComponentRange`, default [0, 1]), a reward within the range the env's `weights` make of such components,
   * and the reward the weights make of its own components. A row from another run, a hand-edited or forged reward
   * (1e9) is refused with its file:line.
   */
  checkResume(
    identity: RunIdentity,
    tasks: Task[],
    group: number,
    weights: Record<string, number>,
    componentRange: readonly [number, number] = DEFAULT_COMPONENT_RANGE,
  ): void {
    if (!this.hasResults())
      throw new UsageError(`--resume: no results.jsonl in ${this.dir} (pass the run's --out dir)`);
    const prev = this.readIdentity();
    if (prev) {
      const diffs = resumeMismatches(prev, identity);
      if (diffs.length) {
        throw new UsageError(
          `--resume: ${this.dir} is a different run (${diffs.join("; ")}); resume with the same env, dataset, policy and flags, or use another --out`,
        );
      }
    }
    const [lo, hi] = componentRange;
    const [min, max] = rewardBounds(weights, componentRange);
    const eps = (x: number) => 1e-9 * Math.max(1, Math.abs(x));
    const fmt = (x: number) => String(Math.round(x * 1e9) / 1e9);
    const expected = new Map<string, string>();
    for (const t of tasks) for (let k = 0; k < group; k++) expected.set(rolloutIdOf(t.id, k), t.id);
    const path = this.resultsPath;
    let at = 0;
    const bad = (why: string) =>
      new UsageError(
        `--resume: ${path}:${at}: ${why}; it is not a rollout of this run (restore the file, or start afresh with --force)`,
      );
    forEachJsonLine(path, (value, line) => {
      at = line;
      const r = value as RolloutResult;
      if (r === null || typeof r !== "object" || Array.isArray(r)) throw bad("not a rollout result");
      const taskId = expected.get(r.rolloutId);
      if (taskId === undefined) throw bad(`rollout "${r.rolloutId}" is not one of this run's tasks × group ${group}`);
      if (r.taskId !== taskId) throw bad(`rollout "${r.rolloutId}" names task "${r.taskId}", not "${taskId}"`);
      if (!OUTCOMES.includes(r.outcome)) throw bad(`unknown outcome "${String(r.outcome)}"`);
      if (r.reward === undefined && r.rewards === undefined) return;
      if (r.outcome === "env_error" || r.outcome === "infra_error")
        throw bad(`an ${r.outcome} rollout carries a reward`);
      if (typeof r.reward !== "number" || !Number.isFinite(r.reward))
        throw bad(`reward ${String(r.reward)} is not a finite number`);
      const comps = r.rewards ?? {};
      if (comps === null || typeof comps !== "object" || Array.isArray(comps)) throw bad("rewards is not an object");
      for (const [k, v] of Object.entries(comps)) {
        if (typeof v !== "number" || !Number.isFinite(v))
          throw bad(`reward component ${k} = ${String(v)} is not finite`);
        if (v < lo - eps(lo) || v > hi + eps(hi))
          throw bad(`reward component ${k} = ${v} is outside [${lo}, ${hi}], the range of this env's components`);
      }
      if (r.reward < min - eps(min) || r.reward > max + eps(max))
        throw bad(`reward ${r.reward} is outside [${fmt(min)}, ${fmt(max)}], the range this env's weights allow`);
      let want: number;
      try {
        want = combineRewards(comps, weights);
      } catch (e) {
        throw bad((e as Error).message);
      }
      if (Math.abs(want - r.reward) > eps(want)) {
        throw bad(`reward ${r.reward} is not what the env's weights make of its components (${want})`);
      }
    });
  }

  /** Call `fn` with each result line, in file order (streamed; a retried rollout appears more than once). */
  forEachResult(fn: (r: RolloutResult, line: number) => void, options?: JsonLinesOptions): void {
    if (!this.hasResults()) return;
    forEachJsonLine(
      this.resultsPath,
      (value, line) => {
        const r = value as RolloutResult;
        if (typeof r !== "object" || r === null || typeof r.taskId !== "string" || typeof r.outcome !== "string") {
          throw new UsageError(`${this.resultsPath}:${line}: not a rollout result (needs taskId and outcome)`);
        }
        fn(r, line);
      },
      options,
    );
  }

  /** The result lines, streamed for a consumer that awaits between them (in file order, retries included). */
  async *resultLines(): AsyncGenerator<{ r: RolloutResult; line: number }> {
    if (!this.hasResults()) return;
    for await (const { value, line } of readJsonLines(this.resultsPath)) {
      const r = value as RolloutResult;
      if (typeof r !== "object" || r === null || typeof r.taskId !== "string" || typeof r.outcome !== "string") {
        throw new UsageError(`${this.resultsPath}:${line}: not a rollout result (needs taskId and outcome)`);
      }
      yield { r, line };
    }
  }

  /**
   * The rollouts: the last result of each rollout id (a retry takes the place of the earlier attempt, at the end).
   * `map` transforms each line as it is read (e.g. drops its messages), so memory holds only what is kept.
   */
  results(map?: (r: RolloutResult, line: number) => RolloutResult, options?: JsonLinesOptions): RolloutResult[] {
    const last = new Map<string, RolloutResult>();
    this.forEachResult((r, line) => {
      const id = resultRolloutId(r);
      last.delete(id);
      last.set(id, map ? map(r, line) : r);
    }, options);
    return [...last.values()];
  }

  writeSummary(summary: RunDirSummary): string {
    mkdirSync(this.dir, { recursive: true });
    writeAtomic(this.summaryPath, `${JSON.stringify(summary, null, 2)}\n`);
    return this.summaryPath;
  }

  /**
   * The run's summary: summary.json, or computed from the results when it is missing (a killed run: marked
   * incomplete); the identity comes from run.json when the summary lacks it. `results` gives the rollouts when
   * the caller has read them already.
   */
  readSummary(results?: RolloutResult[]): RunDirSummary {
    const identity = this.readIdentity();
    let summary: RunDirSummary;
    if (existsSync(this.summaryPath)) {
      try {
        summary = JSON.parse(readFileSync(this.summaryPath, "utf8")) as RunDirSummary;
      } catch (e) {
        throw new UsageError(`${this.summaryPath}: malformed summary (${(e as Error).message})`);
      }
    } else {
      if (!this.hasResults()) throw new UsageError(`${this.dir} is not a run dir (no summary.json or results.jsonl)`);
      const rows = results ?? this.results();
      if (rows.length === 0) throw new UsageError(`${this.resultsPath} holds no results`);
      summary = summarize(rows, { env: identity?.env ?? "?", policy: identity?.policy ?? "?" });
      // no summary.json: the run never finished
      if (identity) summary.run = { ...identity, completed: false };
    }
    if (!summary.run && identity) summary.run = identity;
    return summary;
  }

  /** Where an artifact's bytes are. */
  artifactPath(sha256: string): string {
    if (!/^[0-9a-f]{64}$/.test(sha256)) throw new UsageError(`not an artifact address: ${JSON.stringify(sha256)}`);
    return join(this.artifactsDir, sha256);
  }

  /** Store bytes under their sha256 (once: the same bytes from another rollout are not written again). */
  async put(bytes: Uint8Array): Promise<ArtifactRef> {
    const sha256 = sha256Hex(bytes);
    const path = this.artifactPath(sha256);
    const have = await stat(path).catch(() => undefined);
    if (!have || have.size !== bytes.byteLength) {
      await mkdir(this.artifactsDir, { recursive: true });
      const tmp = tmpName(path);
      await writeFile(tmp, bytes);
      await rename(tmp, path);
    }
    return { sha256, bytes: bytes.byteLength };
  }

  /** An artifact's bytes, checked against its address (a changed file is refused, never scored). */
  async readArtifact(ref: ArtifactRef | string): Promise<Buffer> {
    const sha256 = typeof ref === "string" ? ref : ref.sha256;
    const path = this.artifactPath(sha256);
    const bytes = await readFile(path).catch((e: NodeJS.ErrnoException) => {
      throw new UsageError(`${this.dir}: artifact ${sha256} is missing (${e.code ?? e.message})`);
    });
    if (sha256Hex(bytes) !== sha256) throw new UsageError(`${path}: the artifact's bytes do not match its sha256`);
    return bytes;
  }
}
