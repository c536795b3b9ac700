import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RolloutResult, Task } from "@benchmax/core";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tagsOf } from "./record.js";
import { type EnvServer, serveEnv } from "./serve-env.js";
import { calcEnv } from "./test-env.js";

const GOLD = "5";
const tasks: Task<string>[] = [
  { id: "t1", prompt: "What is 2 + 3?", groundTruth: GOLD, meta: { level: "easy" } },
  { id: "t2", prompt: "What is 10 + 7?", groundTruth: "17", meta: { level: "hard" } },
];

let dir: string;
let s: EnvServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "benchmax-record-"));
  const env = calcEnv();
  // the env explains its reward (the gold beside the answer): it goes to the recording, never to the client
  env.capabilities!.explain = {
    explainReward: (_id, messages, task) => ({
      extracted: String(messages.at(-1)?.content ?? ""),
      gold: String(task.groundTruth),
    }),
  };
  s = await serveEnv(env, { tasks, record: join(dir, "run") });
});
afterAll(async () => {
  await s.close();
  rmSync(dir, { recursive: true, force: true });
});

async function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(s.url + path, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
  return { status: r.status, text: await r.text() };
}

/** A SkyRL-style client: one rollout per sample, tagged with the trainer's global step; tool call, reward, release. */
async function skyrlEpisode(taskId: string, step: number, answer: string) {
  const created = JSON.parse((await post("/v1/rollouts", { taskId, metadata: { global_step: step } })).text);
  const h = { "x-rollout-token": created.token };
  await post(`/v1/rollouts/${created.rolloutId}/call`, { name: "add", arguments: { a: 2, b: 3 } }, h);
  await post(`/v1/rollouts/${created.rolloutId}/call`, { name: "no_such_tool", arguments: {} }, h);
  const reward = await post(
    `/v1/rollouts/${created.rolloutId}/reward`,
    {
      messages: [
        { role: "user", content: "q" },
        { role: "assistant", content: `<answer>${answer}</answer>` },
      ],
    },
    h,
  );
  await post(`/v1/rollouts/${created.rolloutId}/release`, {}, h);
  return { id: created.rolloutId as string, reward: reward.text };
}

describe("serve --record and Prometheus /metrics", () => {
  it("reads the trainer step and group from a create request", () => {
    expect(tagsOf({ metadata: { global_step: 7 } })).toEqual({ step: 7 });
    expect(tagsOf({ trainer_step: "3", group_id: "g1" })).toEqual({ step: 3, group: "g1" });
    expect(tagsOf({ metadata: { step: "x" } })).toBeUndefined();
  });

  it("records every finished rollout from the rollout API and OpenEnv, tagged with step and group; the gold stays out of every answer", async () => {
    const answers: string[] = [];
    for (const [i, a] of ["5", "4", "5", "5"].entries())
      answers.push((await skyrlEpisode("t1", 1 + (i >> 1), a)).reward);
    // an OpenEnv client: reset, then the final message ends and scores the episode
    const reset = JSON.parse((await post("/reset", { task_id: "t2", metadata: { trainer_step: 2 } })).text);
    const obs = reset.observation;
    const step = await post("/step", {
      action: { type: "message", content: "<answer>17</answer>" },
      episode_id: obs.episode_id,
      rollout_token: obs.rollout_token,
    });
    expect(step.status).toBe(200);
    answers.push(step.text, JSON.stringify(reset));
    // a rollout created and released unscored (a fork parent, an abandoned one) is not a finished rollout
    const idle = JSON.parse((await post("/v1/rollouts", { taskId: "t1" })).text);
    await post(`/v1/rollouts/${idle.rolloutId}/release`, {}, { "x-rollout-token": idle.token });

    await s.recorder!.flush();
    const lines = readFileSync(join(dir, "run", "results.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as RolloutResult);
    expect(lines).toHaveLength(5);
    const api = lines.filter((l) => l.taskId === "t1");
    // lines land in release order, which concurrent releases may swap: compare them as a set
    expect(api.map((l) => JSON.stringify([l.trainerStep, l.groupId, l.reward])).sort()).toEqual(
      [
        [1, "t1@1", 1],
        [1, "t1@1", 0],
        [2, "t1@2", 1],
        [2, "t1@2", 1],
      ]
        .map((x) => JSON.stringify(x))
        .sort(),
    );
    expect(api.find((l) => l.reward === 0)!.explain).toEqual({ extracted: "<answer>4</answer>", gold: GOLD });
    expect(api[0]!.taskMeta).toEqual({ level: "easy" });
    expect(api[0]!.toolCalls).toBe(2);
    const oe = lines.find((l) => l.taskId === "t2")!;
    expect([oe.outcome, oe.reward, oe.trainerStep, oe.taskMeta]).toEqual(["completed", 1, 2, { level: "hard" }]);
    expect(oe.explain?.gold).toBe("17");
    // what the clients got back never names the gold explanation
    for (const a of answers) expect(a).not.toMatch(/"gold"|explain/);
    // run.json and summary.json make it a run dir `benchmax report` reads
    expect(JSON.parse(readFileSync(join(dir, "run", "run.json"), "utf8")).policy).toBe("served");
  });

  it("serves /metrics in the Prometheus text format with bounded labels", async () => {
    const r = await fetch(`${s.url}/metrics?format=prometheus`);
    expect(r.headers.get("content-type")).toMatch(/text\/plain/);
    const text = await r.text();
    const families = parsePrometheusTextFormat(text) as Array<{
      name: string;
      type: string;
      metrics: Array<{
        labels?: Record<string, string>;
        value?: string;
        count?: string;
        buckets?: Record<string, string>;
      }>;
    }>;
    const fam = (name: string) => families.find((f) => f.name === name)!;
    const finished = Object.fromEntries(
      fam("benchmax_rollouts_finished_total").metrics.map((m) => [m.labels!.outcome, Number(m.value)]),
    );
    expect(finished.completed).toBe(5);
    expect(fam("benchmax_reward").type).toBe("HISTOGRAM");
    expect(Number(fam("benchmax_reward").metrics[0]!.count)).toBe(5);
    // parse-prometheus-text-format 1.1.1 drops the labels of labelled histograms (it keeps only their buckets):
    // their families and types come from the parser, their label sets from the `_count` series
    const labelsOf = (name: string, label: string) => {
      expect(fam(name).type).toBe("HISTOGRAM");
      return [...text.matchAll(new RegExp(`^${name}_count\\{([^}]*)\\}`, "gm"))]
        .map((m) => new RegExp(`${label}="([^"]*)"`).exec(m[1]!)?.[1])
        .sort();
    };
    expect(labelsOf("benchmax_reward_component", "component")).toEqual(["exact_match"]);
    // the unknown tool name the client sent is not a label of its own
    expect(labelsOf("benchmax_tool_call_seconds", "tool")).toEqual(["add", "unknown"]);
    expect(labelsOf("benchmax_phase_seconds", "phase")).toEqual(["init", "reward", "step"]);
    expect(fam("benchmax_active_rollouts_live").metrics[0]!.value).toBe("0");
    expect(families.some((f) => f.name.startsWith("benchmax_nodejs_eventloop_lag"))).toBe(true);
    expect(Number(fam("benchmax_recorded_rollouts_total").metrics[0]!.value)).toBe(5);
    // no rollout or task id anywhere in a label
    for (const f of families)
      for (const m of f.metrics) for (const v of Object.values(m.labels ?? {})) expect(v).not.toMatch(/^r_|^t\d/);
    // an error by code
    await post("/v1/rollouts/nope/call", { name: "add" }, { "x-rollout-token": "x" });
    const again = parsePrometheusTextFormat(
      await (await fetch(`${s.url}/metrics?format=prometheus`)).text(),
    ) as typeof families;
    const errs = again.find((f) => f.name === "benchmax_errors_total")!.metrics;
    expect(errs.find((m) => m.labels!.code === "UNKNOWN_ROLLOUT")?.value).toBe("1");
  });
});
