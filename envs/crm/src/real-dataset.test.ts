import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "@benchmax/core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkTasks } from "./check-tasks.js";
import { writeCrmArenaOrgFixture } from "./crmarena-org-fixture.js";
import { type CrmTask, parseCrmTask, recordToday } from "./dataset.js";
import { createCrmEnv } from "./index.js";
import { loadOrgFile } from "./load-org.js";
import type { Org } from "./org.js";
import { fixtureOrg } from "./test-org.js";

const DATASET = join(dirname(fileURLToPath(import.meta.url)), "..", "fixtures", "crmarena-b2b-tasks.jsonl");
let orgPath: string;
let real: Org;
beforeAll(async () => {
  orgPath = join(await mkdtemp(join(tmpdir(), "crm-real-")), "crmarenapro_b2b_data.db");
  await writeCrmArenaOrgFixture(orgPath);
  real = await loadOrgFile(orgPath);
});
afterAll(() => real.close());

const record = (over: Record<string, unknown> = {}) => ({
  idx: 9,
  answer: ["005Wt000003NJbJIAW"],
  task: "handle_time",
  persona: "analyst",
  metadata: { required: "- Today's date: 2021-05-04\n- Handle time is closed minus created.", optional: "" },
  reward_metric: "exact_match",
  query: "Which agent had the lowest handle time? Return only the Id of the agent.",
  ...over,
});

describe("per-task today", () => {
  it("reads the date the record's own context states", () => {
    expect(recordToday(record())).toBe("2021-05-04");
    expect(recordToday({ metadata: { today: "2021-12-27" }, query: "x" })).toBe("2021-12-27");
    expect(recordToday({ metadata: { required: "Today's date is 2020-02-29." } })).toBe("2020-02-29");
    expect(recordToday({ metadata: { required: "no date here" }, query: "q" })).toBeUndefined();
    expect(parseCrmTask(record()).meta?.today).toBe("2021-05-04");
  });

  it("gives each rollout its task's today (prompt and date literals), else the org's", async () => {
    const env = createCrmEnv({ org: orgPath, force: true });
    try {
      const [t0, t1] = await env.capabilities!.tasks!.loadTasks!(DATASET);
      await env.init("r0", t0!);
      await env.init("r1", t1!);
      const prompt = (t: CrmTask) => (typeof env.systemPrompt === "function" ? env.systemPrompt(t) : env.systemPrompt);
      expect(prompt(t0!)).toContain("Today's date in this org is 2023-03-28");
      expect(prompt(t1!)).toContain("Today's date in this org is 2023-04-02");
      // the loaded org's own objects are described
      expect(prompt(t0!)).toMatch(/VoiceCallTranscript__c \[read-only\]: Id, OpportunityId__c/);
      const count = async (id: string) => {
        const r = await env.runTool(id, {
          name: "issue_soql_query",
          arguments: { query: "SELECT COUNT() FROM Lead WHERE CreatedDate = LAST_N_DAYS:14" },
        });
        return JSON.parse(String(r.content)).totalSize;
      };
      // Mia's lead (2023-03-20) is within 14 days of 2023-03-28 and of 2023-04-02; Sam's (03-02) of neither
      expect(await count("r0")).toBe(1);
      expect(await count("r1")).toBe(1);
      // a helper written for the embedded schema answers with a tool error on an org without its table
      const helper = await env.runTool("r0", {
        name: "get_agents_with_most_transfers",
        arguments: { start_date: "2023-01-01", end_date: "2023-03-31" },
      });
      expect(helper.isError).toBe(true);
      expect(String(helper.content)).toMatch(/not available on this org \(it has no table CaseHistory__c\)/);
      const noDate = parseCrmTask({ prompt: "hi", ground_truth: "x" });
      await env.init("r2", noDate);
      expect(prompt(noDate)).toContain(`Today's date in this org is ${real.today}`);
    } finally {
      await env.close();
    }
  });
});

describe("checking tasks against the org", () => {
  it("finds every fixture task solvable on the benchmark's org", async () => {
    const env = createCrmEnv({ org: orgPath });
    try {
      const tasks = await env.capabilities!.tasks!.loadTasks!(DATASET);
      expect(tasks).toHaveLength(6);
      const report = checkTasks(tasks, real);
      expect(report).toMatchObject({ total: 6, solvable: 6, unsolvable: 0, summary: "" });
    } finally {
      await env.close();
    }
  });

  it("summarises what the generated org lacks in one line", async () => {
    const org = await fixtureOrg();
    const tasks = [
      parseCrmTask(record()),
      parseCrmTask(record({ idx: 10, answer: ["x"], query: "Which ProductCategoryProduct rows list the Vision Kit?" })),
      parseCrmTask(record({ idx: 11, answer: [null], query: "List the custom Widget__c records." })),
    ];
    const report = checkTasks(tasks, org);
    expect(report.unsolvable).toBe(2);
    expect(report.missingIds).toBe(1);
    expect(report.exampleIds).toEqual(["005Wt000003NJbJIAW"]);
    expect(report.summary).toBe(
      "2 tasks reference objects not in this org: use --env-opt org=PATH or backend=live (missing objects: ProductCategoryProduct ×1; 1 with record Ids not in the org, e.g. 005Wt000003NJbJIAW)",
    );
  });

  it("eval refuses a dataset its org cannot solve unless forced; validate gets the summary", async () => {
    const env = createCrmEnv({});
    try {
      const err = await env.capabilities!.tasks!.loadTasks!(DATASET).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UsageError);
      expect(String((err as Error).message)).toMatch(
        /^crm: 4 tasks reference objects not in this org: use --env-opt org=PATH or backend=live \(4 with record Ids not in the org, e\.g\. 00QWt000000006TMAQ\)\. Every such task would score 0; pass --env-opt force=true/,
      );
      const check = (env as unknown as { checkDataset(f: string): Promise<{ ok: boolean; lines: string[] }> })
        .checkDataset;
      const res = await check(DATASET);
      expect(res.ok).toBe(false);
      expect(res.lines[0]).toMatch(/^4 tasks reference objects not in this org/);
    } finally {
      await env.close();
    }
    const forced = createCrmEnv({ force: "true" });
    try {
      expect(await forced.capabilities!.tasks!.loadTasks!(DATASET)).toHaveLength(6);
    } finally {
      await forced.close();
    }
  });

  it("the reference policy never reads a dataset's gold: it answers None on records it did not generate", async () => {
    const env = createCrmEnv({ org: orgPath });
    try {
      const [task] = await env.capabilities!.tasks!.loadTasks!(DATASET);
      const policy = env.capabilities!.reference!.referencePolicy();
      const step = await policy.act({ task: task!, messages: [], tools: env.listTools() } as never);
      expect(JSON.stringify(step)).toContain("<respond>None</respond>");
      expect(JSON.stringify(step)).not.toContain("Authority");
    } finally {
      await env.close();
    }
  });
});
