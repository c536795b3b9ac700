import type { Message } from "@benchmax/core";
import { afterEach, describe, expect, it, vi } from "vitest";
import WebSocket from "ws";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { calcEnv } from "./test-env.js";

const servers: EnvServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function start(opts: Parameters<typeof serveEnv>[1] = {}) {
  const s = await serveEnv(calcEnv(), opts);
  servers.push(s);
  return s;
}

async function http(
  s: EnvServer,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = typeof body === "string" ? body : JSON.stringify(body);
    (init.headers as Record<string, string>)["content-type"] = "application/json";
  }
  const r = await fetch(s.url + path, init);
  const text = await r.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* keep text */
  }
  return { status: r.status, body: parsed };
}

async function create(s: EnvServer, body: unknown = {}, headers: Record<string, string> = {}) {
  const r = await http(s, "POST", "/v1/rollouts", body, headers);
  expect(r.status).toBe(201);
  return r.body as { rolloutId: string; token: string; taskId: string; systemPrompt: string };
}

describe("rollout API", () => {
  it("creates rollouts from a dataset id, an inline task, or the next task; calls tools; scores; releases", async () => {
    const s = await start();
    const a = await create(s, { taskId: "t2" });
    expect(a.taskId).toBe("t2");
    expect(a.systemPrompt).toContain("add numbers");
    const b = await create(s, { task: { id: "x", prompt: "1+2?", groundTruth: "3" } });
    expect(b.taskId).toBe("x");
    const c = await create(s);
    expect(c.taskId).toBe("t1");
    const h = { "x-rollout-token": a.token };
    const tools = await http(s, "GET", "/v1/tools");
    expect(tools.body.tools.map((t: { name: string }) => t.name)).toEqual(["add", "note", "sleep", "fail"]);
    const call = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/call`,
      { name: "add", arguments: { a: 10, b: 7 } },
      h,
    );
    expect(call).toEqual({ status: 200, body: { content: "17", isError: false } });
    const bad = await http(s, "POST", `/v1/rollouts/${a.rolloutId}/call`, { name: "add", arguments: { a: "x" } }, h);
    expect(bad.status).toBe(200);
    expect(bad.body.isError).toBe(true);
    expect(bad.body.content).toMatch(/invalid arguments for add: a:/);
    const reward = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/reward`,
      { completion: "<answer>17</answer>" },
      h,
    );
    expect(reward.body).toEqual({ reward: 1, rewards: { exact_match: 1 }, passed: true });
    const state = await http(s, "GET", `/v1/rollouts/${a.rolloutId}`, undefined, h);
    expect(state.body).toMatchObject({ episode_id: a.rolloutId, task_id: "t2", tool_calls: 2 });
    expect((await http(s, "POST", `/v1/rollouts/${a.rolloutId}/release`, {}, h)).status).toBe(200);
    const after = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/call`,
      { name: "add", arguments: { a: 1, b: 1 } },
      h,
    );
    expect(after.status).toBe(404);
    expect(after.body.error.code).toBe("UNKNOWN_ROLLOUT");
    const m = await http(s, "GET", "/metrics");
    expect(m.body).toMatchObject({ activeRollouts: 2, rolloutsCreated: 3, toolCalls: 2, toolErrors: 1, rewards: 1 });
    expect(m.body.toolCallLatencyMs.count).toBe(2);
    const prom = await http(s, "GET", "/metrics?format=prometheus");
    expect(prom.body).toContain("benchmax_active_rollouts 2");
    expect(prom.body).toContain('benchmax_tool_call_duration_ms_bucket{le="+Inf"} 2');
  });

  it("forks a rollout into children with copied, independent state", async () => {
    const s = await start();
    const p = await create(s, { taskId: "t1" });
    const ph = { "x-rollout-token": p.token };
    await http(s, "POST", `/v1/rollouts/${p.rolloutId}/call`, { name: "note", arguments: { text: "a" } }, ph);
    const f = await http(s, "POST", `/v1/rollouts/${p.rolloutId}/fork`, { n: 2 }, ph);
    expect(f.status).toBe(200);
    const [k1, k2] = f.body.children as Array<{ rolloutId: string; token: string; taskId: string }>;
    expect(k1!.taskId).toBe("t1");
    const r1 = await http(
      s,
      "POST",
      `/v1/rollouts/${k1!.rolloutId}/call`,
      { name: "note", arguments: { text: "b" } },
      {
        "x-rollout-token": k1!.token,
      },
    );
    const r2 = await http(
      s,
      "POST",
      `/v1/rollouts/${k2!.rolloutId}/call`,
      { name: "note", arguments: { text: "c" } },
      {
        "x-rollout-token": k2!.token,
      },
    );
    expect([r1.body.content, r2.body.content]).toEqual(["a,b", "a,c"]);
    const g = await http(s, "POST", "/v1/group-reward", {
      taskId: "t1",
      members: [
        { messages: [], rewards: { exact_match: 1 } },
        { messages: [], rewards: { exact_match: 0 } },
      ],
    });
    expect(g.body).toEqual({ rewards: [{ rank: 0 }, { rank: 1 }], combined: [1, 0] });
  });

  it("expires idle rollouts", async () => {
    const s = await start({ idleTimeoutMs: 30 });
    const a = await create(s);
    await vi.waitFor(
      async () => {
        const r = await http(s, "GET", `/v1/rollouts/${a.rolloutId}`, undefined, { "x-rollout-token": a.token });
        expect(r.status).toBe(404);
      },
      { timeout: 5000, interval: 20 },
    );
    expect((await http(s, "GET", "/metrics")).body.rolloutsExpired).toBe(1);
  });

  it("answers 503 CAPACITY_REACHED past maxRollouts", async () => {
    const s = await start({ maxRollouts: 1 });
    await create(s);
    const r = await http(s, "POST", "/v1/rollouts", {});
    expect(r.status).toBe(503);
    expect(r.body.error.code).toBe("CAPACITY_REACHED");
  });
});

describe("scoring through the rollout service", () => {
  it("/reward scores {completion} against the conversation the model saw, under the reward time limit", async () => {
    const env = calcEnv();
    const seen: Message[][] = [];
    const compute = env.computeReward.bind(env);
    let hang = false;
    env.computeReward = (id, messages, task) => {
      seen.push(messages);
      return hang ? new Promise(() => {}) : compute(id, messages, task);
    };
    const s = await serveEnv(env, { rewardTimeoutMs: 50 });
    servers.push(s);
    const a = await create(s, { taskId: "t1" });
    const ok = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/reward`,
      { completion: "<answer>5</answer>" },
      {
        "x-rollout-token": a.token,
      },
    );
    expect(ok.body).toEqual({ reward: 1, rewards: { exact_match: 1 }, passed: true });
    // the system prompt the model read, with the Hermes tool section, then the task prompt and the completion
    expect(seen[0]![0]!.content).toContain("<tools>");
    expect(seen[0]!.slice(1)).toEqual([
      { role: "user", content: "What is 2 + 3?" },
      { role: "assistant", content: "<answer>5</answer>" },
    ]);
    // a retry of the same score is answered from the stored outcome, not scored again
    const again = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/reward`,
      { completion: "<answer>5</answer>" },
      {
        "x-rollout-token": a.token,
      },
    );
    expect(again.body).toEqual(ok.body);
    expect(seen).toHaveLength(1);
    // a reward that never returns is the env's failure (500), never a 0
    hang = true;
    const b = await create(s, { taskId: "t1" });
    const hung = await http(
      s,
      "POST",
      `/v1/rollouts/${b.rolloutId}/reward`,
      { completion: "<answer>5</answer>" },
      {
        "x-rollout-token": b.token,
      },
    );
    expect(hung.status).toBe(500);
    expect(hung.body.error).toMatchObject({ code: "EXECUTION_ERROR", type: "env_error" });
  });
});

describe("bad input", () => {
  it("needs the bearer token everywhere but /health (401 missing, 403 wrong)", async () => {
    const s = await start({ token: "sekret" });
    expect((await http(s, "GET", "/health")).status).toBe(200);
    for (const [m, p] of [
      ["GET", "/metadata"],
      ["GET", "/schema"],
      ["GET", "/metrics"],
      ["POST", "/reset"],
      ["POST", "/v1/rollouts"],
      ["POST", "/v1/rollouts/r_x/call"],
    ] as const) {
      expect((await http(s, m, p, m === "POST" ? {} : undefined)).status, `${m} ${p}`).toBe(401);
      expect((await http(s, m, p, m === "POST" ? {} : undefined, { authorization: "Bearer nope" })).status).toBe(403);
    }
    expect((await http(s, "GET", "/metadata", undefined, { authorization: "Bearer sekret" })).status).toBe(200);
  });

  it("refuses a rollout's calls without its own token", async () => {
    const s = await start();
    const a = await create(s);
    const b = await create(s);
    const call = { name: "add", arguments: { a: 1, b: 2 } };
    const none = await http(s, "POST", `/v1/rollouts/${a.rolloutId}/call`, call);
    expect(none.status).toBe(401);
    const other = await http(s, "POST", `/v1/rollouts/${a.rolloutId}/call`, call, { "x-rollout-token": b.token });
    // same length in characters, different in bytes
    const odd = await http(s, "POST", `/v1/rollouts/${a.rolloutId}/call`, call, {
      "x-rollout-token": "é".repeat(a.token.length),
    });
    expect(odd.status).toBe(403);
    expect(other.status).toBe(403);
    expect(other.body.error.message).toMatch(/wrong token/);
  });

  it("ids and tokens that name a victim's slot reach nothing; the victim scores as if alone", async () => {
    const s = await start();
    const victim = await create(s, { taskId: "t2" });
    const attacker = await create(s);
    const vh = { "x-rollout-token": victim.token };
    const ah = { "x-rollout-token": attacker.token };
    const vSlot = victim.token.slice(victim.token.lastIndexOf("~") + 1);
    expect(victim.rolloutId.endsWith(`.${vSlot}`)).toBe(true);
    const call = { name: "note", arguments: { text: "attacker" } };
    const at = (id: string, h: Record<string, string>) => http(s, "POST", `/v1/rollouts/${id}/call`, call, h);
    const aRandom = attacker.token.slice(0, attacker.token.lastIndexOf("~"));
    const aIdRandom = attacker.rolloutId.slice(0, attacker.rolloutId.lastIndexOf("."));
    // the victim's id with the attacker's token, or a token forged to name the victim's slot: 403
    expect((await at(victim.rolloutId, ah)).status).toBe(403);
    expect((await at(victim.rolloutId, { "x-rollout-token": `${aRandom}~${vSlot}` })).status).toBe(403);
    expect((await at(victim.rolloutId, { "x-rollout-token": `${aRandom}~0${vSlot}` })).status).toBe(403);
    // ids forged to name the victim's slot (the attacker's own random part, a padded slot): unknown
    for (const id of [`${aIdRandom}.${vSlot}`, `${victim.rolloutId.slice(0, -vSlot.length)}0${vSlot}`]) {
      const r = await at(id, ah);
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("UNKNOWN_ROLLOUT");
    }
    // OpenEnv: the victim's id as a chosen episode_id is refused; one that only names its slot is another episode
    const taken = await http(s, "POST", "/reset", { episode_id: victim.rolloutId });
    expect(taken.status).toBe(409);
    const lookalike = await http(s, "POST", "/reset", { episode_id: `x.${vSlot}` });
    expect(lookalike.status).toBe(200);
    expect(lookalike.body.observation.episode_id).toBe(`x.${vSlot}`);
    // a released rollout's slot is reused: its old token opens nothing there
    expect((await http(s, "POST", `/v1/rollouts/${attacker.rolloutId}/release`, {}, ah)).status).toBe(200);
    const next = await create(s);
    expect((await at(next.rolloutId, ah)).status).toBe(403);
    expect((await at(attacker.rolloutId, ah)).status).toBe(404);
    // the victim saw none of it: its notes are its own, and it scores as if alone
    const note = await http(
      s,
      "POST",
      `/v1/rollouts/${victim.rolloutId}/call`,
      { name: "note", arguments: { text: "v" } },
      vh,
    );
    expect(note.body).toEqual({ content: "v", isError: false });
    const reward = await http(
      s,
      "POST",
      `/v1/rollouts/${victim.rolloutId}/reward`,
      { completion: "<answer>17</answer>" },
      vh,
    );
    expect(reward.body).toEqual({ reward: 1, rewards: { exact_match: 1 }, passed: true });
  });

  it("answers 413 for oversized bodies, 400 for malformed JSON, 404 for unknown rollouts — never 5xx", async () => {
    const s = await start({ maxBodyBytes: 1024 });
    const a = await create(s);
    const h = { "x-rollout-token": a.token };
    const big = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/call`,
      { name: "add", arguments: { x: "y".repeat(5000) } },
      h,
    );
    expect(big.status).toBe(413);
    const bad = await http(s, "POST", "/v1/rollouts", "{nope");
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe("INVALID_JSON");
    expect((await http(s, "POST", "/v1/rollouts", "[1,2]")).status).toBe(400);
    expect((await http(s, "POST", "/v1/rollouts/r_unknown/call", {}, h)).status).toBe(404);
    const cases: Array<[string, string, unknown]> = [
      ["POST", "/v1/rollouts", { taskId: 5 }],
      ["POST", "/v1/rollouts", { taskId: "nope" }],
      ["POST", "/v1/rollouts", { task: { prompt: 1 } }],
      ["POST", `/v1/rollouts/${a.rolloutId}/call`, { name: 3 }],
      ["POST", `/v1/rollouts/${a.rolloutId}/call`, { name: "add", arguments: [1] }],
      ["POST", `/v1/rollouts/${a.rolloutId}/call`, { name: "nope", arguments: {} }],
      ["POST", `/v1/rollouts/${a.rolloutId}/reward`, {}],
      ["POST", `/v1/rollouts/${a.rolloutId}/fork`, { n: -1 }],
      ["POST", `/v1/rollouts/${a.rolloutId}/fork`, { n: "x" }],
      ["POST", `/v1/rollouts/${a.rolloutId}/nope`, {}],
      ["POST", "/step", { action: 1 }],
      ["POST", "/step", {}],
      ["GET", "/state", undefined],
      ["GET", "/nope", undefined],
      ["DELETE", "/metadata", undefined],
      ["POST", "/v1/group-reward", { members: 3 }],
      ["POST", "/reset", "\u0000"],
      ["POST", "/reset", { task: { id: "x", messages: [null], groundTruth: 1 } }],
      ["POST", "/reset", { task: { id: "x", messages: [{ role: "user", content: [null] }], groundTruth: 1 } }],
      ["POST", `/v1/rollouts/${a.rolloutId}/reward`, { messages: [1] }],
      ["POST", `/v1/rollouts/${a.rolloutId}/reward`, { messages: [{ role: "assistant", content: [null] }] }],
      ["POST", `/v1/rollouts/${a.rolloutId}/step`, { action: { tool_calls: [1] } }],
      ["POST", `/v1/rollouts/${a.rolloutId}/step`, { action: { tool_calls: [{ function: { name: 3 } }] } }],
      ["POST", `/v1/rollouts/%E0%A4%A/call`, {}],
      ["POST", "/v1/group-reward", { taskId: "t1", members: [null] }],
      ["POST", "/v1/group-reward", { taskId: "t1", members: [{ messages: [], rewards: { a: "x" } }] }],
    ];
    for (const [m, p, b] of cases) {
      const r = await http(s, m, p, b, h);
      expect(r.status, `${m} ${p} ${JSON.stringify(b)}`).toBeGreaterThanOrEqual(200);
      expect(r.status, `${m} ${p} ${JSON.stringify(b)} → ${JSON.stringify(r.body)}`).toBeLessThan(500);
    }
    expect((await http(s, "GET", "/metrics")).body.errors.server).toBe(0);
  });

  it("drains requests in flight on close and refuses new ones", async () => {
    const s = await serveEnv(calcEnv());
    const a = await create(s);
    const before = s.metrics.requests;
    const slow = http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/call`,
      { name: "sleep", arguments: { ms: 300 } },
      {
        "x-rollout-token": a.token,
      },
    );
    // close only once the slow call is in flight
    await vi.waitFor(() => expect(s.metrics.requests).toBe(before + 1), { timeout: 5000, interval: 5 });
    const closed = s.close();
    expect(await slow).toEqual({ status: 200, body: { content: "slept", isError: false } });
    await closed;
    await expect(fetch(`${s.url}/health`)).rejects.toThrow();
  });
});

describe("OpenEnv endpoints", () => {
  it("reset/step/state over HTTP: tool calls run, a final message ends the episode with its reward", async () => {
    const s = await start();
    const meta = await http(s, "GET", "/metadata");
    expect(meta.body).toMatchObject({ name: "calc", description: "adds numbers" });
    const schema = await http(s, "GET", "/schema");
    expect(Object.keys(schema.body)).toEqual(["action", "observation", "state"]);
    expect((await http(s, "GET", "/health")).body.status).toBe("healthy");
    const reset = await http(s, "POST", "/reset", {});
    expect(reset.body.done).toBe(false);
    expect(reset.body.reward).toBeNull();
    expect(reset.body.observation.task_id).toBe("t1");
    expect(reset.body.observation.messages[0].content).toContain("<tools>");
    expect(reset.body.observation.tools[0]).toMatchObject({ name: "add", input_schema: { type: "object" } });
    const step = await http(s, "POST", "/step", {
      action: {
        type: "message",
        content:
          '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 3}}\n</tool_call>\n<tool_call>\n{"name": "fail", "arguments": {}}\n</tool_call>',
      },
    });
    expect(step.body.done).toBe(false);
    expect(step.body.observation.tool_results).toMatchObject([
      { tool_name: "add", result: "5" },
      // OpenEnv's ToolErrorType values (mcp_types.py): the tool ran and reported a failure
      { tool_name: "fail", result: "Error: it failed", error: { error_type: "execution_error" } },
    ]);
    const direct = await http(s, "POST", "/step", {
      action: { type: "call_tool", tool_name: "add", arguments: { a: 1, b: 1 } },
    });
    expect(direct.body.observation).toEqual({
      tool_name: "add",
      result: {
        content: [{ type: "text", text: "2" }],
        structured_content: null,
        meta: null,
        data: "2",
        is_error: false,
      },
    });
    const state = await http(s, "GET", "/state");
    expect(state.body).toMatchObject({ episode_id: reset.body.observation.episode_id, step_count: 2 });
    const fin = await http(s, "POST", "/step", { action: { type: "message", content: "<answer>5</answer>" } });
    expect(fin.body).toEqual({ observation: { rewards: { exact_match: 1 }, passed: true }, reward: 1, done: true });
    // a named episode needs its rollout token
    const r2 = await http(s, "POST", "/reset", { task_id: "t3" });
    const ep = r2.body.observation.episode_id;
    expect((await http(s, "POST", "/step", { episode_id: ep, action: { content: "hi" } })).status).toBe(401);
    const ok = await http(
      s,
      "POST",
      "/step",
      { episode_id: ep, action: { content: "<answer>2</answer>" } },
      {
        "x-rollout-token": r2.body.observation.rollout_token,
      },
    );
    expect(ok.body.reward).toBe(1);
  });

  it("steps with the env's own action syntax (parseActions) before Hermes tool calls", async () => {
    const s = await serveEnv(calcEnv({ customActions: true }));
    servers.push(s);
    expect((await http(s, "GET", "/metadata")).body.hasParseActions).toBe(true);
    const c = await create(s, { taskId: "t2" });
    expect((c as unknown as { customActions: boolean }).customActions).toBe(true);
    const h = { "x-rollout-token": c.token };
    const step = await http(
      s,
      "POST",
      `/v1/rollouts/${c.rolloutId}/step`,
      { action: { content: "<add>10 7</add>" } },
      h,
    );
    expect(step.body.observation.tool_results).toMatchObject([{ tool_name: "add", result: "17" }]);
    const fin = await http(
      s,
      "POST",
      `/v1/rollouts/${c.rolloutId}/step`,
      { action: { content: "<answer>17</answer>" } },
      h,
    );
    expect(fin.body).toMatchObject({ reward: 1, done: true });
  });

  it("a client's maxTurns ends the episode there, skips the last reply's tool calls, and is inherited by forks", async () => {
    const s = await start();
    const c = await create(s, { taskId: "t1", maxTurns: 2 });
    expect((c as unknown as { maxTurns: number }).maxTurns).toBe(2);
    const h = { "x-rollout-token": c.token };
    const call = (a: number, b: number) =>
      `<tool_call>\n{"name": "add", "arguments": {"a": ${a}, "b": ${b}}}\n</tool_call>`;
    const first = await http(s, "POST", `/v1/rollouts/${c.rolloutId}/step`, { action: { content: call(2, 3) } }, h);
    expect(first.body).toMatchObject({ done: false, observation: { tool_results: [{ result: "5" }] } });
    const second = await http(s, "POST", `/v1/rollouts/${c.rolloutId}/step`, { action: { content: call(1, 1) } }, h);
    // the second reply is the last turn: scored (no answer → 0), truncated by max_turns, its call not run
    expect(second.body).toMatchObject({ done: true, reward: 0, observation: { truncated: "max_turns" } });
    expect(JSON.stringify(second.body)).not.toContain('"result":"2"');
    const parent = await create(s, { taskId: "t1", maxTurns: 3 });
    const forked = await http(
      s,
      "POST",
      `/v1/rollouts/${parent.rolloutId}/fork`,
      { n: 2 },
      {
        "x-rollout-token": parent.token,
      },
    );
    expect(forked.body.children.map((k: { maxTurns: number }) => k.maxTurns)).toEqual([3, 3]);
    expect(((await create(s, { taskId: "t1" })) as unknown as { maxTurns?: number }).maxTurns).toBeUndefined();
    const bad = await http(s, "POST", "/v1/rollouts", { taskId: "t1", maxTurns: 0 });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect(JSON.stringify(bad.body)).toContain("maxTurns");
  });

  it("runs one rollout per WebSocket session with OpenEnv message shapes", async () => {
    const s = await start({ token: "tk" });
    const url = `${s.url.replace("http", "ws")}/ws`;
    const denied = new WebSocket(url);
    const status = await new Promise((r) => denied.on("unexpected-response", (_q, res) => r(res.statusCode)));
    expect(status).toBe(401);
    const ws = new WebSocket(url, { headers: { authorization: "Bearer tk" } });
    await new Promise((r) => ws.once("open", r));
    const inbox: any[] = [];
    const waiters: Array<(m: any) => void> = [];
    ws.on("message", (d) => {
      const m = JSON.parse(d.toString());
      const w = waiters.shift();
      if (w) w(m);
      else inbox.push(m);
    });
    const ask = (m: unknown) =>
      new Promise<any>((resolve) => {
        waiters.push(resolve);
        ws.send(typeof m === "string" ? m : JSON.stringify(m));
      });
    expect(await ask("{bad")).toMatchObject({ type: "error", data: { code: "INVALID_JSON" } });
    expect(await ask({ type: "step", data: { content: "x" } })).toMatchObject({
      type: "error",
      data: { code: "SESSION_ERROR" },
    });
    expect(await ask({ type: "dance" })).toMatchObject({ type: "error", data: { code: "UNKNOWN_TYPE" } });
    const reset = await ask({ type: "reset", data: { task_id: "t2" } });
    expect(reset.type).toBe("observation");
    expect(reset.data.observation.task_id).toBe("t2");
    const tools = await ask({ type: "step", data: { type: "list_tools" } });
    expect(tools.data.observation.tools).toHaveLength(4);
    const call = await ask({ type: "step", data: { type: "call_tool", tool_name: "add", arguments: { a: 10, b: 7 } } });
    expect(call.data).toMatchObject({
      observation: { tool_name: "add", result: { data: "17" } },
      reward: null,
      done: false,
    });
    const st = await ask({ type: "state" });
    expect(st).toMatchObject({ type: "state", data: { step_count: 1, task_id: "t2" } });
    const fin = await ask({ type: "step", data: { type: "message", content: "<answer>17</answer>" } });
    expect(fin.data).toMatchObject({ reward: 1, done: true });
    const again = await ask({ type: "step", data: { type: "message", content: "x" } });
    expect(again).toMatchObject({ type: "error", data: { code: "SESSION_ERROR" } });
    ws.send(JSON.stringify({ type: "close" }));
    await new Promise((r) => ws.once("close", r));
    expect(inbox).toEqual([]);
    await vi.waitFor(async () => {
      expect((await http(s, "GET", "/metrics", undefined, { authorization: "Bearer tk" })).body.activeRollouts).toBe(0);
    });
  });
});
