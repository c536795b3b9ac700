/**
 * The page's script (plain ES2017, no framework): draws the charts with the inlined chart.js, renders the task and
 * rollout tables a page at a time (20,000 rows never hit the DOM at once), filters rollouts by task, outcome and
 * reward, and shows a rollout's transcript on click — loaded on demand from the inlined chunks, or from the sidecar
 * chunk files with fetch when served over http(s) and with a <script> element when opened from file://.
 *
 * Hooks for tests and tools: `body[data-ready]` once charts and tables are built (`window.benchmaxReadyMs` holds when;
 * `window.benchmaxPaintedMs` when the first frame after that was painted),
 * `window.benchmaxCharts`, `#viewer[data-state=loading|ready|error][data-rollout]`, `#rollout-table tr[data-rollout]`,
 * and `#rollout=<id>` in the address opens that rollout.
 */
export const CLIENT_SCRIPT = String.raw`
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var idx = data.index;
  var charts = {};
  window.benchmaxCharts = charts;
  var palette = { completed: "#2e9d5b", truncated: "#e0a526", env_error: "#c2410c", infra_error: "#7c3aed" };
  var blue = "rgba(59,111,216,0.75)", grey = "rgba(140,148,163,0.65)", green = "rgba(46,157,91,0.7)";

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function num(x, d) {
    if (typeof x !== "number" || !isFinite(x)) return "—";
    return Number.isInteger(x) ? String(x) : x.toFixed(d === undefined ? 3 : d);
  }
  function pct(x) { return typeof x === "number" && isFinite(x) ? (x * 100).toFixed(1) + "%" : "—"; }
  var collator = new Intl.Collator("en", { numeric: true });
  function byId(a, b) { return collator.compare(a, b); }

  // ---- charts: histograms and top-N, so they read the same at 50 and at 20,000 rollouts
  if (window.Chart) {
    Chart.defaults.animation = false;
    Chart.defaults.maintainAspectRatio = false;
  }
  function make(id, config) {
    var c = document.getElementById(id);
    if (!c || !window.Chart) return;
    charts[id] = new Chart(c.getContext("2d"), config);
  }
  var hist = [{ label: "this run", data: data.rewardHistogram.map(function (b) { return b.count; }), backgroundColor: blue }];
  if (data.baseline) hist.push({ label: "baseline", data: data.baseline.rewardHistogram.map(function (b) { return b.count; }), backgroundColor: grey });
  make("chart-reward", { type: "bar", data: { labels: data.rewardHistogram.map(function (b) { return b.label; }), datasets: hist },
    options: { scales: { x: { title: { display: true, text: "reward" } }, y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "rollouts" } } } } });
  var outcomeNames = Object.keys(data.outcomes);
  make("chart-outcomes", { type: "doughnut", data: { labels: outcomeNames, datasets: [{ data: outcomeNames.map(function (k) { return data.outcomes[k]; }),
    backgroundColor: outcomeNames.map(function (k) { return palette[k] || grey; }) }] }, options: { plugins: { legend: { position: "right" } } } });
  if (data.rl) {
    var ks = Object.keys(data.rl.passAtK);
    make("chart-passk", { type: "line", data: { labels: ks.map(function (k) { return "k=" + k; }), datasets: [
        { label: "pass@k", data: ks.map(function (k) { return data.rl.passAtK[k]; }), borderColor: blue, backgroundColor: blue },
        { label: "max@k", data: ks.map(function (k) { return data.rl.maxAtK[k]; }), borderColor: green, backgroundColor: green }] },
      options: { scales: { y: { beginAtZero: true, suggestedMax: 1 } } } });
  }
  if (data.series) {
    var hues = ["#3b6fd8", "#2e9d5b", "#c2410c", "#7c3aed", "#e0a526", "#0e7490", "#be185d", "#4d7c0f", "#6b7280", "#9333ea"];
    var sm = data.series.metrics;
    make("chart-runs", { type: "line", data: { labels: data.series.runs.map(function (r) { return r.label; }),
        datasets: Object.keys(sm).map(function (k, i) { return { label: k, data: sm[k], borderColor: hues[i % hues.length], backgroundColor: hues[i % hues.length], spanGaps: true }; }) },
      options: { scales: { y: { beginAtZero: true } } } });
  }
  var th = data.turnsHistogram, thColors = [blue, green];
  make("chart-turns", { type: "bar", data: { labels: th.labels, datasets: Object.keys(th.series).map(function (k, i) {
      return { label: k, data: th.series[k], backgroundColor: thColors[i % 2] }; }) },
    options: { scales: { x: { title: { display: true, text: "turns / tool calls in the rollout" } }, y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "rollouts" } } } } });
  var tp = data.taskPassHistogram;
  var tpSets = [{ label: "tasks", data: tp.tasks, backgroundColor: blue }];
  if (tp.baseline) tpSets.push({ label: "baseline tasks", data: tp.baseline, backgroundColor: grey });
  make("chart-task-pass", { type: "bar", data: { labels: tp.labels, datasets: tpSets },
    options: { scales: { x: { title: { display: true, text: "pass rate of the task's rollouts" } }, y: { beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: "tasks" } } } } });
  var wt = [{ label: "pass rate", data: data.worstTasks.map(function (t) { return t.passRate; }), backgroundColor: blue },
    { label: "mean reward", data: data.worstTasks.map(function (t) { return t.meanReward; }), backgroundColor: green }];
  if (data.baseline) wt.push({ label: "baseline pass rate", data: data.worstTasks.map(function (t) { return t.baselinePassRate; }), backgroundColor: grey });
  make("chart-tasks", { type: "bar", data: { labels: data.worstTasks.map(function (t) { return t.taskId; }), datasets: wt },
    options: { indexAxis: "y", scales: { x: { min: 0, max: 1, title: { display: true, text: "pass rate" } }, y: { ticks: { autoSkip: false } } } } });
  if (data.tools.length) {
    make("chart-tools", { type: "bar", data: { labels: data.tools.map(function (t) { return t.name; }),
        datasets: [{ label: "calls", data: data.tools.map(function (t) { return t.calls; }), backgroundColor: green }] },
      options: { indexAxis: "y", plugins: { legend: { display: false } }, scales: { x: { beginAtZero: true, ticks: { precision: 0 } } } } });
  }
  if (data.baseline) {
    var rows = data.baseline.check.rows.filter(function (r) { return r.base !== null && r.cand !== null && !/^outcome\./.test(r.metric); });
    make("chart-compare", { type: "bar", data: { labels: rows.map(function (r) { return r.metric; }), datasets: [
        { label: "baseline", data: rows.map(function (r) { return r.base; }), backgroundColor: grey },
        { label: "this run", data: rows.map(function (r) { return r.cand; }), backgroundColor: rows.map(function (r) { return r.regression ? "rgba(179,38,30,0.8)" : blue; }) } ] },
      options: { scales: { y: { beginAtZero: true } } } });
  }
  document.body.setAttribute("data-charts", String(Object.keys(charts).length));

  // ---- a table that renders one page of rows at a time, sortable by column
  function PagedTable(root, columns, options) {
    this.root = root; this.columns = columns; this.options = options || {};
    this.pageSize = this.options.pageSize || 50;
    this.rows = []; this.page = 0; this.sort = null; this.dir = 1;
    var table = el("table"), thead = el("thead"), tr = el("tr"), self = this;
    columns.forEach(function (c, i) {
      var h = el("th", c.num ? "num sortable" : "sortable", c.label);
      h.title = "sort by " + c.label;
      h.addEventListener("click", function () { self.sortBy(i); });
      tr.appendChild(h);
    });
    thead.appendChild(tr); table.appendChild(thead);
    this.tbody = el("tbody"); table.appendChild(this.tbody);
    var scroll = el("div", "scroll"); scroll.appendChild(table);
    this.pager = el("div", "pager");
    this.prev = el("button", "", "‹ previous"); this.next = el("button", "", "next ›"); this.info = el("span", "pageinfo");
    this.prev.addEventListener("click", function () { self.go(self.page - 1); });
    this.next.addEventListener("click", function () { self.go(self.page + 1); });
    this.pager.appendChild(this.prev); this.pager.appendChild(this.info); this.pager.appendChild(this.next);
    root.appendChild(scroll); root.appendChild(this.pager);
  }
  PagedTable.prototype.setRows = function (rows) { this.rows = rows; this.applySort(); this.go(0); };
  PagedTable.prototype.sortBy = function (i) {
    if (this.sort === i) this.dir = -this.dir; else { this.sort = i; this.dir = this.columns[i].num ? -1 : 1; }
    this.applySort(); this.go(0);
  };
  PagedTable.prototype.applySort = function () {
    if (this.sort === null) return;
    var get = this.columns[this.sort].value, dir = this.dir;
    this.rows = this.rows.slice().sort(function (a, b) {
      var x = get(a), y = get(b);
      if (x === null || x === undefined) return y === null || y === undefined ? 0 : 1;
      if (y === null || y === undefined) return -1;
      return (typeof x === "string" ? byId(x, y) : x - y) * dir;
    });
  };
  PagedTable.prototype.go = function (p) {
    var pages = Math.max(1, Math.ceil(this.rows.length / this.pageSize));
    this.page = Math.max(0, Math.min(pages - 1, p));
    var from = this.page * this.pageSize, to = Math.min(this.rows.length, from + this.pageSize);
    var frag = document.createDocumentFragment(), cols = this.columns, opts = this.options;
    for (var i = from; i < to; i++) {
      var row = this.rows[i], tr = el("tr");
      for (var j = 0; j < cols.length; j++) {
        var c = cols[j], v = c.render ? c.render(row) : c.value(row);
        var td = el("td", c.cls ? c.cls(row) : c.num ? "num" : "");
        if (v instanceof Node) td.appendChild(v); else td.textContent = v === null || v === undefined ? "—" : String(v);
        tr.appendChild(td);
      }
      if (opts.decorate) opts.decorate(tr, row);
      frag.appendChild(tr);
    }
    this.tbody.textContent = "";
    this.tbody.appendChild(frag);
    this.info.textContent = this.rows.length ? "rows " + (from + 1) + "–" + to + " of " + this.rows.length : "no rows match";
    this.prev.disabled = this.page === 0; this.next.disabled = this.page >= pages - 1;
  };

  // ---- tasks
  var taskCols = [
    { label: "task", value: function (t) { return t.taskId; } },
    { label: "rollouts", num: true, value: function (t) { return t.n; } },
    { label: "mean reward", num: true, value: function (t) { return t.meanReward; }, render: function (t) { return num(t.meanReward); } },
    { label: "pass rate", num: true, value: function (t) { return t.passRate; }, render: function (t) { return pct(t.passRate); } }
  ];
  if (data.baseline) {
    taskCols.push({ label: "baseline pass rate", num: true, value: function (t) { return t.baselinePassRate; }, render: function (t) { return pct(t.baselinePassRate); } });
    taskCols.push({ label: "change", num: true,
      value: function (t) { return t.passRate !== null && t.baselinePassRate !== null && t.baselinePassRate !== undefined ? t.passRate - t.baselinePassRate : null; },
      render: function (t) { var d = t.passRate !== null && typeof t.baselinePassRate === "number" ? t.passRate - t.baselinePassRate : null; return d === null ? "—" : (d >= 0 ? "+" : "") + (d * 100).toFixed(1) + " pts"; },
      cls: function (t) { return typeof t.baselinePassRate === "number" && t.passRate !== null && t.passRate < t.baselinePassRate ? "num worse" : "num"; } });
  }
  var taskTable = new PagedTable(document.getElementById("task-table"), taskCols, { pageSize: 25, decorate: function (tr, t) {
    tr.className = "clickable"; tr.title = "show this task's rollouts";
    tr.addEventListener("click", function () { setTaskFilter(t.taskId); document.getElementById("rollouts").scrollIntoView(); });
  } });
  taskTable.setRows(data.tasks);

  // ---- rollouts: filters, table, viewer
  var R = idx.rows;
  var rolloutCols = [
    { label: "rollout", value: function (r) { return r[0]; } },
    { label: "task", value: function (r) { return idx.taskIds[r[1]]; } },
    { label: "outcome", value: function (r) { return idx.outcomes[r[2]]; }, render: function (r) { return badge(idx.outcomes[r[2]]); } },
    { label: "reward", num: true, value: function (r) { return r[3]; }, render: function (r) { return num(r[3]); } },
    { label: "turns", num: true, value: function (r) { return r[4]; } },
    { label: "tool calls", num: true, value: function (r) { return r[5]; } },
    { label: "tool errors", num: true, value: function (r) { return r[6]; } },
    { label: "ms", num: true, value: function (r) { return r[7]; } },
    { label: "error", value: function (r) { return r[8] >= 0 ? idx.errors[r[8]] : ""; }, cls: function () { return "err"; },
      render: function (r) { if (r[8] < 0) return ""; var s = el("span", "", idx.errors[r[8]]); s.title = idx.errors[r[8]]; return s; } }
  ];
  var selected = null;
  var rolloutTable = new PagedTable(document.getElementById("rollout-table"), rolloutCols, { pageSize: 50, decorate: function (tr, r) {
    tr.className = "clickable" + (r === selected ? " selected" : "");
    tr.setAttribute("data-rollout", r[0]);
    tr.addEventListener("click", function () { openRollout(r); });
  } });
  function badge(outcome) { var b = el("span", "badge", outcome); b.style.background = palette[outcome] || "#8c94a3"; return b; }

  var fTask = document.getElementById("filter-task"), fOutcome = document.getElementById("filter-outcome");
  var fMin = document.getElementById("filter-reward-min"), fMax = document.getElementById("filter-reward-max");
  var fCount = document.getElementById("filter-count");
  idx.outcomes.forEach(function (o) { var opt = el("option", "", o); opt.value = o; fOutcome.appendChild(opt); });
  var knownTasks = {};
  idx.taskIds.forEach(function (t, i) { knownTasks[t] = i; });
  function applyFilters() {
    var task = fTask.value.trim(), outcome = fOutcome.value;
    var lo = fMin.value === "" ? null : Number(fMin.value), hi = fMax.value === "" ? null : Number(fMax.value);
    var exact = Object.prototype.hasOwnProperty.call(knownTasks, task) ? knownTasks[task] : -1;
    var part = task.toLowerCase(), o = outcome === "" ? -1 : idx.outcomes.indexOf(outcome);
    var out = [];
    for (var i = 0; i < R.length; i++) {
      var r = R[i];
      if (exact >= 0 ? r[1] !== exact : part && idx.taskIds[r[1]].toLowerCase().indexOf(part) < 0) continue;
      if (o >= 0 && r[2] !== o) continue;
      if ((lo !== null || hi !== null) && r[3] === null) continue;
      if (lo !== null && r[3] < lo) continue;
      if (hi !== null && r[3] > hi) continue;
      out.push(r);
    }
    fCount.textContent = out.length === R.length ? R.length + " rollouts" : out.length + " of " + R.length + " rollouts";
    rolloutTable.setRows(out);
  }
  function setTaskFilter(t) { fTask.value = t; applyFilters(); }
  [fTask, fMin, fMax].forEach(function (f) { f.addEventListener("input", applyFilters); });
  fOutcome.addEventListener("change", applyFilters);
  document.getElementById("filter-clear").addEventListener("click", function () { fTask.value = ""; fOutcome.value = ""; fMin.value = ""; fMax.value = ""; applyFilters(); });
  applyFilters();

  // ---- transcripts, loaded a chunk at a time
  var viewer = document.getElementById("viewer");
  var chunks = {};
  var pending = {};
  var sidecar = data.transcripts.mode === "sidecar";
  function chunkUrl(i) { var s = String(i); while (s.length < 4) s = "0" + s; return encodeURIComponent(data.transcripts.dir) + "/chunk-" + s + ".js"; }
  function checkChunk(reportId, i, arr) {
    if (reportId !== data.reportId) throw new Error(chunkUrl(i) + " belongs to another report (it was rewritten after this page); reload report.html");
    return arr;
  }
  window.benchmaxTranscriptChunk = function (reportId, i, arr) {
    var p = pending[i];
    if (!p) return;
    try { p.resolve(checkChunk(reportId, i, arr)); } catch (e) { p.reject(e); }
  };
  function loadChunk(i) {
    if (chunks[i]) return chunks[i];
    var promise;
    if (!sidecar) {
      promise = new Promise(function (resolve) { resolve(JSON.parse(document.getElementById("report-transcripts-" + i).textContent)); });
    } else if (location.protocol === "http:" || location.protocol === "https:") {
      promise = fetch(chunkUrl(i)).then(function (res) {
        if (!res.ok) throw new Error("could not load " + chunkUrl(i) + " (HTTP " + res.status + "): serve the folder " + data.transcripts.dir + "/ beside report.html");
        return res.text();
      }).then(function (text) {
        var args = JSON.parse("[" + text.slice(text.indexOf("(") + 1, text.lastIndexOf(")")) + "]");
        return checkChunk(args[0], args[1], args[2]);
      });
    } else {
      promise = new Promise(function (resolve, reject) {
        pending[i] = { resolve: resolve, reject: reject };
        var s = document.createElement("script");
        s.src = chunkUrl(i);
        s.onerror = function () { reject(new Error("could not load " + chunkUrl(i) + ": keep the folder " + data.transcripts.dir + "/ next to report.html")); };
        document.head.appendChild(s);
      });
    }
    chunks[i] = promise;
    promise.catch(function () { delete chunks[i]; });
    return promise;
  }

  function contentText(c) {
    if (typeof c === "string") return c;
    if (Array.isArray(c)) return c.map(function (p) { return p && p.type === "text" ? p.text : "[image " + (p && p.image_url ? p.image_url.url : "") + "]"; }).join("\n");
    return c === null || c === undefined ? "" : JSON.stringify(c, null, 2);
  }
  function prettyArgs(a) {
    if (typeof a !== "string") return { text: JSON.stringify(a, null, 2), ok: true };
    try { return { text: JSON.stringify(JSON.parse(a), null, 2), ok: true }; } catch (e) { return { text: a, ok: false }; }
  }
  function fact(dl, k, v) { dl.appendChild(el("dt", "", k)); var dd = el("dd"); if (v instanceof Node) dd.appendChild(v); else dd.textContent = v; dl.appendChild(dd); }

  function renderTranscript(r, t) {
    viewer.textContent = "";
    var head = el("div", "vhead");
    head.appendChild(el("h3", "", r[0]));
    var dl = el("dl", "facts");
    fact(dl, "task", idx.taskIds[r[1]]);
    fact(dl, "outcome", badge(idx.outcomes[r[2]]));
    fact(dl, "reward", num(r[3]));
    fact(dl, "turns", String(r[4]));
    fact(dl, "tool calls", r[5] + (r[6] ? " (" + r[6] + " errors)" : ""));
    fact(dl, "duration", r[7] + " ms");
    if (t.truncatedBy) fact(dl, "truncated by", t.truncatedBy);
    if (t.attempt) fact(dl, "attempt", String(t.attempt));
    if (t.usage) fact(dl, "usage", Object.keys(t.usage).map(function (k) { return k + " " + t.usage[k]; }).join(", "));
    if (t.taskMeta) fact(dl, "task metadata", Object.keys(t.taskMeta).map(function (k) { return k + " " + t.taskMeta[k]; }).join(", "));
    head.appendChild(dl);
    viewer.appendChild(head);
    if (t.error) { var eb = el("div", "errorbox"); eb.appendChild(el("b", "", "error: ")); eb.appendChild(el("span", "", t.error)); viewer.appendChild(eb); }
    var comps = Object.keys(t.rewards || {});
    var rc = el("div", "rewards");
    rc.appendChild(el("h4", "", "Reward components"));
    if (comps.length) {
      var tb = el("table", "components"), hr = el("tr");
      hr.appendChild(el("th", "", "component")); hr.appendChild(el("th", "num", "value")); tb.appendChild(hr);
      comps.forEach(function (k) { var tr = el("tr"); tr.setAttribute("data-component", k); tr.appendChild(el("td", "", k)); tr.appendChild(el("td", "num", num(t.rewards[k]))); tb.appendChild(tr); });
      rc.appendChild(tb);
    } else rc.appendChild(el("p", "muted", r[3] === null ? "not scored (" + idx.outcomes[r[2]] + ": errors are never scored)" : "no components"));
    viewer.appendChild(rc);
    if (t.explain) {
      // the env's own explanation of the reward: what it extracted beside the gold
      var ex = el("div", "explain");
      ex.appendChild(el("h4", "", "Answer vs gold"));
      var edl = el("dl", "facts");
      if (t.explain.extracted !== undefined) { fact(edl, "extracted", el("code", "extracted", t.explain.extracted)); }
      if (t.explain.gold !== undefined) { fact(edl, "gold", el("code", "gold", t.explain.gold)); }
      ex.appendChild(edl);
      if (t.explain.diff && t.explain.diff.length) {
        var ul = el("ul", "diff");
        t.explain.diff.forEach(function (line) { ul.appendChild(el("li", "", line)); });
        ex.appendChild(ul);
      }
      viewer.appendChild(ex);
    }
    viewer.appendChild(el("h4", "", "Conversation (" + t.messages.length + " messages)"));
    var callNames = {};
    t.messages.forEach(function (m, n) {
      var box = el("div", "msg role-" + m.role);
      box.setAttribute("data-role", m.role);
      var h = el("div", "mhead");
      var label = m.role === "system" ? "system prompt" : m.role === "tool" ? "tool result" : m.role;
      h.appendChild(el("span", "role", label));
      if (m.role === "tool") {
        var name = m.name || callNames[m.tool_call_id] || "";
        h.appendChild(el("span", "muted", (name ? name + " · " : "") + "call " + (m.tool_call_id || "?")));
      }
      h.appendChild(el("span", "muted idx", "#" + n));
      box.appendChild(h);
      var text = contentText(m.content);
      var calls = (m.tool_calls || []).map(function (c) { var f = c.function || {}; return { id: c.id, name: f.name, args: prettyArgs(f.arguments) }; });
      if (m.role === "assistant" && !calls.length && text.indexOf("<tool_call>") >= 0) {
        // Hermes / Qwen text format: the calls are <tool_call>{"name", "arguments"}</tool_call> blocks in the reply
        var hermes = 0;
        text = text.replace(/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g, function (all, body) {
          var call = null;
          try { call = JSON.parse(body); } catch (e) { call = null; }
          if (call && typeof call.name === "string") calls.push({ id: "text #" + hermes++, name: call.name, args: { text: JSON.stringify(call.arguments === undefined ? {} : call.arguments, null, 2), ok: true } });
          else calls.push({ id: "text #" + hermes++, name: "(malformed call)", args: { text: body, ok: false } });
          return "";
        }).trim();
      }
      if (text || m.role !== "assistant") box.appendChild(el("pre", "content", text));
      calls.forEach(function (c) {
        callNames[c.id] = c.name;
        var tc = el("div", "toolcall");
        tc.setAttribute("data-tool", c.name || "");
        var th2 = el("div", "mhead");
        th2.appendChild(el("span", "role", "tool call → " + (c.name || "?")));
        th2.appendChild(el("span", "muted", "call " + (c.id || "?")));
        tc.appendChild(th2);
        tc.appendChild(el("pre", "args", c.args.text));
        if (!c.args.ok) tc.appendChild(el("div", "err", "arguments are not valid JSON"));
        box.appendChild(tc);
      });
      viewer.appendChild(box);
    });
    if (t.metadata) { var md = el("details"); md.appendChild(el("summary", "", "metadata")); md.appendChild(el("pre", "content", JSON.stringify(t.metadata, null, 2))); viewer.appendChild(md); }
  }

  var token = 0;
  function openRollout(r) {
    selected = r;
    var trs = document.querySelectorAll("#rollout-table tr.selected");
    for (var i = 0; i < trs.length; i++) trs[i].classList.remove("selected");
    var mine = document.querySelector('#rollout-table tr[data-rollout="' + (window.CSS && CSS.escape ? CSS.escape(r[0]) : r[0]) + '"]');
    if (mine) mine.classList.add("selected");
    if (history.replaceState) history.replaceState(null, "", "#rollout=" + encodeURIComponent(r[0]));
    viewer.setAttribute("data-rollout", r[0]);
    var my = ++token;
    if (r[9] < 0) { viewer.setAttribute("data-state", "error"); viewer.textContent = "This report was written without transcripts."; return; }
    viewer.setAttribute("data-state", "loading");
    viewer.textContent = "loading transcript of " + r[0] + "…";
    loadChunk(r[9]).then(function (arr) {
      if (my !== token) return;
      var t = arr[r[10]];
      if (!t || t.rolloutId !== r[0]) throw new Error("transcript of " + r[0] + " not found in chunk " + r[9]);
      renderTranscript(r, t);
      viewer.setAttribute("data-state", "ready");
      viewer.scrollTop = 0;
    }).catch(function (e) {
      if (my !== token) return;
      viewer.setAttribute("data-state", "error");
      viewer.textContent = "";
      viewer.appendChild(el("div", "errorbox", "Transcript not available: " + e.message));
    });
  }
  window.benchmaxOpenRollout = function (id) {
    for (var i = 0; i < R.length; i++) if (R[i][0] === id) { openRollout(R[i]); return true; }
    return false;
  };
  var m = /^#rollout=(.+)$/.exec(location.hash);
  if (m) window.benchmaxOpenRollout(decodeURIComponent(m[1]));

  window.benchmaxReadyMs = performance.now();
  document.body.setAttribute("data-ready", "1");
  // the first frame after it: style, layout and paint of the page included
  requestAnimationFrame(function () { setTimeout(function () { window.benchmaxPaintedMs = performance.now(); }, 0); });
})();
`;
