import { dirname, resolve } from "node:path";
import { readRows, type ScoreCase, scoreCase } from "@benchmax/core";
import type { Command } from "commander";
import { loadEnvModule, parseKeyValues } from "../env-loader.js";

const collect = (v: string, prev: string[]) => [...prev, v];

export function register(program: Command): void {
  program
    .command("score <env> <cases>")
    .description(
      'score completions without a rollout: each line {"id", "task", "completion"} → {"id", "reward", "rewards"}',
    )
    .option("--no-recalc", "compare stored values without recalculating (excel)")
    .option("--opt <key=value>", "scorer option (repeatable)", collect, [])
    .option("--env-opt <key=value>", "env option (repeatable)", collect, [])
    .action(async (spec: string, casesPath: string, flags: { recalc: boolean; opt: string[]; envOpt: string[] }) => {
      const mod = await loadEnvModule(spec);
      const env = await mod.createEnv(parseKeyValues(flags.envOpt));
      const rows = await readRows(casesPath);
      const ctx = {
        baseDir: dirname(resolve(casesPath)),
        options: { recalc: flags.recalc, ...parseKeyValues(flags.opt) },
      };
      let failed = 0;
      try {
        for (const r of rows) {
          const c = r.row as ScoreCase;
          const id = c && typeof c === "object" && c.id !== undefined ? String(c.id) : r.where;
          try {
            if (!c || typeof c !== "object" || Array.isArray(c)) throw new Error("a case must be a JSON object");
            const res = await scoreCase(env, { ...c, id }, ctx);
            const why = failureReason(res.reward, res.metadata);
            process.stdout.write(
              `${JSON.stringify({ id: c.id ?? id, reward: res.reward, rewards: res.rewards, ...(why ? { why } : {}) })}\n`,
            );
            if (why) process.stderr.write(`benchmax score: case ${c.id ?? id} failed: ${why.text}\n`);
          } catch (e) {
            failed++;
            const msg = `${r.where}: ${(e as Error).message}`;
            process.stdout.write(`${JSON.stringify({ id: c?.id ?? id, error: msg })}\n`);
            process.stderr.write(`benchmax score: ${msg}\n`);
          }
        }
      } finally {
        await env.close();
      }
      if (failed) {
        process.stderr.write(`benchmax score: ${failed} of ${rows.length} cases could not be scored\n`);
        process.exitCode = 1;
      }
    });
}

interface Mismatch {
  sheet: string;
  cell: string;
  expected: string;
  actual: string;
}

/** Why a case did not pass, from the scorer's metadata: its message and the cells, expected against actual. */
export function failureReason(
  reward: number,
  metadata: unknown,
): { message: string; cells: Mismatch[]; text: string } | undefined {
  if (reward >= 1 || !metadata || typeof metadata !== "object") return undefined;
  const m = metadata as { message?: unknown; mismatches?: unknown };
  const message = typeof m.message === "string" ? m.message : "";
  const cells = Array.isArray(m.mismatches) ? (m.mismatches as Mismatch[]) : [];
  if (!message && !cells.length) return undefined;
  const detail = cells.map((x) => `${x.sheet}!${x.cell}: expected ${x.expected}, got ${x.actual}`).join("; ");
  return { message, cells, text: [message, detail].filter(Boolean).join(" | ") };
}
