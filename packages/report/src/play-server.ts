import { randomBytes, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import {
  type AssistantMessage,
  type Env,
  Episode,
  errorMessage,
  hasStateView,
  InfraError,
  type Policy,
  type StateView,
  type StepResult,
  stateViewProblems,
  type Task,
  type ToolFormat,
  UsageError,
} from "@benchmax/core";
import { escapeHtml, inlineScript, scriptJson } from "./html-escape.js";
import { listenLoopback } from "./listen-loopback.js";

export interface PlayOptions {
  port?: number;
  token?: string;
  /** The tasks to pick from (default: the env's `tasks.loadTasks()`). */
  tasks?: Task[];
  /** A model that can take the assistant's turns (an OpenAI-compatible endpoint); without one a person types them. */
  policy?: Policy;
  /** How tool calls are written in the conversation (default "openai"; "hermes" for `<tool_call>` text). */
  toolFormat?: ToolFormat;
  /**
   * Whether the page may start a task the person writes (a prompt and its gold, or a dataset row the env's
   * `parseTask` reads). Default true.
   */
  inlineTasks?: boolean;
}

export interface PlayServer {
  url: string;
  token: string;
  close(): Promise<void>;
}

const PLAY_SCRIPT = String.raw`
(function () {
  "use strict";
  var token = document.body.getAttribute("data-token");
  var episode = null;
  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined && text !== null) e.textContent = String(text); return e; }
  function api(path, body) {
    return fetch(path, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer " + token }, body: JSON.stringify(body) })
      .then(function (r) { return r.json().then(function (j) { if (!r.ok) throw new Error(j.error || r.status); return j; }); });
  }
  function show(m) {
    var box = el("div", "msg role-" + m.role);
    box.setAttribute("data-role", m.role);
    box.appendChild(el("div", "muted", m.role + (m.name ? " · " + m.name : "")));
    var text = typeof m.content === "string" ? m.content : m.content === null || m.content === undefined ? "" : JSON.stringify(m.content);
    (m.tool_calls || []).forEach(function (c) { text += (text ? "\n" : "") + "→ " + c.function.name + " " + c.function.arguments; });
    box.appendChild(el("pre", "", text));
    document.getElementById("conversation").appendChild(box);
  }
  // the env's state view (an env with StateViewCapability): a grid of sheets or text, redrawn after every turn
  function renderState(v) {
    var box = document.getElementById("state");
    if (!box || v === undefined) return;
    box.textContent = "";
    box.parentNode.hidden = !v;
    if (!v) return;
    box.setAttribute("data-kind", v.kind);
    if (v.note) box.appendChild(el("div", "muted", v.note));
    if (v.kind === "text") { box.appendChild(el("pre", "state-text", v.text)); return; }
    function colName(n) { var s = ""; for (; n > 0; n = Math.floor((n - 1) / 26)) s = String.fromCharCode(65 + ((n - 1) % 26)) + s; return s; }
    (v.sheets || []).forEach(function (sh) {
      var wrap = el("div", "sheet");
      wrap.setAttribute("data-sheet", sh.name);
      wrap.appendChild(el("div", "sheet-name", sh.name + (sh.truncated ? " (" + sh.truncated + ")" : "")));
      var r0 = sh.firstRow || 1, c0 = sh.firstColumn || 1, width = 0;
      sh.cells.forEach(function (row) { width = Math.max(width, row.length); });
      var table = el("table", "grid");
      var head = el("tr");
      head.appendChild(el("th"));
      for (var c = 0; c < width; c++) head.appendChild(el("th", "", colName(c0 + c)));
      table.appendChild(head);
      sh.cells.forEach(function (row, r) {
        var tr = el("tr");
        tr.appendChild(el("th", "", r0 + r));
        for (var c = 0; c < width; c++) {
          var value = row[c];
          var td = el("td", typeof value === "number" ? "num" : "", value === null || value === undefined ? "" : value);
          td.setAttribute("data-cell", colName(c0 + c) + (r0 + r));
          tr.appendChild(td);
        }
        table.appendChild(tr);
      });
      wrap.appendChild(table);
      box.appendChild(wrap);
    });
  }
  function setError(e) { document.getElementById("error").textContent = e ? String(e.message || e) : ""; }
  function started(j) {
    episode = j.id;
    document.getElementById("conversation").textContent = "";
    document.getElementById("result").textContent = "";
    j.messages.forEach(show);
    renderState(j.state);
    document.body.setAttribute("data-state", "running");
  }
  document.getElementById("start").addEventListener("click", function () {
    setError();
    api("/api/start", { taskId: document.getElementById("task").value }).then(started, setError);
  });
  var custom = document.getElementById("start-custom");
  if (custom) custom.addEventListener("click", function () {
    setError();
    var row = document.getElementById("custom-row");
    api("/api/start", { custom: { prompt: document.getElementById("custom-prompt").value, gold: document.getElementById("custom-gold").value, row: row ? row.value : "" } }).then(started, setError);
  });
  function stepped(j) {
    show(j.assistant);
    j.observations.forEach(show);
    renderState(j.state);
    if (j.done) ended(j);
  }
  document.getElementById("send").addEventListener("click", function () {
    setError();
    var body = { id: episode, content: document.getElementById("reply").value };
    var name = document.getElementById("tool-name").value;
    if (name) {
      var args;
      try { args = JSON.parse(document.getElementById("tool-args").value || "{}"); } catch (e) { return setError("tool arguments: " + e.message); }
      body.toolCalls = [{ name: name, arguments: args }];
    }
    api("/api/step", body).then(function (j) {
      document.getElementById("reply").value = "";
      document.getElementById("tool-name").value = "";
      document.getElementById("tool-args").value = "";
      stepped(j);
    }, setError);
  });
  var model = document.getElementById("model-step");
  if (model) model.addEventListener("click", function () {
    setError();
    model.disabled = true;
    document.body.setAttribute("data-model", "thinking");
    api("/api/model-step", { id: episode }).then(function (j) { stepped(j); }, setError).then(function () {
      model.disabled = false;
      document.body.setAttribute("data-model", "idle");
    });
  });
  function ended(j) {
    var r = document.getElementById("result");
    r.textContent = "";
    r.appendChild(el("h3", "", "Episode ended: " + j.outcome + (typeof j.reward === "number" ? " · reward " + j.reward : "")));
    Object.keys(j.rewards || {}).forEach(function (k) { var p = el("div", "component", k + " " + j.rewards[k]); p.setAttribute("data-component", k); r.appendChild(p); });
    if (j.error) r.appendChild(el("div", "errorbox", j.error));
    if (j.explain) {
      // the env's explanation, all of it: what it read from the answer, the gold, and why they differ
      var ex = el("div", "explain");
      ex.setAttribute("id", "explain");
      if (j.explain.extracted !== undefined) { ex.appendChild(el("b", "", "extracted: ")); ex.appendChild(el("code", "extracted", j.explain.extracted)); }
      if (j.explain.gold !== undefined) { ex.appendChild(el("b", "", "  gold: ")); ex.appendChild(el("code", "gold", j.explain.gold)); }
      if (j.explain.diff && j.explain.diff.length) {
        var ul = el("ul", "why");
        j.explain.diff.forEach(function (line) { var li = el("li", "", line); li.setAttribute("data-why", ""); ul.appendChild(li); });
        ex.appendChild(ul);
      }
      r.appendChild(ex);
    }
    if (j.metadata) {
      var md = el("details", "metadata");
      md.appendChild(el("summary", "", "rollout metadata"));
      md.appendChild(el("pre", "", JSON.stringify(j.metadata, null, 2)));
      r.appendChild(md);
    }
    document.body.setAttribute("data-state", "done");
  }
  document.body.setAttribute("data-ready", "1");
})();
`;

const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; color: #1d2433; background: #f7f8fa; margin: 0; }
header { background: #fff; border-bottom: 1px solid #e3e6ec; padding: 14px 24px; }
header h1 { margin: 0; font-size: 18px; }
main { padding: 16px 24px; display: grid; grid-template-columns: minmax(0, 2fr) minmax(0, 1fr); gap: 16px; }
.panel { background: #fff; border: 1px solid #e3e6ec; border-radius: 8px; padding: 10px 12px; }
.muted { color: #5b6475; font-size: 12px; }
.msg { border-left: 4px solid #8c94a3; margin: 6px 0; padding: 4px 8px; background: #fafbfc; }
.msg.role-assistant { border-left-color: #2e9d5b; } .msg.role-tool { border-left-color: #e0a526; } .msg.role-user { border-left-color: #3b6fd8; }
pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; font: 12px/1.4 ui-monospace, monospace; }
textarea, input, select { font: inherit; width: 100%; box-sizing: border-box; margin: 3px 0 8px; }
.errorbox, #error { color: #8a1c14; }
.explain code { background: #f3f4f7; padding: 1px 4px; }
.explain ul.why { margin: 6px 0 0; padding-left: 18px; }
.sheet { overflow: auto; max-height: 420px; margin: 6px 0; }
.sheet-name { font-weight: 600; margin: 4px 0; }
table.grid { border-collapse: collapse; font: 12px/1.3 ui-monospace, monospace; }
table.grid th, table.grid td { border: 1px solid #e3e6ec; padding: 2px 6px; white-space: nowrap; max-width: 240px; overflow: hidden; text-overflow: ellipsis; }
table.grid th { background: #f3f4f7; color: #5b6475; font-weight: normal; }
table.grid td.num { text-align: right; }
`;

function page(env: Env, tasks: Task[], token: string, o: { model?: string; inline: boolean }): string {
  // the gold never reaches the page: ids and prompts only
  const options = tasks
    .map(
      (t) => `<option value="${escapeHtml(t.id)}">${escapeHtml(`${t.id} — ${(t.prompt ?? "").slice(0, 80)}`)}</option>`,
    )
    .join("");
  const tools = env
    .listTools()
    .map((t) => `<li><code>${escapeHtml(t.name)}</code> ${escapeHtml(t.description)}</li>`)
    .join("");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>benchmax play — ${escapeHtml(env.name)}</title><style>${STYLE}</style></head>
<body data-token="${escapeHtml(token)}" data-state="idle">
<header><h1>benchmax play — ${escapeHtml(env.name)}</h1><div class="muted">Step an episode: type the assistant's reply or call a tool through the form${o.model ? ", or let the model take the turn" : ""}. The gold shows only when the episode ends.</div></header>
<main>
<section class="panel"><h3>Conversation</h3><div id="conversation"><p class="muted">Pick a task and start.</p></div><div id="result"></div>
${hasStateView(env) ? `<div id="state-panel" hidden><h3>State</h3><div class="muted">${escapeHtml(env.name)}'s state after the last turn</div><div id="state"></div></div>` : ""}</section>
<aside class="panel">
<label>task<select id="task">${options}</select></label>
<button id="start" type="button">start episode</button>
${
  o.inline
    ? `<details id="write-task"><summary>or write a task</summary>
<label>prompt<textarea id="custom-prompt" rows="3"></textarea></label>
<label>gold answer (hidden from the model; shown at the end; read by ${escapeHtml(env.name)}'s parser as the row {prompt, ground_truth}${env.capabilities?.tasks?.parseTask ? "" : " — this env has none: used as written"}; JSON for a list or an object)<input id="custom-gold" autocomplete="off"></label>
${env.capabilities?.tasks?.parseTask ? `<label>or a dataset row (JSON, read by ${escapeHtml(env.name)}'s parser)<textarea id="custom-row" rows="3"></textarea></label>` : ""}
<button id="start-custom" type="button">start written task</button></details>`
    : ""
}
<h4>Assistant turn</h4>
${o.model ? `<button id="model-step" type="button">let ${escapeHtml(o.model)} take the turn</button><div class="muted">or write it yourself:</div>` : ""}
<label>reply text<textarea id="reply" rows="4" placeholder="e.g. <answer>…</answer> (a reply without a tool call ends the episode)"></textarea></label>
<label>tool call (optional)<input id="tool-name" list="tool-names" placeholder="tool name"></label>
<datalist id="tool-names">${env
    .listTools()
    .map((t) => `<option value="${escapeHtml(t.name)}">`)
    .join("")}</datalist>
<label>arguments (JSON)<textarea id="tool-args" rows="3" placeholder='{"a": 1}'></textarea></label>
<button id="send" type="button">send turn</button>
<div id="error"></div>
<h4>Tools</h4><ul>${tools}</ul>
</aside>
</main>
<script id="play-data" type="application/json">${scriptJson({ env: env.name })}</script>
<script>${inlineScript(PLAY_SCRIPT)}</script>
</body></html>`;
}

/** A written gold: the JSON value when it is written as a JSON array or object, else the text. */
function goldValue(text: string): unknown {
  const t = text.trim();
  if (/^[[{]/.test(t)) {
    try {
      return JSON.parse(t);
    } catch {
      /* the text itself */
    }
  }
  return text;
}

/** A rollout's metadata for the page (which judge scored it, per-case detail), cut to a readable size. */
function boundedMetadata(meta: Record<string, unknown> | undefined): Record<string, unknown> | undefined {
  if (!meta || Object.keys(meta).length === 0) return undefined;
  const text = JSON.stringify(meta);
  return text.length <= 4000 ? meta : { note: `${text.slice(0, 4000)}… (${text.length} characters)` };
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 1 << 20) throw new UsageError("request body over 1 MiB");
    chunks.push(c as Buffer);
  }
  const v = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
  if (!v || typeof v !== "object" || Array.isArray(v)) throw new UsageError("body must be a JSON object");
  return v as Record<string, unknown>;
}

/**
 * `benchmax play ENV`: a playground on 127.0.0.1 behind a token. A person picks a task and types the assistant's
 * turns (text, or a tool call through a form); each turn runs through core's episode engine (the same one every
 * transport drives), tool results come back, and the reward components — with the env's extracted answer beside the
 * gold — show when the episode ends. The gold is never sent before that.
 */
export async function startPlay(env: Env, options: PlayOptions = {}): Promise<PlayServer> {
  const own = env.capabilities?.tasks;
  const tasks = options.tasks ?? (own?.loadTasks ? await own.loadTasks() : []);
  if (tasks.length === 0) throw new UsageError(`${env.name} has no tasks to play`);
  const byId = new Map(tasks.map((t) => [t.id, t]));
  const token = options.token ?? randomBytes(16).toString("hex");
  const tokenBytes = Buffer.from(token);
  const episodes = new Map<string, Episode>();
  let n = 0;
  const inline = options.inlineTasks ?? true;
  const toolFormat = options.toolFormat ?? "openai";

  /**
   * A task the person wrote in the page, read the way the env reads its dataset: a dataset row goes through the env's
   * `parseTask`, and so does a prompt with its gold, as the plain row `{prompt, ground_truth}` every env's parser
   * takes, so the task scores as that row would (math's gold becomes its typed answer, wikipedia's an alias list).
   * A gold written as JSON (`["a", "b"]`, `{...}`) is that value. Only an env with no parser gets `{prompt, groundTruth}`
   * as written.
   */
  const writtenTask = (c: Record<string, unknown>): Task => {
    if (!inline) throw new UsageError("this playground takes dataset tasks only");
    const id = `written-${n + 1}`;
    const where = "the written task";
    const parse = (raw: unknown): Task => {
      let t: Task;
      try {
        t = own!.parseTask!(raw, where);
      } catch (e) {
        throw new UsageError(errorMessage(e));
      }
      return { ...t, id: t.id && t.id !== where ? t.id : id };
    };
    const row = typeof c.row === "string" ? c.row.trim() : "";
    if (row) {
      let raw: unknown;
      try {
        raw = JSON.parse(row);
      } catch (e) {
        throw new UsageError(`the dataset row is not JSON: ${errorMessage(e)}`);
      }
      if (!own?.parseTask) throw new UsageError(`${env.name} reads no dataset rows; write a prompt and its gold`);
      return parse(raw);
    }
    const prompt = typeof c.prompt === "string" ? c.prompt.trim() : "";
    if (!prompt) throw new UsageError("write the task's prompt (or a dataset row)");
    const gold = goldValue(typeof c.gold === "string" ? c.gold : "");
    if (own?.parseTask) return parse({ id, prompt, ground_truth: gold });
    return { id, prompt, groundTruth: gold };
  };

  /**
   * The env's view of the rollout's state (an env with the `stateView` capability), for the page to draw after every turn;
   * undefined for an env without one. A view that fails or is malformed shows as text saying so.
   */
  const stateOf = async (ep: Episode): Promise<StateView | undefined> => {
    if (!hasStateView(env)) return undefined;
    try {
      const v = await env.capabilities.stateView.renderState(ep.rolloutId);
      if (v === undefined) return undefined;
      const problems = stateViewProblems(v);
      return problems.length ? { kind: "text", text: `${env.name}'s state view: ${problems.join("; ")}` } : v;
    } catch (e) {
      return { kind: "text", text: `${env.name}'s state view failed: ${errorMessage(e)}` };
    }
  };

  /** What the page gets for a step: the turn and its tool results; the reward and the gold only once it is over. */
  const stepReply = async (ep: Episode, assistant: AssistantMessage, out: StepResult) => {
    const reply: Record<string, unknown> = { assistant, observations: out.observations, done: out.done };
    // the state as the turn left it, taken before an ended episode is released
    const state = await stateOf(ep);
    if (state) reply.state = state;
    if (out.done) {
      Object.assign(reply, { outcome: out.outcome, reward: out.reward, rewards: out.rewards, error: out.error });
      await ep.close();
      episodes.delete(ep.rolloutId);
      // the episode is over: now the env may show its gold beside the answer, and why the reward is what it is (the
      // explanation the episode took when it scored, before release, as a results.jsonl line has it)
      const done = ep.result();
      if (done.explain) reply.explain = done.explain;
      const meta = boundedMetadata(done.metadata);
      if (meta) reply.metadata = meta;
    }
    return reply;
  };

  const authorized = (req: IncomingMessage, url: URL) => {
    const h = req.headers.authorization;
    const given = url.searchParams.get("token") ?? (h?.startsWith("Bearer ") ? h.slice(7) : undefined);
    if (!given) return false;
    const b = Buffer.from(given);
    return b.length === tokenBytes.length && timingSafeEqual(b, tokenBytes);
  };
  const json = (res: ServerResponse, status: number, v: unknown) =>
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(v));

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    if (!authorized(req, url)) return void res.writeHead(401).end("token required (?token=…)\n");
    const handle = async () => {
      if (req.method === "GET" && url.pathname === "/") {
        const html = page(env, tasks, token, { ...(options.policy ? { model: options.policy.name } : {}), inline });
        return void res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
      }
      if (req.method !== "POST") return json(res, 404, { error: "not found" });
      const b = await body(req);
      if (url.pathname === "/api/start") {
        const custom = b.custom && typeof b.custom === "object" ? (b.custom as Record<string, unknown>) : undefined;
        const task = custom ? writtenTask(custom) : byId.get(String(b.taskId));
        if (!task) return json(res, 400, { error: `unknown task ${String(b.taskId)}` });
        const id = `play-${++n}`;
        const ep = await Episode.start(env, task, { rolloutId: id, toolFormat });
        episodes.set(id, ep);
        const state = await stateOf(ep);
        return json(res, 200, { id, messages: ep.policyInput().messages, ...(state ? { state } : {}) });
      }
      if (url.pathname === "/api/step") {
        const ep = episodes.get(String(b.id));
        if (!ep) return json(res, 400, { error: "start an episode first" });
        const calls = Array.isArray(b.toolCalls) ? (b.toolCalls as { name: string; arguments: unknown }[]) : [];
        const msg: AssistantMessage = {
          role: "assistant",
          content: typeof b.content === "string" && b.content ? b.content : calls.length ? null : "",
          ...(calls.length
            ? {
                tool_calls: calls.map((c, i) => ({
                  id: `call_${ep.turns}_${i}`,
                  type: "function" as const,
                  function: { name: String(c.name), arguments: JSON.stringify(c.arguments ?? {}) },
                })),
              }
            : {}),
        };
        return json(res, 200, await stepReply(ep, msg, await ep.step(msg)));
      }
      if (url.pathname === "/api/model-step") {
        if (!options.policy) return json(res, 400, { error: "no model: start play with --endpoint URL --model M" });
        const ep = episodes.get(String(b.id));
        if (!ep) return json(res, 400, { error: "start an episode first" });
        // the model sees the conversation and the tools, as in a rollout; never the task's gold
        const { task: _gold, ...input } = ep.policyInput();
        const reply = await options.policy.act({ ...input, task: { ...ep.task, groundTruth: undefined } });
        return json(res, 200, await stepReply(ep, reply.message, await ep.step(reply)));
      }
      return json(res, 404, { error: "not found" });
    };
    handle().catch((e: unknown) =>
      json(res, e instanceof UsageError ? 400 : e instanceof InfraError ? 502 : 500, { error: errorMessage(e) }),
    );
  });
  const port = await listenLoopback(server, options.port);
  return {
    url: `http://127.0.0.1:${port}/?token=${token}`,
    token,
    async close() {
      for (const ep of episodes.values()) await ep.close().catch(() => {});
      await options.policy?.close?.();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
