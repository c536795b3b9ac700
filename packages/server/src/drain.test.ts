import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterEach, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { DRAINING_HEADER } from "./drain.js";
import { wantsPrometheusText } from "./host-routes.js";
import { type EnvServer, type ServeEnvOptions, serveEnv } from "./serve-env.js";
import { calcEnv, openWsSession } from "./test-env.js";

/**
 * Drain (DESIGN.md 6c): the door closes at once (new rollouts 503 DRAINING on every transport, /health 503
 * draining, `x-benchmax-draining: 1` on every answer), the live rollouts are served until released or the grace
 * passes, then the server closes. Real servers on 127.0.0.1; waits are on events, never on a clock.
 */

const servers: EnvServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function start(opts: ServeEnvOptions = {}) {
  const s = await serveEnv(calcEnv(), opts);
  servers.push(s);
  return s;
}

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

async function http(s: EnvServer, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const init: RequestInit = { method, headers: { ...headers } };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
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
  return { status: r.status, headers: r.headers, body: parsed } as Answer;
}

async function create(s: EnvServer, body: unknown = {}) {
  const r = await http(s, "POST", "/v1/rollouts", body);
  expect(r.status).toBe(201);
  return r.body as { rolloutId: string; token: string };
}

/** One OpenEnv `/ws` session: `ask` sends a message and resolves with the next answer. */
const wsSession = (s: EnvServer) => openWsSession(s.url);

/** The refusal a new rollout gets while draining, as the wire carries it. */
function expectDraining(r: Answer) {
  expect(r.status).toBe(503);
  expect(r.headers.get(DRAINING_HEADER)).toBe("1");
  expect(r.body.error).toMatchObject({ code: "DRAINING", type: "server_error" });
  expect(r.body.error.message).toMatch(/draining/);
}

describe("drain", () => {
  it("closes the door at once; live rollouts are served on every transport until released; then it closes", async () => {
    // a grace far longer than the test: only the releases can end this drain
    const s = await start({ drainGraceMs: 3_600_000 });
    const a = await create(s, { taskId: "t1" });
    const ha = { "x-rollout-token": a.token };
    const live = await wsSession(s);
    expect((await live.ask({ type: "reset", data: { task_id: "t2" } })).type).toBe("observation");
    const other = await wsSession(s);
    const before = await http(s, "GET", "/health");
    expect(before.status).toBe(200);
    expect(before.headers.get(DRAINING_HEADER)).toBeNull();

    const drained = s.drain();
    let ended = false;
    void drained.then(() => {
      ended = true;
    });
    expect(s.draining).toBe(true);

    // the door: every way of starting a rollout is refused
    expectDraining(await http(s, "POST", "/v1/rollouts", {}));
    expectDraining(await http(s, "POST", "/reset", {}));
    const wsReset = await other.ask({ type: "reset", data: {} });
    expect(wsReset).toMatchObject({ type: "error", data: { code: "CAPACITY_REACHED" } });
    expect(wsReset.data.message).toMatch(/draining/);
    const refusedWs = new WebSocket(`${s.url.replace("http", "ws")}/ws`);
    const upgrade = await new Promise<{ status?: number; body: string; draining?: string }>((resolve) =>
      refusedWs.on("unexpected-response", (_q, res) => {
        let body = "";
        res.on("data", (c: Buffer) => (body += c));
        res.on("end", () =>
          resolve({ status: res.statusCode, body, draining: res.headers[DRAINING_HEADER] as string }),
        );
      }),
    );
    expect(upgrade.status).toBe(503);
    // the refusal of a /ws upgrade says the server drains, as every HTTP answer does
    expect(upgrade.draining).toBe("1");
    expect(JSON.parse(upgrade.body).error).toMatchObject({
      code: "DRAINING",
      message: expect.stringMatching(/draining/),
    });
    const mcpInit = await fetch(`${s.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      }),
    });
    expect(mcpInit.status).toBe(503);
    expect(mcpInit.headers.get(DRAINING_HEADER)).toBe("1");
    expect(((await mcpInit.json()) as { error: { message: string } }).error.message).toMatch(/draining/);

    // readiness fails; the metrics say so
    const health = await http(s, "GET", "/health");
    expect(health.status).toBe(503);
    expect(health.headers.get(DRAINING_HEADER)).toBe("1");
    expect(health.body).toMatchObject({ status: "draining", activeRollouts: 2 });
    expect((await http(s, "GET", "/metrics")).body).toMatchObject({ draining: true, activeRollouts: 2 });
    const prom = await (await fetch(`${s.url}/metrics?format=prometheus`)).text();
    const gauge = (parsePrometheusTextFormat(prom) as Array<{ name: string; metrics: Array<{ value: string }> }>).find(
      (f) => f.name === "benchmax_draining",
    );
    expect(gauge?.metrics).toEqual([{ value: "1" }]);

    // the live rollouts go on: tool calls, steps, forks, rewards, release (HTTP), steps (WebSocket)
    const call = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/call`,
      { name: "add", arguments: { a: 2, b: 3 } },
      ha,
    );
    expect(call.status).toBe(200);
    expect(call.headers.get(DRAINING_HEADER)).toBe("1");
    expect(call.body).toEqual({ content: "5", isError: false });
    const step = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/step`,
      { action: { type: "call_tool", tool_name: "add", arguments: { a: 1, b: 1 } } },
      ha,
    );
    expect(step.status).toBe(200);
    expect(step.body.observation.result.data).toBe("2");
    const fork = await http(s, "POST", `/v1/rollouts/${a.rolloutId}/fork`, { n: 1 }, ha);
    expect(fork.status).toBe(200);
    const child = fork.body.children[0] as { rolloutId: string; token: string };
    const childCall = await http(
      s,
      "POST",
      `/v1/rollouts/${child.rolloutId}/call`,
      { name: "add", arguments: { a: 4, b: 4 } },
      { "x-rollout-token": child.token },
    );
    expect(childCall.body).toEqual({ content: "8", isError: false });
    const reward = await http(
      s,
      "POST",
      `/v1/rollouts/${a.rolloutId}/reward`,
      { completion: "<answer>5</answer>" },
      ha,
    );
    expect(reward.body).toMatchObject({ reward: 1, passed: true });
    const wsCall = await live.ask({
      type: "step",
      data: { type: "call_tool", tool_name: "add", arguments: { a: 10, b: 7 } },
    });
    expect(wsCall.data.observation.result.data).toBe("17");
    for (const r of [a, child]) {
      const rel = await http(s, "POST", `/v1/rollouts/${r.rolloutId}/release`, {}, { "x-rollout-token": r.token });
      expect(rel.status).toBe(200);
    }

    // one rollout is still live (the WebSocket session's): the server still listens and still drains
    const still = await http(s, "GET", "/health");
    expect(still.body).toMatchObject({ status: "draining", activeRollouts: 1 });
    expect(ended).toBe(false);

    // the last one ends its episode: the drain ends, before its grace, with none left
    const fin = await live.ask({ type: "step", data: { type: "message", content: "<answer>17</answer>" } });
    expect(fin.data).toMatchObject({ reward: 1, done: true });
    expect(await drained).toEqual({ left: 0 });
    await expect(fetch(`${s.url}/health`)).rejects.toThrow();
    for (const w of [live.ws, other.ws]) w.terminate();
  });

  it("with a rollout left open, closes when the grace has passed and counts what was left", async () => {
    const s = await start({ drainGraceMs: 100 });
    const a = await create(s);
    expect(s.activeRollouts).toBe(1);
    expect(await s.drain()).toEqual({ left: 1 });
    // closed: the open rollout is gone with the server (a client migrates it)
    await expect(
      fetch(`${s.url}/v1/rollouts/${a.rolloutId}/call`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-rollout-token": a.token },
        body: JSON.stringify({ name: "add", arguments: { a: 1, b: 1 } }),
      }),
    ).rejects.toThrow();
  });

  it("close() during a drain closes at once; a drain with nothing live closes at once; drain() is idempotent", async () => {
    const s = await start({ drainGraceMs: 3_600_000 });
    await create(s);
    const d = s.drain();
    expect(s.drain()).toBe(d);
    await s.close();
    expect(await d).toEqual({ left: 1 });

    const idle = await start({ drainGraceMs: 3_600_000 });
    expect(await idle.drain()).toEqual({ left: 0 });
    await expect(fetch(`${idle.url}/health`)).rejects.toThrow();
  });

  it("gives the grace per call: drain(ms) overrides drainGraceMs", async () => {
    const s = await start({ drainGraceMs: 3_600_000 });
    await create(s);
    expect(await s.drain(50)).toEqual({ left: 1 });
  });
});

describe("/metrics for Prometheus on the plain path", () => {
  // the Accept header Prometheus' scraper builds from its scrape_protocols (scrape/scrape.go acceptHeader,
  // config.ScrapeProtocolsHeaders): 2.x defaults, 3.x defaults (with the escaping parameter), proto-first (native
  // histograms), and an OpenMetrics-only configuration
  const prometheusAccepts = [
    "application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,application/openmetrics-text;version=0.0.1;q=0.5,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
    "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2",
    "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.6,*/*;q=0.5",
  ];

  it("Prometheus' Accept headers get the text format; curl, browsers and JSON clients get JSON", () => {
    for (const a of prometheusAccepts) expect(wantsPrometheusText("", a), a).toBe(true);
    expect(wantsPrometheusText("format=prometheus", undefined)).toBe(true);
    for (const a of [undefined, "*/*", "application/json", "text/html,application/xhtml+xml,*/*;q=0.8"]) {
      expect(wantsPrometheusText("", a), String(a)).toBe(false);
    }
    expect(wantsPrometheusText("", "application/json, text/plain")).toBe(false);
  });

  it("a scrape of /metrics with Prometheus' Accept parses, and shows benchmax_draining 0 while serving", async () => {
    const s = await start();
    for (const accept of prometheusAccepts) {
      const r = await fetch(`${s.url}/metrics`, { headers: { accept } });
      expect(r.status).toBe(200);
      expect(r.headers.get("content-type")).toBe("text/plain; version=0.0.4");
      const families = parsePrometheusTextFormat(await r.text()) as Array<{
        name: string;
        metrics: Array<{ value: string }>;
      }>;
      expect(families.find((f) => f.name === "benchmax_draining")?.metrics).toEqual([{ value: "0" }]);
      expect(families.some((f) => f.name === "benchmax_active_rollouts")).toBe(true);
    }
    expect((await http(s, "GET", "/metrics")).body).toMatchObject({ draining: false });
  });
});
