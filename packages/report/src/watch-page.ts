import type { LiveSnapshot } from "@benchmax/core";
import { escapeHtml, inlineScript, scriptJson } from "./html-escape.js";
import { staticLineChart } from "./static-curve.js";

/** Line colours, in dataset order (the static curve and chart.js use the same). */
const HUES = ["#3b6fd8", "#2e9d5b", "#c2410c", "#7c3aed", "#e0a526", "#0e7490", "#be185d", "#4d7c0f"];

/**
 * The live dashboard's script (plain ES2017): draws the series with chart.js from the inlined first snapshot, then
 * replaces them with each snapshot the server pushes over SSE (`/events`). The latest rollouts open in a viewer
 * (conversation, reward components, the env's extracted answer beside the gold). Hooks for tests:
 * `body[data-ready]` (`window.benchmaxReadyMs`: when), `body[data-total]` (rollouts in the table),
 * `body[data-charted]` (rollouts in the reward curve last drawn; `window.benchmaxChartedMs` and the performance mark
 * "benchmax:charted": when, from navigation start — for the first snapshot that is the server-drawn SVG curve, in the
 * first frame; "benchmax:chart-library" when chart.js ran, `window.benchmaxChartJsMs` when it first drew the reward
 * curve), `window.benchmaxCharts`.
 */
const WATCH_SCRIPT = String.raw`
(function () {
  "use strict";
  var token = document.body.getAttribute("data-token");
  var snap = JSON.parse(document.getElementById("watch-data").textContent);
  var charts = {};
  var chartsReady = false;
  var chartedTotal = -1;
  window.benchmaxCharts = charts;
  var hues = ${JSON.stringify(HUES)};
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined && text !== null) e.textContent = String(text); return e; }
  function num(x) { return typeof x === "number" && isFinite(x) ? (Number.isInteger(x) ? String(x) : x.toFixed(3)) : "—"; }
  function line(id, sets, yMax) {
    var labels = snap.x.map(String);
    var datasets = sets.map(function (s, i) { var c = hues[(s[2] === undefined ? i : s[2]) % hues.length]; return { label: s[0], data: s[1], borderColor: c, backgroundColor: c, borderDash: s[3] ? [6, 4] : [], spanGaps: true, pointRadius: snap.x.length > 60 ? 0 : 2 }; });
    if (charts[id]) { charts[id].data.labels = labels; charts[id].data.datasets = datasets; charts[id].update("none"); return; }
    var opts = { scales: { x: { title: { display: true, text: snap.axis === "step" ? "trainer step" : "rollout" } }, y: { beginAtZero: true } } };
    if (yMax) opts.scales.y.suggestedMax = yMax;
    charts[id] = new Chart(document.getElementById(id).getContext("2d"), { type: "line", data: { labels: labels, datasets: datasets }, options: opts });
  }
  function draw() {
    drawTable();
    if (chartsReady) drawCharts(false);
  }
  // the reward curve first (the page's first paint: "benchmax:charted"), the other charts in the next task on the
  // first draw so the curve is on screen before they are built; every later draw is whole
  function drawCharts(first) {
    var rewardSets = [["mean reward", snap.reward], ["pass rate", snap.passRate]];
    Object.keys(snap.components).forEach(function (k) { rewardSets.push([k, snap.components[k]]); });
    line("chart-reward", rewardSets, 1);
    var pre = document.getElementById("static-reward");
    if (pre) {
      pre.parentNode.removeChild(pre);
      window.benchmaxChartJsMs = performance.now();
    }
    if (snap.total !== chartedTotal) {
      // when the curve first held this many rollouts (a redraw of the same total keeps the time)
      chartedTotal = snap.total;
      window.benchmaxChartedMs = performance.now();
      if (performance.mark) performance.mark("benchmax:charted");
      document.body.setAttribute("data-charted", String(snap.total));
    }
    if (!first) return drawRest();
    setTimeout(function () {
      drawRest();
      window.benchmaxReadyMs = performance.now();
      if (performance.mark) performance.mark("benchmax:ready");
      document.body.setAttribute("data-ready", "1");
    }, 0);
  }
  function drawRest() {
    line("chart-outcomes", [["error rate", snap.errorRate], ["truncated rate", snap.truncatedRate]], 1);
    line("chart-zero-variance", [["zero-variance group share", snap.zeroVarianceShare]], 1);
    line("chart-length", [["response characters (mean)", snap.responseChars]]);
    line("chart-tools", [["tool calls per rollout", snap.toolCalls]]);
    var latSets = [];
    Object.keys(snap.toolLatency || {}).forEach(function (t, i) {
      latSets.push([t + " p50", snap.toolLatency[t].p50, i, false]);
      latSets.push([t + " p95", snap.toolLatency[t].p95, i, true]);
    });
    line("chart-tool-latency", latSets);
  }
  // the reward curve of the inlined snapshot is in the HTML (static SVG): painted with the first frame
  // the server-drawn curve's rollouts (window.benchmaxStaticTotal), and when it reached the screen (Element Timing
  // of its note): window.benchmaxStaticPaintMs
  window.benchmaxStaticTotal = document.getElementById("static-reward") ? snap.total : -1;
  try {
    new PerformanceObserver(function (list) {
      list.getEntries().forEach(function (e) {
        if (e.identifier === "benchmax-static-reward") window.benchmaxStaticPaintMs = e.renderTime || e.loadTime;
      });
    }).observe({ type: "element", buffered: true });
  } catch (e) { /* no Element Timing in this browser */ }
  function staticCharted() {
    if (!document.getElementById("static-reward") || chartedTotal !== -1) return;
    chartedTotal = snap.total;
    window.benchmaxChartedMs = performance.now();
    if (performance.mark) performance.mark("benchmax:charted");
    document.body.setAttribute("data-charted", String(snap.total));
  }
  function drawTable() {
    document.getElementById("total").textContent = String(snap.total);
    document.getElementById("width").textContent = snap.width > 1 ? "each point: " + snap.width + " " + (snap.axis === "step" ? "steps" : "rollouts") : "";
    var tb = document.getElementById("latest-body");
    tb.textContent = "";
    snap.latest.forEach(function (r, i) {
      var tr = el("tr", "clickable");
      tr.setAttribute("data-rollout", r.rolloutId);
      var cells = [r.step === undefined ? "—" : r.step, r.rolloutId, r.taskId, r.outcome, num(r.reward), r.turns, r.toolCalls];
      if (snap.nodes) cells.unshift(r.node);
      cells.forEach(function (c) { tr.appendChild(el("td", "", c)); });
      tr.addEventListener("click", function () { show(r); });
      tb.appendChild(tr);
    });
    drawNodes();
    document.body.setAttribute("data-total", String(snap.total));
  }
  // several sources: one row per node (a recording server or a run dir)
  function drawNodes() {
    var nb = document.getElementById("nodes-body");
    if (!nb || !snap.nodes) return;
    nb.textContent = "";
    snap.nodes.forEach(function (n) {
      var tr = el("tr", "node state-" + n.state);
      tr.setAttribute("data-node", n.name);
      tr.setAttribute("data-state", n.state);
      tr.setAttribute("data-restarts", String(n.restarts));
      tr.setAttribute("data-rollouts", String(n.rollouts));
      var o = n.outcomes || {};
      var inst = n.instance ? n.instance.slice(0, 24) : "—";
      if (n.restarts > 0) inst += " · restarted" + (n.restarts > 1 ? " ×" + n.restarts : "") + (n.previousInstance ? " (was " + n.previousInstance.slice(0, 24) + ")" : "");
      var state = n.state + (n.downSince ? " since " + n.downSince.slice(11, 19) : "");
      var opt = function (x) { return x === undefined ? "—" : x; };
      [n.name, state, inst, n.rollouts, o.completed || 0, o.truncated || 0, o.env_error || 0, o.infra_error || 0, opt(n.live), opt(n.created), opt(n.released), opt(n.unknownRollout), opt(n.drainingRefused)].forEach(function (c, i) {
        var td = el("td", i === 1 ? "state" : "", c);
        if (i === 1 && n.lastError && !n.reachable) td.title = n.lastError;
        tr.appendChild(td);
      });
      nb.appendChild(tr);
    });
  }
  function show(r) {
    var v = document.getElementById("viewer");
    v.textContent = "";
    v.setAttribute("data-rollout", r.rolloutId);
    v.appendChild(el("h3", "", r.rolloutId + " · " + r.taskId + " · " + r.outcome + " · reward " + num(r.reward)));
    if (r.error) v.appendChild(el("div", "errorbox", r.error));
    if (r.rewards) v.appendChild(el("p", "muted", Object.keys(r.rewards).map(function (k) { return k + " " + num(r.rewards[k]); }).join(" · ")));
    if (r.explain) {
      var ex = el("div", "explain");
      ex.appendChild(el("b", "", "extracted: ")); ex.appendChild(el("code", "extracted", r.explain.extracted));
      ex.appendChild(el("b", "", "  gold: ")); ex.appendChild(el("code", "gold", r.explain.gold));
      v.appendChild(ex);
    }
    r.messages.forEach(function (m) {
      var box = el("div", "msg role-" + m.role);
      box.appendChild(el("div", "muted", m.role));
      var text = typeof m.content === "string" ? m.content : m.content === null ? "" : JSON.stringify(m.content);
      (m.tool_calls || []).forEach(function (c) { text += "\n→ " + (c.function ? c.function.name + " " + c.function.arguments : JSON.stringify(c)); });
      box.appendChild(el("pre", "", text));
      v.appendChild(box);
    });
  }
  // the totals and the latest rollouts first; chart.js is loaded and the charts drawn after that first frame
  drawTable();
  function boot() {
    staticCharted();
    var lib = document.createElement("script");
    lib.onload = charted;
    lib.onerror = function () { document.getElementById("status").textContent = "could not load the chart library"; };
    lib.src = "/chart.js?token=" + encodeURIComponent(token);
    document.head.appendChild(lib);
  }
  function charted() {
    if (performance.mark) performance.mark("benchmax:chart-library");
    Chart.defaults.animation = false;
    Chart.defaults.maintainAspectRatio = false;
    drawTable();
    drawCharts(true);
    chartsReady = true;
    // "since": the server skips its first snapshot when it is the one inlined in this page
    var es = new EventSource("/events?token=" + encodeURIComponent(token) + "&since=" + encodeURIComponent(document.body.getAttribute("data-since") || ""));
    es.onmessage = function (e) { snap = JSON.parse(e.data); draw(); };
    es.onerror = function () { document.getElementById("status").textContent = "disconnected; retrying…"; };
    es.onopen = function () { document.getElementById("status").textContent = "live"; };
  }
  requestAnimationFrame(function () { setTimeout(boot, 0); });
})();
`;

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; color: #1d2433; background: #f7f8fa; margin: 0; }
header { background: #fff; border-bottom: 1px solid #e3e6ec; padding: 14px 24px; display: flex; gap: 16px; align-items: baseline; }
header h1 { margin: 0; font-size: 18px; }
.muted { color: #5b6475; font-size: 12px; }
main { padding: 16px 24px; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); gap: 14px; }
.panel { background: #fff; border: 1px solid #e3e6ec; border-radius: 8px; padding: 10px 12px; }
.panel h3 { margin: 0 0 6px; font-size: 14px; }
.chart { position: relative; height: 240px; }
.static-chart { position: absolute; inset: 0; }
.static-note { position: absolute; right: 4px; bottom: 22px; }
.master { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 14px; margin-top: 14px; }
table { border-collapse: collapse; width: 100%; background: #fff; font-size: 13px; }
th, td { border-bottom: 1px solid #e3e6ec; padding: 4px 8px; text-align: left; }
tr.clickable { cursor: pointer; } tr.clickable:hover { background: #f3f6fd; }
#viewer { background: #fff; border: 1px solid #e3e6ec; border-radius: 8px; padding: 10px 12px; max-height: 70vh; overflow: auto; }
.msg { border-left: 4px solid #8c94a3; margin: 6px 0; padding: 4px 8px; background: #fafbfc; }
.msg.role-assistant { border-left-color: #2e9d5b; } .msg.role-tool { border-left-color: #e0a526; } .msg.role-user { border-left-color: #3b6fd8; }
pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; font: 12px/1.4 ui-monospace, monospace; }
.errorbox { background: #fdecea; color: #8a1c14; padding: 6px 8px; border-radius: 6px; }
.explain code { background: #f3f4f7; padding: 1px 4px; }
.nodes { margin-bottom: 14px; overflow-x: auto; }
tr.node td.state { font-weight: 600; }
tr.state-up td.state, tr.state-dir td.state { color: #2e7d32; } tr.state-draining td.state { color: #b45309; }
tr.state-down td.state, tr.state-missing td.state, tr.state-unhealthy td.state { color: #b91c1c; }
`;

/**
 * The dashboard page, with the first snapshot inlined (`since`: the server's name for that snapshot, sent back when
 * the page subscribes to `/events` so the same snapshot is not sent twice): the first frame shows the totals, the
 * reward curve (an SVG drawn here) and the latest rollouts with no second request; chart.js (`/chart.js`, cached by the browser) is fetched meanwhile (preloaded) and run after it,
 * and the charts drawn.
 */
export function renderWatchPage(title: string, snapshot: LiveSnapshot, token: string, since = ""): string {
  // several sources (a fleet watch): a per-node panel, and each latest rollout's node
  const fleet = Array.isArray((snapshot as { nodes?: unknown }).nodes);
  const nodesPanel = fleet
    ? `<div class="panel nodes"><h3>Nodes</h3><p class="muted">Created, released, live and refused requests are each server's own counters (its current instance); migrations are counted by the clients.</p><table><thead><tr><th>node</th><th>state</th><th>instance</th><th>rollouts</th><th>completed</th><th>truncated</th><th>env_error</th><th>infra_error</th><th>live</th><th>created</th><th>released</th><th>404 unknown rollout</th><th>503 draining</th></tr></thead><tbody id="nodes-body"></tbody></table></div>\n`
    : "";
  const panel = (id: string, h: string, pre = "") =>
    `<div class="panel"><h3>${escapeHtml(h)}</h3><div class="chart">${pre}<canvas id="${id}"></canvas></div></div>`;
  // the reward curve drawn here too, so it is on screen with the first frame, before chart.js has loaded
  const rewardLines = [
    { label: "mean reward", data: snapshot.reward },
    { label: "pass rate", data: snapshot.passRate },
    ...Object.keys(snapshot.components).map((k) => ({ label: k, data: snapshot.components[k]! })),
  ].map((l, i) => ({ ...l, color: HUES[i % HUES.length]! }));
  // its note is painted with it (after it in the document): its Element Timing entry, "benchmax-static-reward", is
  // when the curve reached the screen
  const staticReward = `<div id="static-reward" class="static-chart">${staticLineChart(
    snapshot.x,
    rewardLines,
    1,
    snapshot.axis === "step" ? "trainer step" : "rollout",
  )}<div class="static-note muted" elementtiming="benchmax-static-reward">${snapshot.total} rollouts</div></div>`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<link rel="preload" as="script" href="/chart.js?token=${encodeURIComponent(token)}"><style>${STYLE}</style></head>
<body data-token="${escapeHtml(token)}" data-since="${escapeHtml(since)}">
<header><h1>${escapeHtml(title)}</h1><span class="muted"><span id="total">0</span> rollouts · <span id="width"></span></span><span id="status" class="muted">connecting…</span></header>
<main>
${nodesPanel}<div class="grid">
${panel("chart-reward", "Reward, pass rate and components", staticReward)}
${panel("chart-outcomes", "Error and truncation rates")}
${panel("chart-zero-variance", "Share of groups with zero reward variance")}
${panel("chart-length", "Response length")}
${panel("chart-tools", "Tool calls per rollout")}
${panel("chart-tool-latency", "Tool latency by tool, ms (p50 solid, p95 dashed)")}
</div>
<div class="master">
  <div class="panel"><h3>Latest rollouts</h3><table><thead><tr>${fleet ? "<th>node</th>" : ""}<th>step</th><th>rollout</th><th>task</th><th>outcome</th><th>reward</th><th>turns</th><th>tools</th></tr></thead><tbody id="latest-body"></tbody></table></div>
  <aside id="viewer"><p class="muted">Click a rollout to read it.</p></aside>
</div>
</main>
<script id="watch-data" type="application/json">${scriptJson(snapshot)}</script>
<script>${inlineScript(WATCH_SCRIPT)}</script>
</body></html>
`;
}
