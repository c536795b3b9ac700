import type { Env } from "@benchmax/core";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { ENV_NAMES, importOptional, loadEnv, warnSkip } from "./optional.js";

/**
 * Rows sent to a server are also drawn in the Task shape {id, prompt, groundTruth} (which the server validates by
 * initialising and rendering it).
 * Bad dataset rows (what users bring to `eval --dataset`, `validate`, or a server's `{task}`) get a DatasetError that
 * names what is wrong — never a TypeError or another crash. Rows are built from the field names of every shape the
 * envs accept (plain rows, HotpotQA, FlashRAG, MATH, SpreadsheetBench, CRMArena) with arbitrary values.
 */

const FIELDS = [
  "id",
  "_id",
  "prompt",
  "messages",
  "ground_truth",
  "question",
  "Question",
  "answer",
  "Answer",
  "answers",
  "answer_aliases",
  "golden_answers",
  "problem",
  "solution",
  "level",
  "type",
  "task",
  "instruction",
  "instruction_type",
  "spreadsheet_path",
  "answer_position",
  "query",
  "reward_metric",
  "metadata",
  "supporting_facts",
  "context",
];

const value = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.constant(null),
  fc.boolean(),
  fc.array(fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.constant(null)), { maxLength: 3 }),
  fc.array(
    fc.record(
      {
        role: fc.oneof(fc.constantFrom("system", "user", "assistant", "tool"), fc.string()),
        content: fc.jsonValue({ maxDepth: 1 }),
      },
      { requiredKeys: [] },
    ),
    {
      maxLength: 3,
    },
  ),
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom("../../../../etc/passwd", "/etc/passwd", "spreadsheet/../../..", "", "Level 9"),
);
const row = fc.oneof(
  { weight: 6, arbitrary: fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 6 }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  // the plain rows every env accepts, with odd values
  {
    weight: 3,
    arbitrary: fc.record(
      { id: fc.string({ maxLength: 8 }), prompt: fc.string({ maxLength: 40 }), ground_truth: value },
      { requiredKeys: ["prompt", "ground_truth"] },
    ),
  },
);

for (const name of ENV_NAMES) {
  const loaded = await loadEnv(name);
  warnSkip(`parseTask fuzzing of env "${name}"`, loaded.reason);

  describe.skipIf(!loaded.env)(`fuzz: ${name}.parseTask`, () => {
    let env: Env | undefined;
    afterAll(async () => {
      await env?.close();
    });

    it("2,000 arbitrary rows: a task or a DatasetError naming the problem, never another error", async () => {
      env = await loaded.env!.create();
      const own = env.capabilities?.tasks;
      if (!own?.parseTask) {
        console.warn(`[reliability] SKIPPED ${name}.parseTask: the env has no parseTask`);
        return;
      }
      const parse = own.parseTask.bind(own);
      let ok = 0;
      let rejected = 0;
      fc.assert(
        fc.property(row, (r) => {
          try {
            const t = parse(r, "rows.jsonl:7");
            expect(typeof t.id).toBe("string");
            expect(t.prompt !== undefined || Array.isArray(t.messages)).toBe(true);
            ok++;
          } catch (e) {
            const err = e as Error;
            if (err?.name !== "DatasetError") {
              throw new Error(
                `${name}.parseTask threw ${err?.name}: ${err?.message} on ${JSON.stringify(r).slice(0, 300)}`,
              );
            }
            expect(err.message.length).toBeGreaterThan(0);
            rejected++;
          }
        }),
        { numRuns: 2_000 },
      );
      console.log(`[reliability] ${name}.parseTask: ${ok} rows accepted, ${rejected} rejected with a DatasetError`);
      expect(rejected).toBeGreaterThan(0);
    });
  });
}

/** Rows in the Task shape {id, prompt, groundTruth} with odd gold and init data (the server validates these itself). */
const taskShaped = fc.record(
  {
    id: fc.string({ minLength: 1, maxLength: 8 }),
    prompt: fc.string({ maxLength: 30 }),
    groundTruth: value,
    init: fc.oneof(
      value,
      fc.record({ inputs: fc.array(value, { maxLength: 2 }), caseNumbers: value }, { requiredKeys: [] }),
    ),
    meta: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: ["id", "prompt", "groundTruth"] },
);

type ServeEnv = (env: Env, o?: Record<string, unknown>) => Promise<{ url: string; close(): Promise<void> }>;
const server = await importOptional<{ serveEnv?: ServeEnv }>("@benchmax/server");
const serveReason =
  server.reason ??
  (typeof server.mod?.serveEnv === "function" ? undefined : "@benchmax/server exports no serveEnv yet");
warnSkip("rows sent to env servers", serveReason);

describe.skipIf(!!serveReason)("fuzz: raw rows sent to each env's server (POST /v1/rollouts {task})", () => {
  it("300 arbitrary rows and Task-shaped objects per env: 201 or a 4xx naming the problem, never a 5xx", async () => {
    const fivexx: string[] = [];
    for (const name of ENV_NAMES) {
      const loaded = await loadEnv(name);
      if (!loaded.env) continue;
      const env = await loaded.env.create();
      const srv = await server.mod!.serveEnv!(env, { tasks: loaded.env.tasks });
      try {
        await fc.assert(
          fc.asyncProperty(fc.oneof(row, taskShaped), async (r) => {
            const res = await fetch(`${srv.url}/v1/rollouts`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ task: r }),
            });
            const body = (await res.json()) as { rolloutId?: string; token?: string; error?: { message?: string } };
            if (res.status >= 500)
              fivexx.push(`${name}: ${JSON.stringify(r).slice(0, 200)} → ${res.status} ${body.error?.message}`);
            else if (res.status >= 400) expect(body.error?.message, JSON.stringify(r)).toBeTruthy();
            else if (body.rolloutId) {
              await fetch(`${srv.url}/v1/rollouts/${body.rolloutId}/release`, {
                method: "POST",
                headers: { "content-type": "application/json", "x-rollout-token": body.token ?? "" },
                body: "{}",
              });
            }
          }),
          { numRuns: 300 },
        );
      } finally {
        await srv.close();
        await env.close();
      }
    }
    if (fivexx.length)
      console.warn(
        `[reliability] 5xx for raw rows:\n${[...new Set(fivexx.map((f) => f.split(":")[0] + " " + f.slice(f.indexOf("→"))))].slice(0, 20).join("\n")}`,
      );
    expect(fivexx).toEqual([]);
  });
});
