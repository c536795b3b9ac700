import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RolloutResult } from "@benchmax/core";
import { serveEnv } from "@benchmax/server";
import { calcEnv } from "@benchmax/server/testing";
import { describe, expect, it } from "vitest";
import { runShimUnittest } from "./run-process.test-util.js";

const hasPython = spawnSync("python3", ["--version"], { encoding: "utf8" }).status === 0;
if (!hasPython) console.warn("skipping the trainer-step recording test: python3 is not installed");

describe.skipIf(!hasPython)("the trainer step from the Python side lands in a serve --record recording", () => {
  it("the client's reset/start, the cookbook's batch index and SkyRL's text env each tag their rollouts", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bmx-step-"));
    const server = await serveEnv(calcEnv(), { token: "step-token", record: join(dir, "run") });
    try {
      const r = await runShimUnittest(["-v", "test_trainer_step"], {
        BENCHMAX_TEST_ENDPOINT: server.url,
        BENCHMAX_TEST_TOKEN: "step-token",
      });
      if (r.code !== 0) console.error(r.out);
      expect(r.code).toBe(0);
      expect(r.out).toMatch(/Ran 5 tests/);
      expect(r.out).not.toMatch(/skipped/);
    } finally {
      await server.close(); // writes what is queued
    }
    const lines = readFileSync(join(dir, "run", "results.jsonl"), "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as RolloutResult);
    rmSync(dir, { recursive: true, force: true });
    const byStep = (s: number) => lines.filter((l) => l.trainerStep === s);
    // SkyRL-style reset + step (global step 7), start + reward with a group (8), SkyRL's text env (11)
    expect(byStep(7).map((l) => [l.taskId, l.reward])).toEqual([["t2", 1]]);
    expect(byStep(8).map((l) => [l.taskId, l.reward, l.groupId])).toEqual([["t1", 0, "g-8"]]);
    expect(byStep(11).map((l) => [l.taskId, l.reward])).toEqual([["t2", 1]]);
    // the cookbook's batch 2: a group of two set up by fork, both tagged, one right and one wrong
    expect(
      byStep(2)
        .map((l) => l.reward)
        .sort(),
    ).toEqual([0, 1]);
    expect(lines.filter((l) => l.trainerStep === undefined)).toEqual([]);
  }, 120_000);
});
