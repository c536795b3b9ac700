import { request } from "node:http";
import { Episode, isInfraError } from "@benchmax/core";
import { afterEach, describe, expect, it } from "vitest";
import { tokenIdentity } from "./auth.js";
import { connectRemoteEnv } from "./connect.js";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { calcEnv, openWsSession } from "./test-env.js";

/**
 * Fair admission from the clients' side, on a real server on 127.0.0.1: a client is the token it presents (never its
 * source address), and a client within its fair share gets a slot at once, taken from the client most over its share.
 * Clients spread their requests over 127.0.0.2… (Linux routes all of 127/8 to lo).
 */

const OPERATOR = "operator-token-fair-0123456789";
const GREEDY = "client-token-greedy-0123456789";
const VICTIM = "client-token-victim-0123456789";
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });
const GOLD: Record<string, string> = { t1: "5", t2: "17", t3: "2" };

interface Res {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
  ms: number;
}

/** One request on a fresh connection from source address `from`. */
function call(
  base: string,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string>,
  from = "127.0.0.1",
): Promise<Res> {
  const u = new URL(base);
  const text = body === undefined ? undefined : JSON.stringify(body);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        agent: false,
        localAddress: from,
        headers: { "content-type": "application/json", ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const t = Buffer.concat(chunks).toString("utf8");
          let json: any;
          try {
            json = JSON.parse(t);
          } catch {
            json = t;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json, ms: performance.now() - t0 });
        });
      },
    );
    req.on("error", reject);
    req.end(text);
  });
}

/** A client: its token, and the source addresses it spreads its requests over (round robin). */
function client(base: string, token: string, addresses = ["127.0.0.1"]) {
  let next = 0;
  const from = () => addresses[next++ % addresses.length]!;
  return {
    create: (taskId = "t1") => call(base, "POST", "/v1/rollouts", { taskId }, bearer(token), from()),
    touch: (r: { rolloutId: string; token: string }) =>
      call(
        base,
        "POST",
        `/v1/rollouts/${r.rolloutId}/call`,
        { name: "add", arguments: { a: 2, b: 3 } },
        { ...bearer(token), "x-rollout-token": r.token },
        from(),
      ),
    reward: (r: { rolloutId: string; token: string; taskId: string }) =>
      call(
        base,
        "POST",
        `/v1/rollouts/${r.rolloutId}/reward`,
        { completion: `<answer>${GOLD[r.taskId]}</answer>` },
        { ...bearer(token), "x-rollout-token": r.token },
        from(),
      ),
  };
}

const servers: EnvServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function start(opts: Parameters<typeof serveEnv>[1]) {
  const s = await serveEnv(calcEnv(), opts);
  servers.push(s);
  return s;
}

const addresses = (n: number, from = 2) => Array.from({ length: n }, (_, i) => `127.0.0.${from + i}`);

describe("fair admission by token", () => {
  it("a greedy client holding every slot and touching each one cannot keep a second client out", async () => {
    const s = await start({ token: OPERATOR, clientTokens: [GREEDY, VICTIM], maxRollouts: 8 });
    // the greedy client, over 8 source addresses, fills the server
    const greedy = client(s.url, GREEDY, addresses(8));
    const held = [];
    for (let i = 0; i < 8; i++) {
      const r = await greedy.create(`t${(i % 3) + 1}`);
      expect(r.status, JSON.stringify(r.json)).toBe(201);
      held.push(r.json);
    }
    expect((await greedy.create()).status).toBe(503);
    const victim = client(s.url, VICTIM, ["127.0.0.20"]);
    // rounds of "every second": the greedy touches each of its rollouts, then the victim asks. The first ask after a
    // full round of touches (nothing idle) gets its slot: no idle window to wait out.
    for (const r of held) expect((await greedy.touch(r)).status).toBe(200);
    const first = await victim.create("t2");
    expect(first.status, JSON.stringify(first.json)).toBe(201);
    console.log(
      `[fair] the victim's first create, with every slot held and just touched: 201 in ${first.ms.toFixed(1)} ms`,
    );
    expect(s.metrics.rolloutsReclaimed).toBe(1);
    // the victim's rollout scores right while the greedy keeps touching its own
    const touches = await Promise.all(held.map((r) => greedy.touch(r)));
    expect((await victim.touch(first.json)).status).toBe(200);
    const reward = await victim.reward(first.json);
    expect(reward.status).toBe(200);
    expect(reward.json.reward).toBe(1);
    // exactly one of the greedy's rollouts is gone, with why: an infrastructure outcome, never a reward
    const gone = touches.filter((t) => t.status !== 200);
    expect(gone).toHaveLength(1);
    expect(gone[0]!.status).toBe(404);
    expect(gone[0]!.json.error.code).toBe("ROLLOUT_RECLAIMED");
    expect(gone[0]!.json.error.type).toBe("infra_error");
    expect(gone[0]!.json.error.message).toMatch(/reclaimed: the server was full .* fair share .*not a reward/);
    // the one taken was the least recently used: the first touched in that round (all were touched in order)
    expect(touches[0]!.status).toBe(404);
    // the greedy, over its share (2 clients: 4 each), gets 503 + Retry-After, naming its share
    const again = await greedy.create();
    expect(again.status).toBe(503);
    expect(again.headers["retry-after"]).toBe("1");
    expect(again.json.error.message).toMatch(/holds 7, and 8 would be over its fair share of 4/);
    // the greedy's other rollouts still score right
    for (const r of held.slice(1)) expect((await greedy.reward(r)).json.reward).toBe(1);
  });

  it("the victim keeps getting slots up to its fair share, one admission decision each, over HTTP and WebSocket", async () => {
    const s = await start({ token: OPERATOR, clientTokens: [VICTIM], maxRollouts: 6 });
    // here the greedy is the operator token's holder (the case): many trainer processes, one client
    const greedy = client(s.url, OPERATOR, addresses(6));
    const held = [];
    for (let i = 0; i < 6; i++) held.push((await greedy.create()).json);
    const victim = client(s.url, VICTIM, addresses(3, 30));
    const mine = [];
    for (let k = 0; k < 2; k++) {
      for (const r of held) await greedy.touch(r);
      const c = await victim.create("t3");
      expect(c.status, JSON.stringify(c.json)).toBe(201);
      mine.push(c.json);
    }
    // the third over WebSocket (token in `?token=`, as OpenEnv's clients send it): the same client, its share is 3
    const { ws, ask: send } = await openWsSession(s.url, { path: `/ws?token=${VICTIM}`, localAddress: "127.0.0.40" });
    try {
      const reset = await send({ type: "reset", data: { task_id: "t1" } });
      expect(reset.type, JSON.stringify(reset)).toBe("observation");
      const step = await send({ type: "step", data: { type: "message", content: "<answer>5</answer>" } });
      expect(step.data.reward).toBe(1);
    } finally {
      ws.close();
    }
    // the victim scored on HTTP too
    for (const r of mine) expect((await victim.reward(r)).json.reward).toBe(1);
    expect(s.metrics.rolloutsReclaimed).toBe(3);
  });

  it("one token over many 127.x source addresses is one client (per-client cap and fair share)", async () => {
    const s = await start({ token: OPERATOR, clientTokens: [GREEDY, VICTIM], maxRollouts: 8, maxRolloutsPerClient: 3 });
    const spread = client(s.url, GREEDY, addresses(8));
    const codes = [];
    for (let i = 0; i < 8; i++) codes.push((await spread.create()).status);
    expect(codes).toEqual([201, 201, 201, 429, 429, 429, 429, 429]);
    const refused = await spread.create();
    expect(refused.json.error.code).toBe("CLIENT_LIMIT");
    // the identity in the message is a hash of the token, never the token
    expect(refused.json.error.message).toContain(tokenIdentity(GREEDY));
    expect(refused.json.error.message).not.toContain(GREEDY);
    // another token from the same address is another client
    const other = client(s.url, VICTIM, ["127.0.0.2"]);
    for (let i = 0; i < 3; i++) expect((await other.create()).status).toBe(201);
  });

  it("without a token, clients are told apart by source address", async () => {
    const s = await start({ maxRollouts: 8, maxRolloutsPerClient: 1 });
    const create = (from: string) => call(s.url, "POST", "/v1/rollouts", { taskId: "t1" }, {}, from);
    expect((await create("127.0.0.2")).status).toBe(201);
    expect((await create("127.0.0.2")).status).toBe(429);
    expect((await create("127.0.0.3")).status).toBe(201);
  });

  it("the reclaimed holder's episode ends as infra_error with the reason, never a reward of 0", async () => {
    const s = await start({ token: OPERATOR, clientTokens: [GREEDY, VICTIM], maxRollouts: 2 });
    const env = await connectRemoteEnv([s.url], { token: GREEDY });
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    const eps = [];
    for (let i = 0; i < 2; i++) {
      eps.push(await Episode.start(env, tasks[0]!, { rolloutId: `greedy-${i}`, toolFormat: "hermes" }));
    }
    await eps[1]!.callTool({ name: "add", arguments: { a: 1, b: 1 } });
    // eps[0] is now the least recently used: the victim's create takes its slot
    const v = await call(s.url, "POST", "/v1/rollouts", { taskId: "t2" }, bearer(VICTIM));
    expect(v.status).toBe(201);
    const lost = await eps[0]!.callTool({ name: "add", arguments: { a: 1, b: 1 } }).catch((e: unknown) => e);
    const end = await eps[0]!.finish().catch((e: unknown) => e);
    const outcome = eps[0]!.outcome;
    expect(outcome, `${String(lost)} / ${JSON.stringify(end)}`).toBe("infra_error");
    expect(eps[0]!.result().reward).toBeUndefined();
    expect(eps[0]!.result().error).toMatch(/reclaimed/);
    expect(isInfraError(lost) || outcome === "infra_error").toBe(true);
    // the greedy's other episode scores right
    await eps[1]!.step("<answer>5</answer>");
    expect(eps[1]!.result().reward).toBe(1);
    for (const e of eps) await e.close();
    await env.close?.();
  });
});
