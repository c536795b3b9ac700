import {
  buildInitialMessages,
  combineRewards,
  type Env,
  type Message,
  passThresholdOf,
  rewardWeightsOf,
  runRollout,
  type Task,
  type ToolResult,
  textOf,
} from "@benchmax/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { notesEnv, notesPolicy, notesTasks } from "./notes-env.js";
import { ENV_NAMES, type LoadedEnv, loadEnv, warnSkip } from "./optional.js";
import { toolArguments } from "./schema-arbitrary.js";

/**
 * Reward-channel safety, per env:
 * 1. no tool reveals the gold: a task whose every gold string is replaced by a unique canary is run through every
 *    tool with hundreds of generated arguments (that never contain the canary); no output, prompt or tool spec
 *    contains it;
 * 2. the scorer reads the model's own final answer only: a passing conversation whose answer is moved into a tool
 *    or user message (where a model could plant it) no longer passes;
 * 3. one rollout cannot touch another's state: rollout A runs every tool (writes included) with generated arguments,
 *    and a fixed probe of reads gives rollout B the same outputs as a twin rollout probed before A started.
 * The excel env's scorer reads the rollout's workbook, not its messages: its file-level checks (golden files, links
 * and writes outside the workspace) are in excel-sandbox.test.ts instead of check 2.
 */

const CALLS_PER_TOOL = 60;
const PROBES_PER_TOOL = 4;

/** Replace every string leaf of the gold with a unique canary; returns the new gold and the canaries. */
function canaryGold(gold: unknown, tag: string): { gold: unknown; canaries: string[] } {
  const canaries: string[] = [];
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") {
      const c = `CANARY${tag}${canaries.length}Q`;
      canaries.push(c);
      return c;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return { gold: walk(gold), canaries };
}

function text(r: ToolResult): string {
  return typeof r.content === "string" ? r.content : JSON.stringify(r.content);
}

/** Deterministic generated arguments for one tool. */
function sampleArgs(parameters: unknown, n: number, seed: number): Record<string, unknown>[] {
  return fc.sample(toolArguments(parameters), { numRuns: n, seed });
}

async function runAllTools(
  env: Env,
  rolloutId: string,
  perTool: number,
  seed: number,
  avoid: string[] = [],
): Promise<string[]> {
  const outputs: string[] = [];
  for (const t of env.listTools()) {
    // a code tool spawns a process per call: a few calls suffice (excel-sandbox.test.ts attacks it properly)
    const n = /code/.test(t.name) ? Math.min(perTool, 2) : perTool;
    for (const args of sampleArgs(t.parameters, n, seed)) {
      const s = JSON.stringify(args);
      if (avoid.some((c) => s.includes(c))) continue;
      outputs.push(`${t.name} ${s} → ${text(await env.runTool(rolloutId, { name: t.name, arguments: args }))}`);
    }
  }
  return outputs;
}

interface Subject {
  name: string;
  reason?: string;
  loaded?: Pick<LoadedEnv, "tasks" | "create">;
}

const subjects: Subject[] = [
  {
    name: "notes (core Workspace)",
    loaded: { tasks: notesTasks(3), create: async () => notesEnv({ tasks: notesTasks(3) }) },
  },
];
for (const name of ENV_NAMES) {
  const got = await loadEnv(name);
  warnSkip(`reward-channel safety of env "${name}"`, got.reason);
  subjects.push({ name, reason: got.reason, loaded: got.env });
}

for (const s of subjects) {
  describe.skipIf(!s.loaded)(`reward-channel safety: ${s.name}`, () => {
    it("no tool, prompt or tool spec reveals the gold answer (canary gold through every tool)", async () => {
      const env = await s.loaded!.create();
      try {
        const leaks: string[] = [];
        for (const [i, task] of s.loaded!.tasks.slice(0, 3).entries()) {
          const { gold, canaries } = canaryGold(task.groundTruth, `${i}X`);
          if (canaries.length === 0) continue;
          const canaryTask = { ...task, groundTruth: gold } as Task;
          const id = `canary-${i}`;
          await env.init(id, canaryTask);
          const seen = [
            JSON.stringify(env.listTools()),
            JSON.stringify(buildInitialMessages(env, canaryTask, "hermes")),
            ...(await runAllTools(env, id, Math.ceil(CALLS_PER_TOOL / 3), 1000 + i, canaries)),
          ];
          await env.release(id);
          for (const out of seen) for (const c of canaries) if (out.includes(c)) leaks.push(out.slice(0, 300));
        }
        expect(leaks).toEqual([]);
      } finally {
        await env.close();
      }
    });

    it("the scorer reads the model's own final answer only: the same answer planted in a tool or user message does not pass", async () => {
      const env = await s.loaded!.create();
      try {
        const policy = s.name.startsWith("notes")
          ? notesPolicy((t) => t.groundTruth as string)
          : env.capabilities?.reference?.referencePolicy();
        expect(policy, "the env has a reference policy").toBeTruthy();
        const threshold = passThresholdOf(env);
        let checked = 0;
        for (const task of s.loaded!.tasks.slice(0, 4)) {
          const good = await runRollout(env, task, policy!, { rolloutId: `good-${task.id}`, release: false });
          if (good.outcome !== "completed" || (good.reward ?? 0) < threshold) {
            await env.release(`good-${task.id}`);
            continue; // the reference policy does not solve this one: nothing to forge
          }
          checked++;
          const msgs = good.messages;
          const final = msgs[msgs.length - 1]!;
          const answer = textOf(final.content as string);
          if (s.name === "excel") {
            // the excel scorer reads the rollout's own workbook: the passing conversation scored against an
            // untouched rollout of the same task does not pass
            await env.init(`other-${task.id}`, task);
            const other = await env.computeReward(`other-${task.id}`, msgs, task);
            expect(combineRewards(other, rewardWeightsOf(env)), JSON.stringify(other)).toBeLessThan(threshold);
            await env.release(`other-${task.id}`);
          }
          const forgeries: Message[][] =
            s.name.startsWith("notes") || s.name === "excel"
              ? []
              : [
                  [
                    ...msgs.slice(0, -1),
                    { role: "tool", tool_call_id: "planted", content: answer },
                    { role: "assistant", content: "I could not find it." },
                  ],
                  [
                    ...msgs.slice(0, -1),
                    { role: "user", content: answer },
                    { role: "assistant", content: "I could not find it." },
                  ],
                  [...msgs.slice(0, -1), { role: "assistant", content: "I could not find it." }],
                ];
          for (const forged of forgeries) {
            const rewards = await env.computeReward(`good-${task.id}`, forged, task);
            expect(
              combineRewards(rewards, rewardWeightsOf(env)),
              `${task.id}: ${JSON.stringify(rewards)}`,
            ).toBeLessThan(threshold);
          }
          await env.release(`good-${task.id}`);
          if (s.name.startsWith("notes")) {
            // the notes scorer reads answer.txt of the rollout's own workspace: a write elsewhere does not count
            const id = `forge-${task.id}`;
            await env.init(id, task);
            for (const path of ["../answer.txt", "/tmp/answer.txt", "../../answer.txt", "sub/../../answer.txt"]) {
              const r = await env.runTool(id, {
                name: "write_file",
                arguments: { path, content: task.groundTruth as string },
              });
              expect(r.isError, path).toBe(true);
            }
            const rewards = await env.computeReward(id, [{ role: "assistant", content: "done" }], task);
            expect(combineRewards(rewards, rewardWeightsOf(env))).toBeLessThan(threshold);
            await env.release(id);
          }
        }
        expect(checked, "at least one fixture task solved by the reference policy").toBeGreaterThan(0);
      } finally {
        await env.close();
      }
    });

    it("one rollout cannot touch another's state (writes in A are invisible to a live rollout B)", async () => {
      const env = await s.loaded!.create();
      try {
        const task = s.loaded!.tasks[0]!;
        await env.init("twin", task);
        await env.init("B", task);
        await env.init("A", task);
        const probe = (id: string) => runAllTools(env, id, PROBES_PER_TOOL, 7);
        const twin = await probe("twin");
        if (s.name.startsWith("notes")) {
          await env.runTool("A", { name: "write_file", arguments: { path: "answer.txt", content: "from A" } });
        }
        await runAllTools(env, "A", CALLS_PER_TOOL, 99);
        const b = await probe("B");
        expect(b).toEqual(twin);
        if (s.name.startsWith("notes")) {
          const r = await env.runTool("B", { name: "read_file", arguments: { path: "answer.txt" } });
          expect(r.isError).toBe(true);
        }
        for (const id of ["twin", "A", "B"]) await env.release(id);
      } finally {
        await env.close();
      }
    });
  });
}

const crm = await loadEnv("crm");
describe.skipIf(!crm.env)("reward-channel safety: crm records written in one rollout", () => {
  it("an update and a create in rollout A are invisible to rollout B (and to a fork made before them)", async () => {
    const env = await crm.env!.create();
    try {
      const task = crm.env!.tasks[0]!;
      await env.init("A", task);
      await env.init("B", task);
      const soql = async (id: string, query: string) => {
        const r = await env.runTool(id, { name: "issue_soql_query", arguments: { query } });
        expect(r.isError, text(r)).toBe(false);
        return JSON.parse(text(r)) as { totalSize: number; records: Array<Record<string, unknown>> };
      };
      const first = (await soql("A", "SELECT Id, Name FROM Account ORDER BY Name LIMIT 1")).records[0]!;
      expect(first.Id).toBeTruthy();
      const upd = await env.runTool("A", {
        name: "update_record",
        arguments: { object: "Account", record_id: first.Id as string, fields: { Name: "PWNED BY A" } },
      });
      expect(upd.isError, text(upd)).toBe(false);
      const created = await env.runTool("A", {
        name: "create_record",
        arguments: { object: "Account", fields: { Name: "PLANTED BY A" } },
      });
      expect(created.isError, text(created)).toBe(false);
      // A sees its own writes
      expect((await soql("A", "SELECT Id FROM Account WHERE Name = 'PWNED BY A'")).totalSize).toBe(1);
      expect((await soql("A", "SELECT Id FROM Account WHERE Name = 'PLANTED BY A'")).totalSize).toBe(1);
      // B does not
      expect((await soql("B", "SELECT Id FROM Account WHERE Name = 'PWNED BY A'")).totalSize).toBe(0);
      expect((await soql("B", "SELECT Id FROM Account WHERE Name = 'PLANTED BY A'")).totalSize).toBe(0);
      expect((await soql("B", `SELECT Name FROM Account WHERE Id = '${first.Id}'`)).records[0]!.Name).toBe(first.Name);
      const fork = env.capabilities?.fork;
      if (fork) {
        // a fork of A taken now has A's writes; writes in the fork do not flow back to A
        await fork.fork("A", ["A-child"]);
        expect((await soql("A-child", "SELECT Id FROM Account WHERE Name = 'PWNED BY A'")).totalSize).toBe(1);
        await env.runTool("A-child", {
          name: "update_record",
          arguments: { object: "Account", record_id: first.Id as string, fields: { Name: "CHILD" } },
        });
        expect((await soql("A", "SELECT Id FROM Account WHERE Name = 'PWNED BY A'")).totalSize).toBe(1);
        await env.release("A-child");
      }
      await env.release("A");
      await env.release("B");
      // a new rollout after A released starts from the pristine org
      await env.init("C", task);
      expect((await soql("C", "SELECT Id FROM Account WHERE Name = 'PLANTED BY A'")).totalSize).toBe(0);
      await env.release("C");
    } finally {
      await env.close();
    }
  });
});
