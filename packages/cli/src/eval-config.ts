import { readFileSync } from "node:fs";
import { basename, dirname, extname, resolve } from "node:path";
import { UsageError } from "@benchmax/core";
import { parse as parseToml, TomlError } from "smol-toml";
import { z } from "zod";

/**
 * `benchmax eval --config FILE`: several envs, models and endpoints in one file (TOML or JSON), in the shape
 * verifiers users keep for `vf-eval` / `prime eval`: endpoint aliases, then one `[[eval]]` table per evaluation.
 *
 * ```toml
 * group = 4                      # defaults for every [[eval]]
 *
 * [endpoints.qwen]
 * model = "Qwen/Qwen2.5-7B-Instruct"
 * base_url = "http://localhost:8000/v1"
 * api_key_env = "VLLM_API_KEY"   # the variable that holds the key (never the key itself)
 *
 * [[eval]]
 * env = ["math", "wikipedia"]
 * endpoint = ["qwen", "gpt"]     # or model = "…" (+ base_url), or policy = "reference"
 * n = 20                         # the first 20 tasks (--limit)
 * max_turns = 8
 * ```
 *
 * Each (env, endpoint) pair of each `[[eval]]` is one run, written to a run dir as a single `eval` would write it.
 * verifiers' own key names are taken too: `env_id` (env), `num_examples` (n), `rollouts_per_example` (group),
 * `max_concurrent` (concurrency), `url` and `key` in an endpoint (base_url, api_key_env).
 */

const nonEmpty = z.string().trim().min(1, "must be a non-empty string");
const oneOrMany = z.union([nonEmpty, z.array(nonEmpty).min(1, "must name at least one")]);
const int = (min: number) => z.number().int(`must be an integer >= ${min}`).min(min, `must be an integer >= ${min}`);
const toolFormat = z.enum(["hermes", "openai"], "must be hermes or openai");
const envVarName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be the name of an environment variable (letters, digits, _), not a key");
const url = z.string().refine((s) => /^https?:\/\/[^\s]+$/.test(s), "must be an http(s) URL");

/** How an evaluation runs: the protocol settings, at the top level (defaults) or in one `[[eval]]`. */
const settings = {
  n: int(1).optional(),
  group: int(1).optional(),
  max_turns: int(1).optional(),
  concurrency: int(1).optional(),
  retries: int(0).optional(),
  temperature: z.number().min(0, "must be between 0 and 2").max(2, "must be between 0 and 2").optional(),
  top_p: z.number().min(0, "must be between 0 and 1").max(1, "must be between 0 and 1").optional(),
  max_tokens: int(1).optional(),
  seed: z.number().int("must be an integer").optional(),
  sampling_args: z.record(z.string(), z.unknown()).optional(),
  tool_format: toolFormat.optional(),
  timeout: z.number().positive("must be a positive number of seconds").optional(),
  dataset: nonEmpty.optional(),
  split: nonEmpty.optional(),
  env_args: z.record(z.string(), z.unknown()).optional(),
};

/** What is evaluated: an endpoint alias, a model (with its base URL), or a policy without a model. */
const subject = {
  endpoint: oneOrMany.optional(),
  model: oneOrMany.optional(),
  base_url: url.optional(),
  api_key_env: envVarName.optional(),
  checkpoint: nonEmpty.optional(),
  policy: z.enum(["reference", "openai"], "must be reference or openai").optional(),
};

const endpointSchema = z.strictObject({
  model: nonEmpty,
  base_url: url.optional(),
  api_key_env: envVarName.optional(),
  checkpoint: nonEmpty.optional(),
  tool_format: toolFormat.optional(),
});

const evalSchema = z.strictObject({ env: oneOrMany, ...subject, ...settings });

export const evalConfigSchema = z.strictObject({
  endpoints: z
    .record(z.string().regex(/^[A-Za-z0-9_.-]+$/, "endpoint names are letters, digits, _ . -"), endpointSchema)
    .optional(),
  ...subject,
  ...settings,
  eval: z.array(evalSchema).min(1, "needs at least one [[eval]] table"),
});

export type EvalConfigFile = z.infer<typeof evalConfigSchema>;
type Settings = Partial<Pick<EvalConfigFile, keyof typeof settings>>;

/** verifiers' key names, taken as ours. */
const ALIASES: Record<string, Record<string, string>> = {
  top: { num_examples: "n", rollouts_per_example: "group", max_concurrent: "concurrency" },
  eval: { env_id: "env", num_examples: "n", rollouts_per_example: "group", max_concurrent: "concurrency" },
  endpoint: { url: "base_url", key: "api_key_env" },
};

/** One run the file asks for: an env and what evaluates it, with its settings. */
export interface EvalConfigRun {
  /** The env spec (a name, a package, or a path resolved against the file's folder). */
  env: string;
  /** The endpoint alias, the model, or the policy: names the run dir with the env. */
  label: string;
  /** Index of its `[[eval]]` table (0-based). */
  index: number;
  policy: "reference" | "openai";
  model?: string;
  baseUrl?: string;
  /** The API key, read from the variable `api_key_env` names. */
  apiKey?: string;
  checkpoint?: string;
  settings: Settings;
  /** The endpoint's tool format, when the endpoint sets one. */
  endpointToolFormat?: "hermes" | "openai";
}

export interface LoadedEvalConfig {
  file: string;
  runs: EvalConfigRun[];
}

/** Read, validate and expand an eval config file; every problem is a UsageError naming the file, line and key. */
export function loadEvalConfig(file: string, env: NodeJS.ProcessEnv = process.env): LoadedEvalConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (e) {
    throw new UsageError(
      `--config ${file}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`,
    );
  }
  const isJson = extname(file).toLowerCase() === ".json";
  let raw: unknown;
  try {
    raw = isJson ? JSON.parse(text) : parseToml(text);
  } catch (e) {
    if (e instanceof TomlError) {
      const first = e.message.split("\n")[0]!.replace(/^Invalid TOML document: /, "");
      throw new UsageError(`${file}:${e.line}:${e.column}: not valid TOML: ${first}`);
    }
    const where = jsonErrorLine(text, e as Error);
    throw new UsageError(`${file}${where ? `:${where}` : ""}: not valid JSON: ${(e as Error).message}`);
  }
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) {
    throw new UsageError(`${file}: expected a table of settings with [[eval]] entries`);
  }
  const normalized = renameAliases(raw as Record<string, unknown>, file, text, isJson);
  const parsed = evalConfigSchema.safeParse(normalized);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((issue) => describeIssue(issue, file, text, isJson, normalized));
    throw new UsageError(
      `${file} is not a valid eval config:\n${lines.map((l) => `  ${l}`).join("\n")}\n(see \`benchmax eval --help\` and the README's "Eval config files")`,
    );
  }
  return { file, runs: expand(parsed.data, file, text, isJson, env) };
}

function renameAliases(
  raw: Record<string, unknown>,
  file: string,
  text: string,
  isJson: boolean,
): Record<string, unknown> {
  const rename = (o: unknown, table: Record<string, string>, path: Array<string | number>): unknown => {
    if (o === null || typeof o !== "object" || Array.isArray(o)) return o;
    const out: Record<string, unknown> = { ...(o as Record<string, unknown>) };
    for (const [theirs, ours] of Object.entries(table)) {
      if (!(theirs in out)) continue;
      if (ours in out) {
        const at = locate(text, [...path, theirs], isJson);
        throw new UsageError(
          `${file}${at ? `:${at}` : ""}: ${fmtPath([...path, theirs])} and ${ours} say the same thing (${theirs} is verifiers' name for ${ours}): keep one`,
        );
      }
      out[ours] = out[theirs];
      delete out[theirs];
    }
    return out;
  };
  const top = rename(raw, ALIASES.top!, []) as Record<string, unknown>;
  if (Array.isArray(top.eval)) top.eval = top.eval.map((e, i) => rename(e, ALIASES.eval!, ["eval", i]));
  if (top.endpoints && typeof top.endpoints === "object" && !Array.isArray(top.endpoints)) {
    top.endpoints = Object.fromEntries(
      Object.entries(top.endpoints).map(([k, v]) => [k, rename(v, ALIASES.endpoint!, ["endpoints", k])]),
    );
  }
  return top;
}

const SETTING_KEYS = Object.keys(settings) as Array<keyof typeof settings>;

function expand(
  cfg: EvalConfigFile,
  file: string,
  text: string,
  isJson: boolean,
  env: NodeJS.ProcessEnv,
): EvalConfigRun[] {
  const dir = dirname(resolve(file));
  const endpoints = cfg.endpoints ?? {};
  const fail = (path: Array<string | number>, message: string): never => {
    const at = locate(text, path, isJson);
    throw new UsageError(`${file}${at ? `:${at}` : ""}: ${fmtPath(path)}: ${message}`);
  };
  const keyOf = (name: string | undefined, path: Array<string | number>): string | undefined => {
    if (!name) return undefined;
    const v = env[name];
    if (!v) fail(path, `the environment variable ${name} is not set (it should hold the API key)`);
    return v;
  };
  const runs: EvalConfigRun[] = [];
  cfg.eval.forEach((e, index) => {
    const pick = <K extends keyof typeof subject>(k: K) => (e[k] !== undefined ? e[k] : cfg[k]);
    const where = (k: string): Array<string | number> =>
      e[k as keyof typeof e] !== undefined ? ["eval", index, k] : [k];
    const s: Settings = {};
    for (const k of SETTING_KEYS) {
      const v = e[k] !== undefined ? e[k] : cfg[k];
      if (v !== undefined) (s as Record<string, unknown>)[k] = v;
    }
    if (s.dataset) s.dataset = resolve(dir, s.dataset);
    const endpoint = pick("endpoint");
    const model = pick("model");
    const policy = pick("policy");
    if (endpoint !== undefined && model !== undefined) {
      fail(["eval", index], `give endpoint (an alias from [endpoints]) or model, not both`);
    }
    if (endpoint !== undefined && e.base_url !== undefined) {
      fail(["eval", index, "base_url"], "the endpoint names its base_url; give base_url with model, not endpoint");
    }
    if (policy === "reference" && (endpoint !== undefined || model !== undefined)) {
      fail(where("policy"), "policy reference runs no model: drop endpoint/model, or the policy");
    }
    const envs = typeof e.env === "string" ? [e.env] : e.env;
    const subjects: Array<Omit<EvalConfigRun, "env" | "index" | "settings">> = [];
    if (endpoint !== undefined) {
      for (const alias of typeof endpoint === "string" ? [endpoint] : endpoint) {
        const ep = endpoints[alias];
        if (!ep) {
          const known = Object.keys(endpoints);
          fail(
            where("endpoint"),
            `no endpoint "${alias}" in [endpoints] (${known.length ? `known: ${known.join(", ")}` : "the file defines none"})`,
          );
        }
        subjects.push({
          label: alias,
          policy: "openai",
          model: ep!.model,
          baseUrl: ep!.base_url,
          apiKey: keyOf(ep!.api_key_env, ["endpoints", alias, "api_key_env"]),
          checkpoint: e.checkpoint ?? ep!.checkpoint,
          endpointToolFormat: ep!.tool_format,
        });
      }
    } else if (model !== undefined) {
      for (const m of typeof model === "string" ? [model] : model) {
        subjects.push({
          label: m,
          policy: "openai",
          model: m,
          baseUrl: pick("base_url"),
          apiKey: keyOf(pick("api_key_env"), where("api_key_env")),
          checkpoint: pick("checkpoint"),
        });
      }
    } else if (policy === "openai") {
      fail(where("policy"), "policy openai needs an endpoint or a model");
    } else {
      subjects.push({ label: "reference", policy: "reference" });
    }
    for (const spec of envs) {
      const envSpec = /^(\.{1,2}([\\/]|$)|~)/.test(spec) ? resolve(dir, spec) : spec;
      for (const sub of subjects) runs.push({ ...sub, env: envSpec, index, settings: s });
    }
  });
  return runs;
}

/** `eval[1].group`, `endpoints.qwen.base_url`. */
export function fmtPath(path: ReadonlyArray<PropertyKey>): string {
  return path
    .map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`))
    .join("")
    .replace(/^$/, "(top level)");
}

function describeIssue(
  issue: z.core.$ZodIssue,
  file: string,
  text: string,
  isJson: boolean,
  raw: Record<string, unknown>,
): string {
  const path = issue.path as Array<string | number>;
  if (issue.code === "unrecognized_keys") {
    const known = knownKeys(path);
    return issue.keys
      .map((k) => {
        const at = locate(text, [...path, k], isJson);
        return `${file}${at ? `:${at}` : ""}: ${fmtPath([...path, k])}: unknown key${known ? ` (known: ${known})` : ""}`;
      })
      .join("\n  ");
  }
  const got = valueAt(raw, path);
  // a missing key has no line of its own: point at its table
  const at = locate(text, path, isJson) ?? (got === undefined ? locate(text, path.slice(0, -1), isJson) : undefined);
  const shown = got === undefined ? "" : ` (got ${JSON.stringify(got)})`;
  const message =
    got === undefined
      ? "is required"
      : issue.code === "invalid_union"
        ? "must be a string or a list of strings"
        : issue.message;
  return `${file}${at ? `:${at}` : ""}: ${fmtPath(path)}: ${message}${shown}`;
}

function knownKeys(path: Array<string | number>): string {
  const shape =
    path.length === 0
      ? evalConfigSchema.shape
      : path[0] === "eval"
        ? evalSchema.shape
        : path[0] === "endpoints"
          ? endpointSchema.shape
          : undefined;
  return shape ? Object.keys(shape).join(", ") : "";
}

function valueAt(o: unknown, path: Array<string | number>): unknown {
  let cur = o;
  for (const p of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string | number, unknown>)[p];
  }
  return cur;
}

/**
 * The line of a key in the file, where it can be found: TOML tables (`[endpoints.NAME]`, the Nth `[[eval]]`) and
 * `key =` lines in them, or a JSON key. Undefined when the layout is one this does not follow (inline tables, …).
 */
export function locate(text: string, path: Array<string | number>, isJson: boolean): number | undefined {
  const lines = text.split(/\r?\n/);
  const keyRe = (k: string) => new RegExp(`^\\s*(?:${escapeRe(k)}|"${escapeRe(k)}"|'${escapeRe(k)}')\\s*=`);
  const isHeader = (l: string) => /^\s*\[/.test(l);
  if (isJson) {
    const last = [...path].reverse().find((p) => typeof p === "string");
    if (last === undefined) return undefined;
    const re = new RegExp(`"${escapeRe(String(last))}"\\s*:`);
    const hits = lines.flatMap((l, i) => (re.test(l) ? [i + 1] : []));
    if (hits.length === 0) return undefined;
    // the Nth [[eval]] entry's key: count occurrences when the path says which entry
    const n = path[0] === "eval" && typeof path[1] === "number" && path.length > 2 ? path[1] : 0;
    return hits.length > n ? hits[n] : hits[0];
  }
  let start = 0;
  let rest = path;
  if (path[0] === "eval" && typeof path[1] === "number") {
    let seen = -1;
    start = lines.findIndex((l) => /^\s*\[\[\s*eval\s*\]\]/.test(l) && ++seen === path[1]);
    if (start < 0) return undefined;
    rest = path.slice(2);
    if (rest.length === 0) return start + 1;
    start++;
  } else if (path[0] === "endpoints" && typeof path[1] === "string") {
    const name = escapeRe(path[1]);
    const h = lines.findIndex((l) =>
      new RegExp(`^\\s*\\[\\s*endpoints\\s*\\.\\s*(?:${name}|"${name}")\\s*\\]`).test(l),
    );
    if (h < 0) return undefined;
    rest = path.slice(2);
    if (rest.length === 0) return h + 1;
    start = h + 1;
  }
  if (typeof rest[0] !== "string") return undefined;
  for (let i = start; i < lines.length; i++) {
    if (isHeader(lines[i]!)) break;
    if (keyRe(rest[0]).test(lines[i]!)) return i + 1;
  }
  return undefined;
}

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function jsonErrorLine(text: string, e: Error): number | undefined {
  const m = /position (\d+)/.exec(e.message);
  if (!m) return undefined;
  return text.slice(0, Number(m[1])).split("\n").length;
}

/** The name of the run dir of one run: `<env>-<endpoint or model>`, safe as a folder name. */
export function configRunName(envName: string, label: string): string {
  return `${envName}-${label}`.replace(/[^A-Za-z0-9_.-]+/g, "_");
}

/** The default folder of a config's runs: runs/<file name>-<time>. */
export function configRunsName(file: string): string {
  return basename(file, extname(file));
}
