import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { UsageError } from "@benchmax/core";

/** A way to open a file from inside the env's own sandbox (a code tool): `{path}` becomes the JSON-quoted path. */
export interface FileProbe {
  tool: string;
  argument: string;
  template: string;
  /** A regular expression the tool's output matches when the file was read (default: any output that is no error). */
  success?: string;
}

/** A finding the env's authors accept, with the reason (printed, never silent). */
export interface Allowance {
  check: string;
  attack?: string;
  label?: string;
  /** Only score findings whose reward is under this (partial credit the metric gives by design). */
  below?: number;
  reason: string;
}

/** The env package's audit settings: `audit.json` next to its package.json. */
export interface AuditConfig {
  /** Highest reward a policy that does not solve a task may get (default 0). */
  threshold?: number;
  /** Gold values shorter than this (after normalisation) are not looked for in leak scans (default 3). */
  leakMinLength?: number;
  /** Only these top-level keys of `groundTruth` hold the answer (default: every leaf but scoring keys). */
  goldKeys?: string[];
  /** Tasks audited at most (default 8): the first ones of the dataset, plus one of each reward kind it finds. */
  maxTasks?: number;
  /** Code tools that can try to open the gold files from inside the sandbox. */
  fileProbes?: FileProbe[];
  /** Findings accepted on purpose, each with its reason. */
  allow?: Allowance[];
  /**
   * Keys of a task's `meta` left out of the task-listing leak scan: material the model reads by design (a reading
   * context that holds the answer, as HotpotQA's does). Say why in `$comment`.
   */
  leakIgnoreMeta?: string[];
}

const KEYS = new Set([
  "threshold",
  "leakMinLength",
  "goldKeys",
  "maxTasks",
  "fileProbes",
  "allow",
  "leakIgnoreMeta",
  "$comment",
]);

/** Check a parsed audit config, naming the bad field. */
export function parseAuditConfig(raw: unknown, where = "audit.json"): AuditConfig {
  if (raw === null || typeof raw !== "object" || Array.isArray(raw))
    throw new UsageError(`${where}: must be a JSON object`);
  const o = raw as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    if (!KEYS.has(k)) throw new UsageError(`${where}: unknown field "${k}" (${[...KEYS].join(", ")})`);
  }
  const num = (k: string, min: number, max: number) => {
    const v = o[k];
    if (v === undefined) return undefined;
    if (typeof v !== "number" || !Number.isFinite(v) || v < min || v > max) {
      throw new UsageError(`${where}: ${k} must be a number from ${min} to ${max}, got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const cfg: AuditConfig = {
    threshold: num("threshold", 0, 1),
    leakMinLength: num("leakMinLength", 1, 1000),
    maxTasks: num("maxTasks", 1, 100000),
  };
  for (const k of ["goldKeys", "leakIgnoreMeta"] as const) {
    if (o[k] === undefined) continue;
    if (!Array.isArray(o[k]) || !(o[k] as unknown[]).every((x) => typeof x === "string")) {
      throw new UsageError(`${where}: ${k} must be a list of strings`);
    }
    cfg[k] = o[k] as string[];
  }
  if (o.fileProbes !== undefined) {
    if (!Array.isArray(o.fileProbes)) throw new UsageError(`${where}: fileProbes must be a list`);
    cfg.fileProbes = o.fileProbes.map((p, i) => {
      const q = p as Record<string, unknown>;
      for (const k of ["tool", "argument", "template"]) {
        if (typeof q?.[k] !== "string") throw new UsageError(`${where}: fileProbes[${i}].${k} must be a string`);
      }
      if (!(q.template as string).includes("{path}")) {
        throw new UsageError(`${where}: fileProbes[${i}].template must contain {path}`);
      }
      if (q.success !== undefined && typeof q.success !== "string") {
        throw new UsageError(`${where}: fileProbes[${i}].success must be a regular expression string`);
      }
      return {
        tool: q.tool as string,
        argument: q.argument as string,
        template: q.template as string,
        ...(typeof q.success === "string" ? { success: q.success } : {}),
      };
    });
  }
  if (o.allow !== undefined) {
    if (!Array.isArray(o.allow)) throw new UsageError(`${where}: allow must be a list`);
    cfg.allow = o.allow.map((a, i) => {
      const q = a as Record<string, unknown>;
      if (typeof q?.check !== "string") throw new UsageError(`${where}: allow[${i}].check must be a string`);
      if (typeof q.reason !== "string" || !q.reason.trim()) {
        throw new UsageError(`${where}: allow[${i}].reason must say why the finding is accepted`);
      }
      if (q.below !== undefined && (typeof q.below !== "number" || !(q.below > 0 && q.below <= 1))) {
        throw new UsageError(`${where}: allow[${i}].below must be a number in (0, 1]`);
      }
      return {
        check: q.check,
        reason: q.reason,
        ...(typeof q.below === "number" ? { below: q.below } : {}),
        ...(typeof q.attack === "string" ? { attack: q.attack } : {}),
        ...(typeof q.label === "string" ? { label: q.label } : {}),
      };
    });
  }
  return cfg;
}

/** The audit config of an env package folder (`audit.json`); the defaults when it has none. */
export function loadAuditConfig(packageDir: string | undefined): AuditConfig {
  if (!packageDir) return {};
  const file = join(packageDir, "audit.json");
  if (!existsSync(file)) return {};
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, "utf8"));
  } catch (e) {
    throw new UsageError(`${file}: not valid JSON (${(e as Error).message})`);
  }
  return parseAuditConfig(raw, file);
}
