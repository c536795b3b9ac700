import { existsSync, statSync } from "node:fs";
import { isAbsolute } from "node:path";

/** Keys of a gold record that name how to score, not what the answer is (never scanned as gold). */
const SCORING_KEYS = new Set([
  "kind",
  "reward_metric",
  "metric",
  "task",
  "type",
  "level",
  "split",
  "persona",
  "metadata",
  "answer_position",
  "instruction_type",
]);

/**
 * The gold values of a task, as strings: every string and number leaf of its `groundTruth` (keys that only say how
 * to score, such as `kind` or `reward_metric`, left out), deduplicated, in order. `keys`, when given, keeps only the
 * leaves under those top-level keys.
 */
export function goldStrings(groundTruth: unknown, keys?: readonly string[]): string[] {
  const out = new Set<string>();
  const walk = (v: unknown, depth: number) => {
    if (depth > 8 || v === null || v === undefined) return;
    if (typeof v === "string") {
      const t = v.trim();
      if (t) out.add(t);
    } else if (typeof v === "number" || typeof v === "bigint") {
      if (Number.isFinite(Number(v))) out.add(String(v));
    } else if (Array.isArray(v)) {
      for (const x of v) walk(x, depth + 1);
    } else if (typeof v === "object") {
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
        if (depth === 0 && keys && !keys.includes(k)) continue;
        if (!keys && SCORING_KEYS.has(k)) continue;
        walk(x, depth + 1);
      }
    }
  };
  walk(groundTruth, 0);
  return [...out];
}

/** Gold values that are files on this machine (absolute paths that exist): what a file tool must never reach. */
export function goldFiles(groundTruth: unknown): string[] {
  return goldStrings(groundTruth).filter((s) => {
    if (!isAbsolute(s) || s.length > 4096) return false;
    try {
      return existsSync(s) && statSync(s).isFile();
    } catch {
      return false;
    }
  });
}

/**
 * The normalisation gold-leak scans use, a superset of what scorers fold: Unicode NFKC, lower case, thousands
 * separators inside numbers dropped, every run of non-alphanumerics one space.
 */
export function normalizeForScan(text: string): string {
  return ` ${text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/(\d)[,\u00a0\u2009\u202f ](?=\d{3}\b)/g, "$1")
    .replace(/[^\p{L}\p{N}.]+/gu, " ")
    .replace(/(?<!\d)\.|\.(?!\d)/g, " ")
    .replace(/\s+/g, " ")
    .trim()} `;
}

/** Numbers that state the same value: `34` also as `34.0`; non-numbers as themselves. */
function variants(gold: string): string[] {
  const n = normalizeForScan(gold).trim();
  const out = [n];
  if (/^-?\d+(\.\d+)?$/.test(n)) {
    const v = Number(n);
    if (Number.isFinite(v)) {
      out.push(String(v));
      if (Number.isInteger(v)) out.push(`${v}.0`);
    }
  }
  return [...new Set(out)].filter(Boolean);
}

/**
 * The gold values a text contains, normalised on both sides ({@link normalizeForScan}) and matched as whole tokens.
 * Golds shorter than `minLength` characters after normalisation are not looked for (too likely by chance).
 */
export function leakedGold(text: string, golds: readonly string[], minLength = 3): string[] {
  if (!text) return [];
  const hay = normalizeForScan(text);
  const found: string[] = [];
  for (const g of golds) {
    if (normalizeForScan(g).trim().length < minLength) continue;
    for (const v of variants(g)) {
      if (hay.includes(` ${v} `)) {
        found.push(g);
        break;
      }
    }
  }
  return found;
}

/**
 * Remove every occurrence of each of `parts` (what the model reads by design: its own prompt) from `text`, as written
 * and as a JSON string body, so a scan reads only what was added.
 */
export function without(text: string, parts: string | readonly string[] | undefined): string {
  const list = parts === undefined ? [] : typeof parts === "string" ? [parts] : parts;
  let out = text;
  for (const part of list) {
    if (part.trim() === "") continue;
    out = out.split(part).join(" ");
    const json = JSON.stringify(part).slice(1, -1);
    if (json !== part) out = out.split(json).join(" ");
  }
  return out;
}
