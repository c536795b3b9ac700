import type { RunSummary } from "@benchmax/core";
import Table from "cli-table3";

export function fmt(x: number | null | undefined, digits = 3): string {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  return x.toFixed(digits);
}

export function pct(x: number | null | undefined): string {
  if (x === null || x === undefined) return "—";
  return `${(x * 100).toFixed(1)}%`;
}

/** The terminal's width, or 100 when stdout is not a terminal. */
export function terminalWidth(): number {
  const c = process.stdout.columns;
  return typeof c === "number" && c > 20 ? c : 100;
}

type Summary = RunSummary & { run?: { oracle?: boolean } };

/** The results table `benchmax eval` prints: one row per env run, fitted to `width` columns. */
export function summaryTable(summaries: Summary[], width = 100): string {
  const rows = summaries.map((s) => {
    const errors = s.outcomes.env_error + s.outcomes.infra_error;
    return {
      env: s.env,
      policy: s.run?.oracle ? `${s.policy} (ORACLE)` : s.policy,
      rollouts: String(s.n),
      "ok/trunc/err": `${s.outcomes.completed}/${s.outcomes.truncated}/${errors}`,
      reward: s.reward.mean === null ? "—" : `${fmt(s.reward.mean)} ± ${fmt(s.reward.std)}`,
      pass: pct(s.passRate),
      time: `${(s.durationMs / 1000).toFixed(1)}s`,
      components: Object.entries(s.components)
        .map(([k, v]) => `${k}=${fmt(v)}`)
        .join(" "),
    };
  });
  const all = ["env", "policy", "rollouts", "ok/trunc/err", "reward", "pass", "time", "components"] as const;
  const naturalOf = (c: (typeof all)[number]) => Math.max(c.length, ...rows.map((r) => r[c].length)) + 2;
  const fits = (cs: readonly (typeof all)[number][]) =>
    cs.reduce((a, c) => a + naturalOf(c), 0) + cs.length + 1 <= width;
  // on a narrow terminal the components leave the table for wrapped lines below it
  const cols: readonly (typeof all)[number][] = fits(all) ? all : all.filter((c) => c !== "components");
  const widths = cols.map(naturalOf);
  const budget = width - (cols.length + 1);
  let total = widths.reduce((a, b) => a + b, 0);
  // shrink the widest columns until the table fits; cells wrap
  while (total > budget) {
    const i = widths.indexOf(Math.max(...widths));
    if (widths[i]! <= 6) break;
    widths[i]!--;
    total--;
  }
  const table = new Table({
    head: [...cols],
    colWidths: widths,
    wordWrap: true,
    style: { head: [], border: [] },
  });
  for (const r of rows) table.push(cols.map((c) => r[c]));
  const out = [table.toString()];
  if (!cols.includes("components")) {
    for (const r of rows) if (r.components) out.push(wrap(`${r.env} components: ${r.components}`, width));
  }
  for (const s of summaries) for (const line of rlLines(s)) out.push(wrap(line, width));
  if (summaries.some((s) => s.run?.oracle)) {
    out.push(wrap("ORACLE: the policy reads the gold answer; its score checks the env, not a model.", width));
  }
  return out.join("\n");
}

/** The RL lines under the table: pass@k / max@k and group spread, tokens and length, breakdown by metadata. */
export function rlLines(s: RunSummary): string[] {
  const out: string[] = [];
  const parts: string[] = [];
  if (s.rl) {
    parts.push(
      Object.entries(s.rl.passAtK)
        .map(([k, v]) => `pass@${k} ${pct(v)}`)
        .join(" "),
    );
    parts.push(
      Object.entries(s.rl.maxAtK)
        .map(([k, v]) => `max@${k} ${fmt(v)}`)
        .join(" "),
    );
    if (s.rl.groups) {
      parts.push(
        `group std ${fmt(s.rl.groupRewardStd)}`,
        `zero-variance ${pct(s.rl.zeroVarianceShare)} of ${s.rl.groups} groups`,
      );
    }
  }
  const c = s.tokens?.completion;
  if (c) parts.push(`completion tokens mean ${fmt(c.mean, 0)} p50 ${fmt(c.p50, 0)} p95 ${fmt(c.p95, 0)}`);
  const r = s.responseChars;
  if (r) parts.push(`response chars mean ${fmt(r.mean, 0)} p50 ${fmt(r.p50, 0)} p95 ${fmt(r.p95, 0)}`);
  if (parts.length) out.push(`${s.env} · ${parts.join(" · ")}`);
  for (const [field, values] of Object.entries(s.breakdown ?? {})) {
    const entries = Object.entries(values);
    if (entries.length < 2) continue;
    const shown = entries.slice(0, 12).map(([v, x]) => `${v} ${pct(x.passRate)} (${x.n})`);
    if (entries.length > 12) shown.push(`… ${entries.length - 12} more`);
    out.push(`${s.env} pass by ${field}: ${shown.join(", ")}`);
  }
  return out;
}

/** Wrap text at spaces to `width` columns (continuation lines indented by two). */
export function wrap(text: string, width: number): string {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = `  ${word}`;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.join("\n");
}
