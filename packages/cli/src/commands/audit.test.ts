import { describe, expect, it } from "vitest";
import { cli } from "../../test/harness.js";

describe("benchmax audit", () => {
  it("passes a catalog env and exits 0", { timeout: 120_000 }, () => {
    const r = cli(["audit", "math", "--transport", "in-process", "--attack", "format-tricks", "--max-tasks", "3"]);
    expect(r.stderr).not.toContain("Error");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("benchmax audit math: 3 tasks");
    expect(r.stdout).toContain("audit passed");
  });

  it("prints each finding with a reproduction and exits 1", { timeout: 120_000 }, () => {
    const r = cli(["audit", "packages/cli/test/fixtures/leaky-env", "--attack", "answer-in-tool-call"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain("FAIL score");
    expect(r.stdout).toMatch(/\[score\] in-process, hermes, attack answer-in-tool-call, task q1: .* scored 1/);
    expect(r.stdout).toContain("reproduce: benchmax audit packages/cli/test/fixtures/leaky-env --task q1");
    expect(r.stdout).toContain("audit FAILED");
  });

  it("--json gives the report", { timeout: 120_000 }, () => {
    const r = cli(["audit", "math", "--json", "--transport", "http", "--attack", "empty-answer", "--max-tasks", "2"]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ env: "math", ok: true, transports: ["http"], tasks: 2 });
    expect(report.checks.score.run).toBeGreaterThan(0);
  });

  it("audits over MCP (the MCP SDK's client against serveMcp)", { timeout: 120_000 }, () => {
    const r = cli([
      "audit",
      "math",
      "--json",
      "--transport",
      "mcp",
      "--attack",
      "answer-in-tool-call",
      "--max-tasks",
      "2",
    ]);
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ env: "math", ok: true, transports: ["mcp"], tasks: 2 });
    expect(report.checks["harness-tool"].run).toBe(1);
    expect(report.checks.score.run).toBe(4);
  });

  it("refuses an unknown transport", { timeout: 60_000 }, () => {
    const r = cli(["audit", "math", "--transport", "smoke-signals"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("--transport must be in-process, http, mcp or all");
  });
});
