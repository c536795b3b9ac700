import { CLIENT_SCRIPT } from "./client-script.js";
import { escapeHtml, inlineScript, scriptJson } from "./html-escape.js";
import type { ReportData } from "./report-data.js";

export { escapeHtml, scriptJson } from "./html-escape.js";

const num = (x: number | null | undefined, digits = 3): string =>
  typeof x === "number" && Number.isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(digits)) : "—";
const pct = (x: number | null | undefined): string =>
  typeof x === "number" && Number.isFinite(x) ? `${(x * 100).toFixed(1)}%` : "—";

function card(label: string, value: string): string {
  return `<div class="card"><div class="label">${escapeHtml(label)}</div><div class="value">${escapeHtml(value)}</div></div>`;
}

function table(head: string[], rows: string[][], cls = ""): string {
  const th = head.map((h) => `<th>${escapeHtml(h)}</th>`).join("");
  const tr = rows.map((r) => `<tr>${r.map((c) => `<td>${escapeHtml(c)}</td>`).join("")}</tr>`).join("\n");
  return `<table class="${cls}"><thead><tr>${th}</tr></thead><tbody>\n${tr}\n</tbody></table>`;
}

const STYLE = `
:root { color-scheme: light; --fg:#1d2433; --muted:#5b6475; --line:#e3e6ec; --bg:#f7f8fa; --accent:#3b6fd8; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); margin: 0; }
header { background: #fff; border-bottom: 1px solid var(--line); padding: 18px 28px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
.meta, .muted { color: var(--muted); font-size: 12px; }
main { padding: 20px 28px 40px; max-width: 1440px; }
h2 { font-size: 16px; margin: 28px 0 10px; }
h4 { margin: 14px 0 6px; font-size: 13px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; }
.card .label { color: var(--muted); font-size: 12px; }
.card .value { font-size: 20px; font-weight: 600; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 16px; }
.panel { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
.panel h3 { margin: 0 0 8px; font-size: 14px; }
.chart { position: relative; height: 280px; }
.chart.tall { height: 420px; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 5px 8px; text-align: left; vertical-align: top; }
th { background: #f0f2f6; font-weight: 600; }
.scroll th { position: sticky; top: 0; z-index: 1; }
th.sortable { cursor: pointer; user-select: none; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.err, .err { color: #a11; }
td.err { max-width: 280px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
td.worse, .regress { color: #b3261e; font-weight: 600; }
tr.clickable { cursor: pointer; }
tr.clickable:hover { background: #f3f6fd; }
tr.selected { background: #e3ebfb !important; }
.scroll { max-height: 640px; overflow: auto; border: 1px solid var(--line); border-radius: 8px; }
.pager { display: flex; gap: 10px; align-items: center; margin: 6px 0; font-size: 12px; }
.badge { color: #fff; border-radius: 10px; padding: 1px 8px; font-size: 12px; white-space: nowrap; }
.gate { border-radius: 8px; padding: 10px 14px; margin: 8px 0 12px; font-weight: 600; }
.gate.fail { background: #fdecea; color: #8a1c14; border: 1px solid #f3b8b2; }
.gate.pass { background: #e8f5ee; color: #1d6b3f; border: 1px solid #b5dfc6; }
.filters { display: flex; flex-wrap: wrap; gap: 12px; align-items: end; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px; margin-bottom: 10px; }
.filters label { display: flex; flex-direction: column; font-size: 12px; color: var(--muted); gap: 2px; }
.filters input, .filters select { font: inherit; padding: 3px 6px; border: 1px solid #c9ced8; border-radius: 5px; }
.filters input[type=number] { width: 90px; }
.master { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; align-items: start; }
#viewer { position: sticky; top: 8px; max-height: calc(100vh - 16px); overflow: auto; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 14px; }
#viewer h3 { margin: 0 0 6px; font-size: 15px; word-break: break-all; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; font-size: 13px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
table.components { width: auto; min-width: 240px; }
.errorbox { background: #fdecea; color: #8a1c14; border: 1px solid #f3b8b2; border-radius: 6px; padding: 8px 10px; margin: 8px 0; white-space: pre-wrap; word-break: break-word; }
.msg { border: 1px solid var(--line); border-left-width: 4px; border-radius: 6px; margin: 8px 0; padding: 6px 10px; }
.msg.role-system { border-left-color: #8c94a3; background: #f6f7f9; }
.msg.role-user { border-left-color: #3b6fd8; }
.msg.role-assistant { border-left-color: #2e9d5b; }
.msg.role-tool { border-left-color: #e0a526; background: #fffbf0; }
.mhead { display: flex; gap: 10px; align-items: baseline; font-size: 12px; }
.mhead .role { font-weight: 600; text-transform: none; }
.mhead .idx { margin-left: auto; }
pre { white-space: pre-wrap; word-break: break-word; margin: 4px 0; font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.msg.role-system pre.content { max-height: 220px; overflow: auto; }
.explain code { background: #f3f4f7; padding: 1px 4px; border-radius: 3px; }
.explain ul.diff { margin: 4px 0 8px; padding-left: 18px; font-size: 12px; }
.toolcall { border: 1px dashed #9fc7ae; border-radius: 5px; padding: 4px 8px; margin: 6px 0; background: #f3faf5; }
`;

/** The comparison with a baseline, flagged by the same gate `benchmax compare` runs. */
/** Results lines the report skipped unread (over its per-line limit): named, so nothing is dropped in silence. */
function tooLargeNotice(data: ReportData): string {
  const t = data.tooLarge;
  if (!t?.length) return "";
  const items = t
    .slice(0, 20)
    .map((x) => `<li><code>${escapeHtml(`${x.file}:${x.line}`)}</code>: ${x.bytes.toLocaleString("en-US")} bytes</li>`)
    .join("");
  const more = t.length > 20 ? `<li>… ${t.length - 20} more</li>` : "";
  return `<div id="too-large" class="gate fail">${t.length} results line${t.length === 1 ? " was" : "s were"} too large to read and left out of the rows and the rollout viewer (the summary still counts them when summary.json does):<ul>${items}${more}</ul></div>`;
}

function baselineSection(data: ReportData): string {
  const b = data.baseline;
  if (!b) return "";
  const { check } = b;
  const failed = check.rows.filter((r) => r.regression).map((r) => r.metric);
  const tolerances = `max drop ${check.maxDrop}, error-rate tolerance +${check.maxErrorRateIncrease}`;
  const blocking = check.mismatches.filter((m) => !m.allowed);
  let verdict: string;
  if (check.regression) {
    verdict = `Regression against the baseline: ${escapeHtml(failed.join(", "))} (${tolerances}). <code>benchmax compare</code> fails on the same rows.`;
  } else if (!check.comparable) {
    verdict = `No metric regressed (${tolerances}), but <code>benchmax compare</code> fails: these runs are not comparable.`;
  } else {
    verdict = `No regression against the baseline (${tolerances}): <code>benchmax compare</code> passes.`;
  }
  const gate = `<div id="gate" class="gate ${check.failed ? "fail" : "pass"}" data-failed="${check.failed}" data-regression="${check.regression}">${verdict}</div>`;
  const mismatches = check.mismatches.length
    ? `<div id="mismatches" class="gate ${blocking.length ? "fail" : "pass"}">${blocking.length ? "Not comparable as they are (compare refuses them unless told to allow it):" : "Differences the comparison was told to allow:"}<ul>${check.mismatches.map((m) => `<li data-kind="${escapeHtml(m.kind)}">${escapeHtml(m.message)}${m.allowed ? " (allowed)" : ""}</li>`).join("")}</ul></div>`
    : "";
  const rows = check.rows.map((r) => {
    const d = r.delta === null ? "—" : `${r.delta >= 0 ? "+" : ""}${num(r.delta)}`;
    const status = r.regression ? "REGRESSION" : (r.note ?? "ok");
    return `<tr data-metric="${escapeHtml(r.metric)}"${r.regression ? ' data-regression="true"' : ""}><td>${escapeHtml(r.metric)}</td><td class="num">${num(r.base)}</td><td class="num">${num(r.cand)}</td><td class="num${r.regression ? " regress" : ""}">${escapeHtml(d)}</td><td class="${r.regression ? "regress" : ""}">${escapeHtml(status)}</td></tr>`;
  });
  return `
<h2 id="baseline">Comparison with baseline</h2>
<p class="meta">Baseline: <code>${escapeHtml(b.dir)}</code> (${escapeHtml(b.summary.env)} / ${escapeHtml(b.summary.policy)}, ${b.summary.n} rollouts)</p>
${gate}${mismatches}
<div class="grid">
  <div class="panel"><h3>Baseline vs this run</h3><div class="chart"><canvas id="chart-compare"></canvas></div></div>
  <div class="panel"><table id="compare-table"><thead><tr><th>metric</th><th class="num">baseline</th><th class="num">this run</th><th class="num">delta</th><th>status</th></tr></thead><tbody>${rows.join("\n")}</tbody></table></div>
</div>`;
}

/** pass@k / max@k, group spread, tokens and response length, and the breakdown by task metadata. */
function rlSection(data: ReportData): string {
  const parts: string[] = [];
  const rl = data.rl;
  if (rl) {
    const ks = Object.keys(rl.passAtK);
    const cards = [
      ...ks.map((k) => card(`pass@${k}`, pct(rl.passAtK[k]))),
      ...ks.map((k) => card(`max@${k}`, num(rl.maxAtK[k]))),
      card("groups (≥ 2 scored)", String(rl.groups)),
      card("group reward std (mean)", num(rl.groupRewardStd)),
      card("zero-variance groups", pct(rl.zeroVarianceShare)),
    ].join("");
    parts.push(`<div class="cards" id="rl-cards">${cards}</div>
<div class="grid"><div class="panel"><h3>pass@k and max@k (unbiased, per task, averaged)</h3><div class="chart"><canvas id="chart-passk"></canvas></div></div></div>`);
  }
  const statRow = (name: string, st: { mean: number; p50: number; p95: number; max: number } | null | undefined) =>
    st ? [name, num(st.mean, 1), num(st.p50, 0), num(st.p95, 0), num(st.max, 0)] : undefined;
  const rows = [
    statRow("prompt tokens", data.tokens?.prompt),
    statRow("completion tokens", data.tokens?.completion),
    statRow("total tokens", data.tokens?.total),
    statRow("response characters", data.responseChars),
  ].filter((r): r is string[] => r !== undefined);
  if (rows.length)
    parts.push(
      `<h4>Tokens and response length per rollout</h4>${table(["", "mean", "p50", "p95", "max"], rows, "lengths")}`,
    );
  if (data.tokenDrift) {
    const d = data.tokenDrift;
    parts.push(
      `<div class="cards" id="token-drift" data-flagged="${d.flagged}">${card("turns with token-id drift", `${d.flagged} of ${d.turns}`)}</div>`,
    );
  }
  for (const [field, values] of Object.entries(data.breakdown ?? {})) {
    const body = Object.entries(values).map(
      ([v, x]) =>
        `<tr data-value="${escapeHtml(v)}"><td>${escapeHtml(v)}</td><td class="num">${x.n}</td><td class="num">${x.scored}</td><td class="num">${pct(x.passRate)}</td><td class="num">${num(x.meanReward)}</td></tr>`,
    );
    parts.push(
      `<h4>By ${escapeHtml(field)}</h4><table class="breakdown" data-field="${escapeHtml(field)}"><thead><tr><th>${escapeHtml(field)}</th><th class="num">rollouts</th><th class="num">scored</th><th class="num">pass rate</th><th class="num">mean reward</th></tr></thead><tbody>${body.join("")}</tbody></table>`,
    );
  }
  if (!parts.length) return "";
  return `<h2 id="rl">RL numbers</h2>
${parts.join("\n")}`;
}

/** Curves across runs: every metric per run, as a chart and a table. */
function seriesSection(data: ReportData): string {
  const s = data.series;
  if (!s) return "";
  const head = ["metric", ...s.runs.map((r) => r.label)];
  const rows = Object.entries(s.metrics).map(
    ([k, vs]) =>
      `<tr data-metric="${escapeHtml(k)}"><td>${escapeHtml(k)}</td>${vs.map((v) => `<td class="num">${num(v)}</td>`).join("")}</tr>`,
  );
  return `
<h2 id="runs">Across ${s.runs.length} runs</h2>
<p class="meta">${s.runs.map((r) => `<code>${escapeHtml(r.dir)}</code> (${r.n} rollouts)`).join(" → ")}</p>
<div class="grid">
  <div class="panel"><h3>Reward, pass rate and components per run</h3><div class="chart tall"><canvas id="chart-runs"></canvas></div></div>
  <div class="panel"><table id="runs-table"><thead><tr>${head.map((h) => `<th>${escapeHtml(h)}</th>`).join("")}</tr></thead><tbody>${rows.join("\n")}</tbody></table></div>
</div>`;
}

/** The transcripts inlined in the page (small runs), one JSON script element per chunk. */
export function inlineTranscripts(chunks: string[]): string {
  return chunks
    .map((json, i) => `<script id="report-transcripts-${i}" type="application/json">${json}</script>`)
    .join("\n");
}

/**
 * Render the whole report as one HTML document with the chart library and the data inlined. `transcriptsHtml` is
 * what `inlineTranscripts` returns when the transcripts are inlined (empty when they are sidecar files or absent).
 */
export function renderHtml(data: ReportData, chartJs: string, transcriptsHtml = ""): string {
  const s = data.summary;
  const outcomes = s.outcomes ?? {};
  const errors = (outcomes.env_error ?? 0) + (outcomes.infra_error ?? 0);
  const cards = [
    card("rollouts", String(s.n)),
    card("tasks", String(data.tasks.length)),
    card("mean reward", num(s.reward?.mean)),
    card("reward std", num(s.reward?.std)),
    card(`pass rate (≥ ${s.passThreshold ?? 1})`, pct(s.passRate)),
    card("errors", String(errors)),
    card("turns (mean)", num(s.turns?.mean, 2)),
    card("tool calls (mean)", num(s.toolCalls?.mean, 2)),
    card("rollout p50 (ms)", num(s.rolloutMs?.p50, 0)),
    card("run time (s)", num((s.durationMs ?? 0) / 1000, 1)),
  ].join("");
  const components = Object.entries(s.components ?? {});
  const componentTable = components.length
    ? table(
        ["component", "mean", ...(data.baseline ? ["baseline"] : [])],
        components.map(([k, v]) => [k, num(v), ...(data.baseline ? [num(data.baseline.summary.components?.[k])] : [])]),
      )
    : "<p>No reward components.</p>";
  const versions = Object.entries(s.versions ?? {})
    .map(([k, v]) => `${k}@${v}`)
    .join(", ");
  const worstTitle = data.baseline
    ? `${data.worstTasks.length} tasks that lost the most pass rate against the baseline`
    : data.worstTasks.length < data.tasks.length
      ? `${data.worstTasks.length} tasks with the lowest pass rate`
      : "Pass rate per task";
  const transcriptNote =
    data.transcripts.mode === "sidecar"
      ? `Transcripts load on demand from <code>${escapeHtml(data.transcripts.dir ?? "")}/</code> (${data.transcripts.chunks} files); keep that folder next to this page.`
      : data.transcripts.mode === "inline"
        ? "Transcripts are inlined in this page."
        : "This report holds no transcripts.";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(data.title)}</title>
<style>${STYLE}</style>
</head>
<body>
<header>
  <h1>${escapeHtml(data.title)}</h1>
  <div class="meta">run <code>${escapeHtml(data.dir)}</code> · started ${escapeHtml(s.startedAt ?? "?")} · report generated ${escapeHtml(data.generatedAt)}${versions ? ` · ${escapeHtml(versions)}` : ""}</div>
</header>
<main>
${tooLargeNotice(data)}
<h2 id="summary">Summary</h2>
<div class="cards">${cards}</div>
${rlSection(data)}
${seriesSection(data)}
${baselineSection(data)}
<h2 id="charts">Rewards and outcomes</h2>
<div class="grid">
  <div class="panel"><h3>Reward distribution (scored rollouts)</h3><div class="chart"><canvas id="chart-reward"></canvas></div></div>
  <div class="panel"><h3>Outcomes</h3><div class="chart"><canvas id="chart-outcomes"></canvas></div></div>
  <div class="panel"><h3>Rollouts by number of turns and tool calls</h3><div class="chart"><canvas id="chart-turns"></canvas></div></div>
  <div class="panel"><h3>Tasks by pass rate</h3><div class="chart"><canvas id="chart-task-pass"></canvas></div></div>
  <div class="panel"><h3>${escapeHtml(worstTitle)}</h3><div class="chart tall"><canvas id="chart-tasks"></canvas></div></div>
  ${data.tools.length ? `<div class="panel"><h3>Most called tools</h3><div class="chart"><canvas id="chart-tools"></canvas></div></div>` : ""}
</div>
<h2 id="components">Reward components</h2>
${componentTable}
<h2 id="tasks">Tasks</h2>
<p class="meta">Click a task to see its rollouts; click a column to sort.</p>
<div id="task-table"></div>
<h2 id="rollouts">Rollouts</h2>
<p class="meta">Click a rollout to read its conversation. ${transcriptNote}</p>
<div class="filters">
  <label>task (id or part of one)<input id="filter-task" type="search" placeholder="any task"></label>
  <label>outcome<select id="filter-outcome"><option value="">any</option></select></label>
  <label>reward ≥<input id="filter-reward-min" type="number" step="any"></label>
  <label>reward ≤<input id="filter-reward-max" type="number" step="any"></label>
  <button id="filter-clear" type="button">clear</button>
  <span id="filter-count" class="muted"></span>
</div>
<div class="master">
  <div id="rollout-table"></div>
  <aside id="viewer" data-state="empty"><p class="muted">Select a rollout to see its system prompt, replies, tool calls with their arguments, tool results, reward components, outcome and error.</p></aside>
</div>
</main>
<script id="report-data" type="application/json">${scriptJson(data)}</script>
${transcriptsHtml}
<script>${inlineScript(chartJs)}</script>
<script>${inlineScript(CLIENT_SCRIPT)}</script>
</body>
</html>
`;
}
