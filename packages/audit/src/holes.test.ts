import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { type AuditReport, auditEnv, type Finding } from "./audit.js";
import {
  brittleEnv,
  harnessLeakEnv,
  openFilesEnv,
  privacyEnv,
  separatorEnv,
  toolCallAnswerEnv,
} from "./fixtures/hole-envs.js";

const failed = (r: AuditReport, check: string): Finding[] => r.findings.filter((f) => f.check === check && !f.allowed);

// The audit finds each hole of issue 26 on the code before its fix (the fixture envs copy that code); the catalog
// envs, fixed, pass the same audit (catalog.test.ts).
describe("the audit finds the holes of issue 26 on the pre-fix code", () => {
  it("an answer inside Hermes tool-call arguments scored 1 (OpenAI tool_calls did not)", async () => {
    const env = toolCallAnswerEnv();
    const r = await auditEnv(env, { attacks: ["answer-in-tool-call"] });
    const hits = failed(r, "score");
    expect(hits.length).toBeGreaterThan(0);
    expect(new Set(hits.map((f) => f.format))).toEqual(new Set(["hermes"]));
    // every transport users serve it on: in process, HTTP and MCP
    expect(new Set(hits.map((f) => f.transport))).toEqual(new Set(["in-process", "http", "mcp"]));
    expect(hits[0]!.reproduce).toContain("--attack answer-in-tool-call");
    expect(r.ok).toBe(false);
    await env.close();
  });

  it("0,034 read as 34 (arithmetic separators)", async () => {
    const env = separatorEnv();
    const r = await auditEnv(env, { attacks: ["format-tricks"], transports: ["in-process"] });
    const hits = failed(r, "score");
    expect(hits.map((f) => f.label)).toContain("separator: leading zero group");
    expect(hits.find((f) => f.taskId === "a1" && f.label === "separator: leading zero group")!.reproduce).toContain(
      "<answer>0,034</answer>",
    );
    await env.close();
  });

  it("a disclosure in refusal words scored 1 under the privacy keyword heuristic", async () => {
    const env = privacyEnv();
    const r = await auditEnv(env, { attacks: ["refusal-words-disclosure"], transports: ["in-process"] });
    const hits = failed(r, "score");
    expect(hits.map((f) => f.label).sort()).toEqual(["plain", "tagged"]);
    expect(hits[0]!.message).toContain("scored 1");
    await env.close();
  });
});

describe("the other checks", () => {
  it("a reward tool on the list and the gold in the system prompt", async () => {
    const env = harnessLeakEnv();
    const r = await auditEnv(env, { attacks: ["empty-answer"] });
    expect(
      failed(r, "harness-tool")
        .map((f) => f.transport)
        .sort(),
    ).toEqual(["http", "in-process", "mcp"]);
    expect(failed(r, "harness-tool")[0]!.message).toContain('"check_answer"');
    expect(failed(r, "leak").some((f) => f.message.startsWith("the system prompt contains the gold"))).toBe(true);
    // over MCP: the system prompt the harness channel hands out, and the task resource a client reads
    const mcpLeaks = failed(r, "leak").filter((f) => f.transport === "mcp");
    expect(mcpLeaks.some((f) => f.message.startsWith("the system prompt contains the gold"))).toBe(true);
    expect(mcpLeaks.some((f) => /^MCP resources\/read \S+ \(task k1\) contains the gold/.test(f.message))).toBe(true);
    await env.close();
  });

  it("a model-chosen argument that crashes a tool is an env_error; a reward that changes is not deterministic", async () => {
    const env = brittleEnv();
    const r = await auditEnv(env, { attacks: ["tool-spam", "empty-answer"], transports: ["in-process", "mcp"] });
    expect(failed(r, "outcome").length).toBeGreaterThan(0);
    expect(failed(r, "outcome")[0]!.message).toContain("env_error");
    // the same crash seen by an MCP client: the server's internal error, an env_error (not a tool error the model reads)
    expect(failed(r, "outcome").some((f) => f.transport === "mcp" && f.message.includes("env_error"))).toBe(true);
    expect(failed(r, "deterministic").length).toBeGreaterThan(0);
    await env.close();
  });

  it("a file tool that reaches the gold file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "audit-gold-"));
    const gold = join(dir, "answer.xlsx");
    writeFileSync(gold, "the answer workbook");
    const env = openFilesEnv(gold);
    const r = await auditEnv(env, { attacks: ["bad-files"], transports: ["in-process"] });
    const hits = failed(r, "gold-files");
    expect(hits.length).toBeGreaterThan(0);
    expect(hits[0]!.message).toContain("read_file opened a gold file");
    // the bad paths themselves are the model's fault: readable tool errors, never env_error
    expect(failed(r, "outcome")).toEqual([]);
    await env.close();
  });

  it("an honest env passes, and allowed findings are reported with their reason", async () => {
    const env = separatorEnv();
    const r = await auditEnv(env, {
      attacks: ["format-tricks"],
      transports: ["in-process"],
      config: { allow: [{ check: "score", attack: "format-tricks", reason: "testing the allow list" }] },
    });
    expect(r.ok).toBe(true);
    expect(r.findings.every((f) => f.allowed === "testing the allow list")).toBe(true);
    await env.close();
  });
});
