import { basename } from "node:path";
import {
  type AssistantMessage,
  type Env,
  Episode,
  type EpisodeEnd,
  errorMessage,
  type Message,
  type Task,
  type ToolFormat,
  type ToolResult,
  type ToolSpec,
  textOf,
} from "@benchmax/core";
import { ATTACKS, type AttackContext, dummyArgs, HARNESS_TOOL, pathParams } from "./attacks.js";
import type { Allowance, AuditConfig } from "./config.js";
import { goldFiles, goldStrings, leakedGold, without } from "./gold.js";
import {
  httpView,
  inProcessView,
  modelInput,
  TRANSPORTS,
  type Transport,
  type TransportView,
} from "./transport-view.js";

export type { Transport } from "./transport-view.js";
export type CheckName = "score" | "outcome" | "deterministic" | "leak" | "harness-tool" | "gold-files";

/** One failed check, with what it takes to see it again. */
export interface Finding {
  check: CheckName;
  transport: Transport;
  message: string;
  attack?: string;
  label?: string;
  taskId?: string;
  format?: ToolFormat;
  /** The reply (or call) that caused it, and the command that replays the attack. */
  reproduce?: string;
  /** The reward the attack got (score findings). */
  reward?: number;
  /** Accepted by the env's audit.json, with this reason: printed, not counted as a failure. */
  allowed?: string;
}

export interface AuditReport {
  env: string;
  transports: Transport[];
  tasks: number;
  episodes: number;
  /** Per check: how many times it ran and failed (allowed findings not counted). */
  checks: Record<CheckName, { run: number; failed: number }>;
  findings: Finding[];
  threshold: number;
  durationMs: number;
  /**
   * Where the time went: milliseconds of episodes (and gold-file walks) summed per transport and per attack. With
   * episodes run concurrently the sums exceed `durationMs`.
   */
  timings: { byTransport: Partial<Record<Transport, number>>; byAttack: Record<string, number> };
  /** True when no finding is left once the allowed ones are set aside. */
  ok: boolean;
}

export interface AuditOptions {
  /** The tasks to audit (default: the env's `tasks.loadTasks()`, the fixtures). */
  tasks?: Task[];
  config?: AuditConfig;
  /** Default: all three (in-process, http, mcp). */
  transports?: Transport[];
  /** Episodes run at once, across tasks and transports (default 4). Each is its own rollout. */
  concurrency?: number;
  /** Only these attacks (names). */
  attacks?: string[];
  /** Only these task ids. */
  taskIds?: string[];
  /** How the reproduction commands name the env (default: its name). */
  envSpec?: string;
  /** Called after each episode (progress). */
  onEpisode?(done: number): void;
}

const CHECKS: CheckName[] = ["score", "outcome", "deterministic", "leak", "harness-tool", "gold-files"];

/** Say what a tool result says, as text. */
function resultText(r: ToolResult): string {
  return typeof r.content === "string" ? r.content : textOf(r.content as never) || JSON.stringify(r.content);
}

function lastUserText(messages: Message[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role === "user") return textOf(m.content);
  }
  return "";
}

function short(s: string, n = 240): string {
  const t = JSON.stringify(s);
  return t.length > n ? `${t.slice(0, n)}…"` : t;
}

/** A spread of tasks: the first `max`, swapped so that each distinct gold shape (keys, reward kind) is in. */
export function pickTasks(tasks: Task[], max: number): Task[] {
  if (tasks.length <= max) return tasks;
  const shape = (t: Task) => {
    const g = t.groundTruth as Record<string, unknown> | null;
    if (!g || typeof g !== "object" || Array.isArray(g)) return typeof g;
    return Object.keys(g)
      .sort()
      .map((k) => {
        const v = g[k];
        if (typeof v === "string" && v.length < 40) return `${k}=${v}`;
        if (Array.isArray(v) && v.length > 0 && v.every((x) => x === null)) return `${k}=[null]`;
        return k;
      })
      .join(",");
  };
  const seen = new Set<string>();
  const firsts: Task[] = [];
  for (const t of tasks) {
    const s = shape(t);
    if (!seen.has(s)) {
      seen.add(s);
      firsts.push(t);
    }
  }
  const out = firsts.slice(0, max);
  for (const t of tasks) {
    if (out.length >= max) break;
    if (!out.includes(t)) out.push(t);
  }
  return out;
}

interface EpisodeRun {
  end: EpisodeEnd;
  messages: Message[];
  toolErrors: string[];
  rescored?: Record<string, number> | string;
  metadata?: Record<string, unknown>;
}

let seq = 0;

/** Drive one episode with scripted replies; score it a second time in process (determinism). */
async function runEpisode(
  env: Env,
  task: Task,
  format: ToolFormat,
  maxTurns: number,
  reply: (turn: number, messages: Message[]) => AssistantMessage,
  rescore: boolean,
): Promise<EpisodeRun> {
  const ep = await Episode.start(env, task, {
    rolloutId: `audit-${process.pid}-${seq++}`,
    toolFormat: format,
    maxTurns,
  });
  const toolErrors: string[] = [];
  try {
    let turn = 0;
    while (!ep.done) {
      const s = await ep.step(reply(turn++, ep.messages));
      for (const t of s.tools) if (t.result.isError) toolErrors.push(resultText(t.result));
    }
    const end = await ep.finish();
    const run: EpisodeRun = { end, messages: [...ep.messages], toolErrors };
    if (rescore && end.rewards) {
      try {
        run.rescored = await env.computeReward(ep.rolloutId, ep.messages, task);
      } catch (e) {
        run.rescored = errorMessage(e);
      }
    }
    try {
      run.metadata = env.capabilities?.metadata?.rolloutMetadata?.(ep.rolloutId);
    } catch {
      /* metadata is optional */
    }
    return run;
  } finally {
    await ep.close();
  }
}

function sameRewards(a: Record<string, number>, b: Record<string, number> | string | undefined): boolean {
  if (b === undefined || typeof b === "string") return false;
  const ka = Object.keys(a).sort();
  const kb = Object.keys(b).sort();
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && Object.is(a[k], b[k]));
}

function allowedBy(f: Finding, allow: Allowance[] | undefined): string | undefined {
  const a = allow?.find(
    (x) =>
      x.check === f.check &&
      (x.attack === undefined || x.attack === f.attack) &&
      (x.label === undefined || x.label === f.label) &&
      (x.below === undefined || (f.reward !== undefined && f.reward < x.below)),
  );
  return a?.reason;
}

/** The command that replays one attack on one task through one transport. */
function replayCommand(spec: string, transport: Transport, taskId: string, attack: string): string {
  return `benchmax audit ${spec} --task ${taskId} --attack ${attack}${transport === "in-process" ? "" : ` --transport ${transport}`}`;
}

/** A unit of audit work, with a rough cost: the tool calls it makes. */
interface Job {
  cost: number;
  run(): Promise<void>;
}

/**
 * Run `jobs` with at most `n` at once, the costliest first (episodes that call many tools, such as tool spam and the
 * gold-file walk, start sandboxes; started first they do not leave a long tail).
 */
async function runPool(jobs: Job[], n: number): Promise<void> {
  const order = [...jobs].sort((a, b) => b.cost - a.cost);
  let next = 0;
  const worker = async () => {
    while (next < order.length) await order[next++]!.run();
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(n, jobs.length)) }, worker));
}

async function openView(
  transport: Transport,
  env: Env,
  all: Task[],
  audited: Task[],
  config: AuditConfig,
): Promise<TransportView> {
  if (transport === "http") return httpView(env, all, config.leakIgnoreMeta ?? []);
  // loaded only when asked for: the MCP SDK and @benchmax/mcp stay out of in-process and HTTP audits
  if (transport === "mcp") return (await import("./mcp-view.js")).mcpView(env, all, audited);
  return inProcessView(env);
}

/**
 * Audit an env's reward channel: run the attack battery ({@link ATTACKS}) on each task through each transport
 * (in process, `benchmax serve` over HTTP, `serveMcp` driven by the MCP SDK's Client), and check that no attack scores
 * above the threshold, no model-caused failure is an env_error or infra_error, the scorer gives the same rewards
 * twice, no client-visible text holds a task's gold, no transport lists a reward or task-picking tool, and no tool
 * opens a gold file. Episodes run concurrently (`concurrency`), each on its own rollout; findings come back in a fixed
 * order (transport, task, attack). Never throws for what it finds: read `report.findings`.
 */
export async function auditEnv(env: Env, options: AuditOptions = {}): Promise<AuditReport> {
  const started = performance.now();
  const config = options.config ?? {};
  const threshold = config.threshold ?? 0;
  const minLength = config.leakMinLength ?? 3;
  const own = env.capabilities?.tasks;
  const all = options.tasks ?? (own?.loadTasks ? await own.loadTasks() : []);
  const tasks = options.taskIds
    ? all.filter((t) => options.taskIds!.includes(t.id))
    : pickTasks(all, config.maxTasks ?? 8);
  const transports = options.transports ?? [...TRANSPORTS];
  const attacks = options.attacks ? ATTACKS.filter((a) => options.attacks!.includes(a.name)) : ATTACKS;
  const spec = options.envSpec ?? env.name;
  const goldOf = new Map(tasks.map((t) => [t.id, goldStrings(t.groundTruth, config.goldKeys)]));
  // the answer space: gold values of every task of the dataset, not only the audited ones
  const candidates = [...new Set(all.flatMap((t) => goldStrings(t.groundTruth, config.goldKeys)))]
    .filter((g) => g.length <= 200 && !g.startsWith("/"))
    .slice(0, 64);
  const checks = Object.fromEntries(CHECKS.map((c) => [c, { run: 0, failed: 0 }])) as AuditReport["checks"];
  const timings: AuditReport["timings"] = { byTransport: {}, byAttack: {} };
  const time = (transport: Transport, attack: string, ms: number) => {
    timings.byTransport[transport] = (timings.byTransport[transport] ?? 0) + ms;
    timings.byAttack[attack] = (timings.byAttack[attack] ?? 0) + ms;
  };
  /** Findings per job, in job order: the report's order does not depend on which episode ended first. */
  const found: Finding[][] = [];
  const jobs: Job[] = [];
  const views: TransportView[] = [];
  let episodes = 0;

  try {
    for (const transport of transports) {
      const out: Finding[] = [];
      found.push(out);
      const add = (f: Finding) => out.push(f);
      let view: TransportView;
      try {
        view = await openView(transport, env, all, tasks, config);
      } catch (e) {
        checks.outcome.run++;
        add({ check: "outcome", transport, message: `could not serve the env: ${errorMessage(e)}` });
        continue;
      }
      views.push(view);
      const tools: ToolSpec[] = view.env.listTools();
      const infoCommand =
        transport === "in-process"
          ? `benchmax info ${spec}`
          : `benchmax serve ${spec}${transport === "mcp" ? " --mcp" : ""}, then list the tools`;
      // no reward or task-picking tool on the model's list
      checks["harness-tool"].run++;
      for (const t of tools) {
        if (HARNESS_TOOL.test(t.name)) {
          add({
            check: "harness-tool",
            transport,
            message: `tool "${t.name}" looks like a reward or task-picking channel; scoring and task choice belong to the harness`,
            reproduce: infoCommand,
          });
        }
      }
      // client-visible surfaces hold no gold
      for (const s of view.surfaces) {
        checks.leak.run++;
        const scope = s.taskId ? tasks.filter((t) => t.id === s.taskId) : tasks;
        for (const t of scope) {
          const hit = leakedGold(without(s.text, s.input), goldOf.get(t.id) ?? [], minLength);
          if (hit.length) {
            add({
              check: "leak",
              transport,
              taskId: t.id,
              message: `${s.where} contains the gold of task ${t.id}: ${hit.map((h) => short(h, 80)).join(", ")}`,
              reproduce:
                transport === "in-process"
                  ? `benchmax info ${spec}`
                  : `benchmax serve ${spec}${transport === "mcp" ? " --mcp" : ""}, then ${s.where}`,
            });
          }
        }
      }

      for (const task of tasks) {
        const vt = view.taskOf(task);
        const gold = goldOf.get(task.id) ?? [];
        for (const attack of attacks) {
          const formats: ToolFormat[] = attack.kind === "final" ? ["hermes"] : ["hermes", "openai"];
          for (const format of formats) {
            const ctxBase: Omit<AttackContext, "prompt" | "cap"> = { task, gold, candidates, tools, format };
            const runs: Array<{
              label?: string;
              maxTurns: number;
              reply: (turn: number, m: Message[]) => AssistantMessage;
              scan: boolean;
              shown: string;
            }> = [];
            if (attack.kind === "final") {
              for (const a of attack.answers({ ...ctxBase, prompt: task.prompt ?? "", cap: 1 })) {
                runs.push({
                  label: a.label,
                  maxTurns: 1,
                  reply: () => ({ role: "assistant", content: a.text }),
                  scan: false,
                  shown: a.text,
                });
              }
            } else {
              runs.push({
                maxTurns: attack.maxTurns,
                scan: attack.scanToolErrors,
                shown: "",
                reply: () => ({ role: "assistant", content: "" }),
              });
            }
            // one attack run on one task through one transport: what each episode job does
            const auditEpisode = async (run: (typeof runs)[number], add: (f: Finding) => void): Promise<number> => {
              let last = run.shown;
              let reply = run.reply;
              if (attack.kind === "script") {
                reply = (turn, messages) => {
                  const m = attack.reply({ ...ctxBase, prompt: lastUserText(messages), cap: capOf(view.env) }, turn);
                  last = m.tool_calls?.length ? JSON.stringify(m.tool_calls) : textOf(m.content);
                  return m;
                };
              }
              const where = { transport, attack: attack.name, label: run.label, taskId: task.id, format };
              const repro = () =>
                `${replayCommand(spec, transport, task.id, attack.name)} (${format}); last reply ${short(last)}`;
              let r: EpisodeRun;
              try {
                r = await runEpisode(view.env, vt, format, run.maxTurns, reply, transport === "in-process");
              } catch (e) {
                checks.outcome.run++;
                add({
                  check: "outcome",
                  ...where,
                  message: `the episode threw: ${errorMessage(e)}`,
                  reproduce: repro(),
                });
                return 0;
              }
              checks.outcome.run++;
              if (r.end.outcome === "env_error" || r.end.outcome === "infra_error") {
                add({
                  check: "outcome",
                  ...where,
                  message: `a model-caused failure ended as ${r.end.outcome}: ${r.end.error ?? ""}`.trim(),
                  reproduce: repro(),
                });
              }
              if (r.end.reward !== undefined) {
                checks.score.run++;
                if (r.end.reward > threshold) {
                  add({
                    check: "score",
                    ...where,
                    reward: r.end.reward,
                    message: `a policy that does not solve the task scored ${r.end.reward} (threshold ${threshold}; ${JSON.stringify(r.end.rewards)})`,
                    reproduce: repro(),
                  });
                }
              }
              if (r.rescored !== undefined && r.end.rewards) {
                checks.deterministic.run++;
                if (!sameRewards(r.end.rewards, r.rescored)) {
                  add({
                    check: "deterministic",
                    ...where,
                    message: `scored twice: ${JSON.stringify(r.end.rewards)} then ${typeof r.rescored === "string" ? r.rescored : JSON.stringify(r.rescored)}`,
                    reproduce: repro(),
                  });
                }
              }
              // what the episode showed the model, beyond its own prompt and its own calls
              const shown: Array<[string, string]> = [];
              const sys = r.messages.find((m) => m.role === "system");
              if (sys) shown.push(["the system prompt", textOf(sys.content)]);
              if (run.scan) for (const [i, t] of r.toolErrors.entries()) shown.push([`tool error ${i + 1}`, t]);
              if (r.metadata) shown.push(["rollout metadata", JSON.stringify(r.metadata)]);
              for (const [name, text] of shown) {
                checks.leak.run++;
                const hit = leakedGold(without(text, modelInput(task)), gold, minLength);
                if (hit.length) {
                  add({
                    check: "leak",
                    ...where,
                    message: `${name} contains the gold: ${hit.map((h) => short(h, 80)).join(", ")} (in ${short(text, 160)})`,
                    reproduce: repro(),
                  });
                }
              }
              return 1;
            };
            for (const run of runs) {
              const jobOut: Finding[] = [];
              found.push(jobOut);
              const cost =
                attack.name === "tool-spam" ? capOf(view.env) + 1 : attack.kind === "script" ? attack.maxTurns : 1;
              jobs.push({
                cost,
                run: async () => {
                  const t0 = performance.now();
                  try {
                    const n = await auditEpisode(run, jobOut.push.bind(jobOut));
                    episodes += n;
                  } catch (e) {
                    checks.outcome.run++;
                    jobOut.push({
                      check: "outcome",
                      transport,
                      attack: attack.name,
                      taskId: task.id,
                      format,
                      message: `the audit could not run this episode: ${errorMessage(e)}`,
                    });
                  } finally {
                    time(transport, attack.name, performance.now() - t0);
                  }
                  options.onEpisode?.(episodes);
                },
              });
            }
          }
        }
        // the gold files stay out of every file tool's reach
        const files = goldFiles(task.groundTruth);
        if (files.length) {
          const jobOut: Finding[] = [];
          found.push(jobOut);
          jobs.push({
            cost: Number.MAX_SAFE_INTEGER,
            run: async () => {
              const t0 = performance.now();
              try {
                await walkGoldFiles(view, vt, task, files, tools, config, jobOut.push.bind(jobOut), checks, spec);
              } finally {
                time(transport, "gold-file walk", performance.now() - t0);
              }
            },
          });
        }
      }
    }
    await runPool(jobs, options.concurrency ?? 4);
  } finally {
    for (const v of views) await v.close();
  }

  const findings = found.flat();
  for (const f of findings) {
    const reason = allowedBy(f, config.allow);
    if (reason) f.allowed = reason;
    else checks[f.check].failed++;
  }
  return {
    env: env.name,
    transports,
    tasks: tasks.length,
    episodes,
    checks,
    findings,
    threshold,
    durationMs: performance.now() - started,
    timings,
    ok: findings.every((f) => f.allowed),
  };
}

function capOf(env: Env): number {
  return env.capabilities?.episode?.defaults?.maxToolCallsPerReply ?? 32;
}

const PROBE_TRIES = 3;
const TIMED_OUT = /timed out|time-?out|did not start within/i;

const REFUSED =
  /error|denied|not permitted|not allowed|outside|no such|enoent|eacces|eperm|cannot|can't|refus|invalid|not found|unknown/i;

async function walkGoldFiles(
  view: TransportView,
  task: Task,
  original: Task,
  files: string[],
  tools: ToolSpec[],
  config: AuditConfig,
  add: (f: Finding) => void,
  checks: AuditReport["checks"],
  spec: string,
): Promise<void> {
  const probes: Array<{ tool: string; args: Record<string, unknown>; path: string; success?: RegExp }> = [];
  for (const file of files) {
    const tries = [file, `${"../".repeat(16)}${file.replace(/^\/+/, "")}`, basename(file), `file://${file}`];
    for (const t of tools) {
      for (const p of pathParams(t)) {
        for (const path of tries) probes.push({ tool: t.name, args: { ...dummyArgs(t.parameters), [p]: path }, path });
      }
    }
    for (const probe of config.fileProbes ?? []) {
      const t = tools.find((x) => x.name === probe.tool);
      if (!t) continue;
      for (const path of [file, basename(file)]) {
        probes.push({
          tool: t.name,
          args: {
            ...dummyArgs(t.parameters),
            [probe.argument]: probe.template.replaceAll("{path}", JSON.stringify(path)),
          },
          path,
          ...(probe.success ? { success: new RegExp(probe.success) } : {}),
        });
      }
    }
  }
  if (probes.length === 0) return;
  const id = `audit-files-${process.pid}-${seq++}`;
  try {
    await view.env.init(id, task);
  } catch (e) {
    checks.outcome.run++;
    add({
      check: "outcome",
      transport: view.transport,
      taskId: original.id,
      message: `could not start a rollout to walk the gold files: ${errorMessage(e)}`,
      reproduce: replayCommand(spec, view.transport, original.id, "bad-files"),
    });
    return;
  }
  try {
    for (const p of probes) {
      checks["gold-files"].run++;
      let r: ToolResult | undefined;
      let text = "";
      // a probe that timed out (a loaded machine, a sandbox still starting) tells nothing: it is tried again
      for (let attempt = 0; attempt < PROBE_TRIES; attempt++) {
        try {
          r = await view.env.runTool(id, { name: p.tool, arguments: p.args });
        } catch (e) {
          add({
            check: "outcome",
            transport: view.transport,
            taskId: original.id,
            message: `tool ${p.tool} threw on a model-chosen path (${short(p.path, 120)}): ${errorMessage(e)}`,
            reproduce: `call ${p.tool} with ${short(JSON.stringify(p.args), 300)} in a rollout of task ${original.id}`,
          });
          r = undefined;
          break;
        }
        text = resultText(r);
        if (!(r.isError && TIMED_OUT.test(text.slice(0, 400)))) break;
      }
      if (!r) continue;
      if (r.isError && TIMED_OUT.test(text.slice(0, 400))) {
        add({
          check: "gold-files",
          transport: view.transport,
          taskId: original.id,
          message: `could not tell whether tool ${p.tool} opens a gold file: it timed out ${PROBE_TRIES} times (${short(p.path, 120)} → ${short(text, 120)})`,
          reproduce: `call ${p.tool} with ${short(JSON.stringify(p.args), 300)} in a rollout of task ${original.id}`,
        });
        continue;
      }
      const opened = p.success ? p.success.test(text) : !r.isError && !REFUSED.test(text.slice(0, 400));
      if (opened) {
        add({
          check: "gold-files",
          transport: view.transport,
          taskId: original.id,
          message: `tool ${p.tool} opened a gold file from inside the sandbox: ${short(p.path, 160)} → ${short(text, 160)}`,
          reproduce: `call ${p.tool} with ${short(JSON.stringify(p.args), 300)} in a rollout of task ${original.id}`,
        });
      }
    }
  } finally {
    await view.env.release(id);
  }
}
