/**
 * Replay cannot be used to dodge a 0 (issue 41, item 6): code calls that are cheap live but sleep only when the
 * scorer replays them on test cases 2–3 run under the live call's limits, and the time they take is the model's
 * cost. A reward whose replay runs out of the reward's time scores 0 with a reason (completed, not env_error), while
 * a victim rollout on the same env scores 1 within twice its time alone.
 */
import { type AssistantMessage, type Policy, runRollout } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExcelTask } from "./dataset.js";
import { createExcelEnv } from "./index.js";
import { replayDeadline } from "./reward.js";
import { jailAvailable } from "./sandbox/jail.js";

const jail = jailAvailable();
if (!jail.ok)
  console.warn(`[env-excel] skipping the replay-budget tests: run_code's jail cannot be built (${jail.reason})`);

const env = createExcelEnv({ runCodeTimeoutMs: 4000 });
let task: ExcelTask;
beforeAll(async () => {
  [task] = (await env.capabilities!.tasks!.loadTasks!()).filter((t) => t.id === "101");
});
afterAll(() => env.close());

/** A run_code body that sleeps `ms` only where B2 is not case 1's (446.55): free live, slow when replayed. */
const sleepOnReplay = (ms: number) =>
  `const ws = workbook.worksheets[0];\nif (${ms} > 0 && ws.getCell('B2').value !== 446.55) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ${ms});\nws.getCell('B8').value = { formula: 'SUM(B2:B7)' };`;

function coder(bodies: string[]): Policy {
  return {
    name: "replay-dodger",
    async act({ turn }) {
      const message: AssistantMessage =
        turn === 0
          ? {
              role: "assistant",
              content: null,
              tool_calls: bodies.map((code, i) => ({
                id: `c${i}`,
                type: "function",
                function: { name: "run_code", arguments: JSON.stringify({ code }) },
              })),
            }
          : { role: "assistant", content: "done" };
      return { message };
    },
  };
}

async function timed<R>(f: () => Promise<R>): Promise<[R, number]> {
  const t0 = performance.now();
  const r = await f();
  return [r, performance.now() - t0];
}

describe("replayDeadline", () => {
  it("keeps a quarter of the reward's time (at least 5 s) for scoring what was replayed", () => {
    expect(replayDeadline(1000 + 600_000, 1000)).toBe(1000 + 450_000);
    expect(replayDeadline(1000 + 12_000, 1000)).toBe(1000 + 7_000);
    expect(replayDeadline(1000 + 3_000, 1000)).toBe(1000);
    // no limit given: the core default (600 s)
    expect(replayDeadline(undefined, 0)).toBe(450_000);
  });
});

describe.skipIf(!jail.ok)("replay from the model's side", () => {
  it("calls that sleep only when replayed score 0 with a reason (not env_error); a victim scores 1 within 2× alone", async () => {
    // the victim does the task with run_code too: its reward replays its call on cases 2 and 3
    const victim = () => runRollout(env, task, coder([sleepOnReplay(0)]), { maxTurns: 3, rewardTimeoutMs: 24_000 });
    const [alone, aloneMs] = await timed(victim);
    expect(alone.rewards).toEqual({ pass: 1, soft: 1 });
    // 8 calls × 3 s on each of cases 2 and 3 = 48 s of replay against a 24 s reward limit; each call is within the
    // live per-call limit (4 s)
    const attack = coder(Array.from({ length: 8 }, () => sleepOnReplay(3000)));
    const [[r, rMs], [v, vMs]] = await Promise.all([
      timed(() => runRollout(env, task, attack, { maxTurns: 3, rewardTimeoutMs: 24_000 })),
      timed(victim),
    ]);
    console.info(
      `[env-excel] replay dodge: attacker ${(rMs / 1000).toFixed(1)} s; victim ${(vMs / 1000).toFixed(1)} s vs ${(aloneMs / 1000).toFixed(1)} s alone`,
    );
    expect(r.error).toBeUndefined();
    expect(r.outcome).toBe("completed");
    expect(r.toolErrors).toBe(0); // live, every call ran at once
    expect(r.rewards).toEqual({ pass: 0, soft: expect.closeTo(1 / 3, 6) });
    const cases = r.metadata?.cases as Array<{ case: number; pass: boolean; message: string }>;
    expect(cases[0]!.pass).toBe(true);
    expect(cases[1]!.message).toMatch(
      /scored 0: replaying call #\d+ \(run_code\) on test case 2 input ran out of the reward's time/,
    );
    expect(cases[2]!.message).toMatch(/scored 0: not replayed: /);
    expect(JSON.stringify(r.explain)).toMatch(/ran out of the reward's time/);
    expect(v.rewards).toEqual({ pass: 1, soft: 1 });
    expect(vMs).toBeLessThan(2 * aloneMs);
  }, 180_000);

  it("a replayed call runs under the live per-call limit: past it the case scores 0 with the time-out", async () => {
    const r = await runRollout(env, task, coder([sleepOnReplay(6000)]), { maxTurns: 3 });
    expect(r.outcome).toBe("completed");
    expect(r.rewards?.pass).toBe(0);
    const cases = r.metadata?.cases as Array<{ message: string }>;
    expect(cases[1]!.message).toMatch(/replaying call #1 \(run_code\) failed: .*timed out after 4000 ms/);
  }, 120_000);
});
