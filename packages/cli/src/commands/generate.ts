import { UsageError } from "@benchmax/core";
import { generateFromTraces, generateQa, type QaProgress } from "@benchmax/datagen";
import cliProgress from "cli-progress";
import type { Command } from "commander";

/** Keep a flag's text as given (checked where it is used), so that numeric defaults can print as numbers. */
const raw = (v: string): string | number => v;

function int(name: string, v: string | number | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new UsageError(`${name} must be a whole number >= 0, got "${v}"`);
  return n;
}

function fraction(name: string, v: string | number | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new UsageError(`${name} must be a number in [0, 1], got "${v}"`);
  return n;
}

/** A bar on a TTY, a line every ~10% otherwise. */
function qaProgress(quiet: boolean | undefined): { update(p: QaProgress): void; stop(): void } {
  if (quiet) return { update() {}, stop() {} };
  if (process.stderr.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: "generate qa [{bar}] {value}/{total} rows | units {units} | {eta_formatted}",
        stream: process.stderr,
        hideCursor: true,
      },
      cliProgress.Presets.shades_classic,
    );
    let started = false;
    return {
      update(p) {
        const units = `${p.unitsDone}/${p.units}`;
        if (!started) {
          bar.start(p.target, p.rows, { units });
          started = true;
        } else bar.update(p.rows, { units });
      },
      stop: () => bar.stop(),
    };
  }
  let last = -1;
  return {
    update(p) {
      const step = Math.floor((p.rows / p.target) * 10);
      if (step !== last) {
        last = step;
        process.stderr.write(`generate qa: ${p.rows}/${p.target} rows (${p.unitsDone}/${p.units} units)\n`);
      }
    },
    stop() {},
  };
}

export function register(program: Command): void {
  const gen = program
    .command("generate")
    .description("make training data: synthetic QA from a corpus, or rows from traces");

  gen
    .command("traces")
    .description("production agent traces (chat messages, {input, output}, {prompt, completion}) → training rows")
    .requiredOption("--in <file>", "traces JSONL")
    .requiredOption("--out <file>", "training rows JSONL (the train split)")
    .option("--eval-fraction <x>", "share of rows held out for eval by a stable hash (0..1)", raw, 0)
    .option("--eval-out <file>", "where the eval split goes (default OUT with .eval.jsonl)")
    .option("--seed <s>", "salt of the split hash (default: none)")
    .option("--success-only", "keep only traces flagged successful")
    .option("--min-turns <n>", "keep traces with at least n assistant turns")
    .option("--max-turns <n>", "keep traces with at most n assistant turns")
    .option("--keep-system", "keep the traces' own system messages")
    .option("--no-scrub", "do not replace emails, phone numbers, API keys and card numbers")
    .option("--max-errors <n>", "bad lines to list", raw, 20)
    .option("--json", "print the stats as JSON")
    .action(async (flags: Record<string, string | boolean | undefined>) => {
      const res = await generateFromTraces({
        in: flags.in as string,
        out: flags.out as string,
        evalOut: flags.evalOut as string | undefined,
        evalFraction: fraction("--eval-fraction", flags.evalFraction as string | number),
        seed: flags.seed as string,
        requireSuccess: flags.successOnly === true,
        minTurns: int("--min-turns", flags.minTurns as string | undefined),
        maxTurns: int("--max-turns", flags.maxTurns as string | undefined),
        keepSystem: flags.keepSystem === true,
        scrubPii: flags.scrub !== false,
      });
      const s = res.stats;
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ ...s, errors: res.errors }, null, 2)}\n`);
      } else {
        const f = s.filtered;
        process.stdout.write(
          `${flags.in}: ${s.lines} traces → ${s.train} train rows in ${flags.out}` +
            (res.evalOut ? `, ${s.eval} eval rows in ${res.evalOut}` : "") +
            `\n  filtered: ${f.success} not successful, ${f.turns} outside the turn range, ${f.no_answer} without a final answer, ${f.duplicate} duplicates` +
            `\n  scrubbed: ${s.pii.email} emails, ${s.pii.phone} phone numbers, ${s.pii.api_key} API keys, ${s.pii.card} card numbers\n`,
        );
        const max = int("--max-errors", flags.maxErrors as string | number) ?? 20;
        if (res.errors.length) {
          process.stderr.write(`${res.errors.length} bad line${res.errors.length === 1 ? "" : "s"}:\n`);
          for (const e of res.errors.slice(0, max)) {
            process.stderr.write(`  ${flags.in}:${e.line}: ${e.field ? `${e.field}: ` : ""}${e.message}\n`);
          }
          if (res.errors.length > max) process.stderr.write(`  … and ${res.errors.length - max} more\n`);
        }
      }
      if (res.errors.length) process.exitCode = 1;
    });

  gen
    .command("qa")
    .description("synthetic question/answer rows from a document corpus, each grounded in a quoted span")
    .requiredOption("--corpus <path>", "JSONL of {title, text} or a folder of .txt/.md/.html files")
    .requiredOption("--n <n>", "rows wanted")
    .requiredOption("--out <file>", "rows JSONL ({id, question, golden_answers, metadata}); re-runs resume it")
    .option("--model <m>", "model name", process.env.BENCHMAX_MODEL)
    .option("--base-url <url>", "OpenAI-compatible endpoint (default OPENAI_BASE_URL or api.openai.com)")
    .option("--api-key <key>", "API key (default OPENAI_API_KEY)")
    .option("--multi-hop", "two-hop questions over linked chunks of different documents")
    .option("--per-chunk <k>", "pairs asked per chunk", raw, 2)
    .option("--concurrency <c>", "requests in flight", raw, 4)
    .option("--chunk-chars <n>", "chunk size in characters", raw, 1200)
    .option("--seed <s>", "salt of the chunk order (default: none)")
    .option("--temperature <t>", "sampling temperature")
    .option("--fresh", "start over instead of resuming OUT")
    .option("--quiet", "no progress output")
    .option("--json", "print the stats as JSON")
    .action(async (flags: Record<string, string | boolean | undefined>) => {
      const n = int("--n", flags.n as string | number);
      if (!n) throw new UsageError(`--n must be a positive integer, got "${flags.n}"`);
      if (!flags.model) throw new UsageError("--model is required (or set BENCHMAX_MODEL)");
      const progress = qaProgress(flags.quiet === true || flags.json === true);
      let stats: Awaited<ReturnType<typeof generateQa>>;
      try {
        stats = await generateQa({
          corpus: flags.corpus as string,
          out: flags.out as string,
          n,
          model: flags.model as string,
          baseURL: flags.baseUrl as string | undefined,
          apiKey: flags.apiKey as string | undefined,
          multiHop: flags.multiHop === true,
          perChunk: int("--per-chunk", flags.perChunk as string | number) || 2,
          concurrency: int("--concurrency", flags.concurrency as string | number) || 4,
          chunking: { maxChars: int("--chunk-chars", flags.chunkChars as string | number) || 1200 },
          seed: flags.seed as string,
          temperature: flags.temperature !== undefined ? Number(flags.temperature) : undefined,
          fresh: flags.fresh === true,
          onProgress: (p) => progress.update(p),
        });
      } finally {
        progress.stop();
      }
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(stats, null, 2)}\n`);
        return;
      }
      const d = stats.dropped;
      const rows = stats.existing + stats.accepted;
      process.stdout.write(
        `${flags.out}: ${rows} rows (${stats.accepted} new, ${stats.existing} resumed) from ${stats.chunks} chunks, ${stats.requests} requests\n` +
          `  dropped: ${d.ungrounded} ungrounded (quote not in the chunk), ${d.answer_not_in_evidence} answer not in the quote, ` +
          `${d.answer_in_question} answer in the question, ${d.duplicate} duplicates, ${d.malformed} malformed replies\n`,
      );
      if (stats.exhausted) {
        process.stderr.write(`warning: the corpus ran out after ${rows} of ${n} rows (every chunk was used)\n`);
      }
    });
}
