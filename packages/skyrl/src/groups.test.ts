import { connectRemoteEnv, serveEnv } from "@benchmax/server";
import { calcEnv } from "@benchmax/server/testing";
import { describe, expect, it } from "vitest";
import { envGroupBuilders } from "./groups.js";

const call = (name: string, args: object) => `<tool_call>\n${JSON.stringify({ name, arguments: args })}\n</tool_call>`;

describe("envGroupBuilders (on core's Episode engine)", () => {
  it("makes G forked episodes of a task and counts every reward once", async () => {
    const env = calcEnv();
    const tasks = await env.capabilities!.tasks!.loadTasks!();
    const [b] = envGroupBuilders(env, tasks.slice(1, 2), { groupSize: 3 });
    const eps = await b!.makeEnvs();
    expect(eps).toHaveLength(3);
    expect(eps[0]!.initialObservation()[1]).toEqual({ role: "user", content: "What is 10 + 7?" });
    const s = await eps[0]!.step(`${call("note", { text: "x" })}${call("add", { a: 10, b: 7 })}`);
    expect(s.done).toBe(false);
    expect(s.observations.map((o) => o.content)).toEqual(["x", "17"]);
    // forked episodes keep their own state
    expect((await eps[1]!.step(call("note", { text: "y" }))).observations[0]!.content).toBe("y");
    const ends = await Promise.all(eps.map((e, i) => e.step(`<answer>${i === 2 ? 0 : 17}</answer>`)));
    expect(ends.map((e) => [e.done, e.reward])).toEqual([
      [true, 1],
      [true, 1],
      [true, 0],
    ]);
    const group = await b!.computeGroupRewards(eps);
    expect(group).toEqual([
      { reward: 0, rewards: { exact_match: 1, rank: 0 } },
      { reward: 0, rewards: { exact_match: 1, rank: 1 } },
      { reward: 0, rewards: { exact_match: 0, rank: 2 } },
    ]);
    // the cookbook's total: sum of step rewards + group reward
    const totals = eps.map((_, i) => ends[i]!.reward + group[i]!.reward);
    expect(totals).toEqual([1, 1, 0]);
    expect(b!.loggingTags()).toEqual(["calc"]);
    await b!.cleanup();
    await b!.cleanup();
  });

  it("honours the env's own action syntax (parseActions)", async () => {
    const env = calcEnv({ customActions: true });
    const [b] = envGroupBuilders(env, [{ id: "t", prompt: "What is 2 + 3?", groundTruth: "5" }], { groupSize: 1 });
    const [ep] = await b!.makeEnvs();
    const s = await ep!.step("<add>2 3</add>");
    expect(s.observations.map((o) => o.content)).toEqual(["5"]);
    expect((await ep!.step("<answer>5</answer>")).reward).toBe(1);
  });

  it("works the same over a remote env server, ending at max turns without running the last calls", async () => {
    const server = await serveEnv(calcEnv());
    const env = await connectRemoteEnv([server.url]);
    try {
      const [b] = envGroupBuilders(env, [{ id: "t1", prompt: "What is 2 + 3?", groundTruth: "5" }], {
        groupSize: 2,
        maxTurns: 1,
      });
      const eps = await b!.makeEnvs();
      const ends = await Promise.all(eps.map((e) => e.step(call("add", { a: 2, b: 3 }))));
      expect(ends.map((e) => e.done)).toEqual([true, true]);
      expect(ends[0]!.metrics.truncated).toBe(1);
      expect(ends[0]!.observations).toEqual([]);
      const r = await b!.computeGroupRewards(eps);
      expect(r.map((x) => x.rewards.rank)).toEqual([0, 1]);
      await b!.cleanup();
      expect(server.metrics.snapshot(0)).toMatchObject({ rolloutsCreated: 2, rolloutsReleased: 2, toolCalls: 0 });
    } finally {
      await env.close();
      await server.close();
    }
  });

  it("cleanup releases the rollouts of an abandoned group", async () => {
    const server = await serveEnv(calcEnv());
    const env = await connectRemoteEnv([server.url]);
    try {
      const [b] = envGroupBuilders(env, [{ id: "t1", prompt: "x", groundTruth: "5" }], { groupSize: 4 });
      await b!.makeEnvs();
      expect(server.metrics.snapshot(0)).toMatchObject({ rolloutsCreated: 4, rolloutsReleased: 0 });
      await b!.cleanup();
      expect(server.metrics.snapshot(0)).toMatchObject({ rolloutsCreated: 4, rolloutsReleased: 4 });
    } finally {
      await env.close();
      await server.close();
    }
  });
});
