import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Env, EnvModule } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { auditEnv } from "./audit.js";
import { loadAuditConfig } from "./config.js";
import { formatAuditReport } from "./format-report.js";

const envsDir = resolve(dirname(fileURLToPath(import.meta.url)), "../../../envs");

const catalog: Array<[string, () => Promise<{ default: EnvModule }>]> = [
  ["math", () => import("@benchmax/env-math")],
  ["wikipedia", () => import("@benchmax/env-wikipedia")],
  ["crm", () => import("@benchmax/env-crm")],
  ["excel", () => import("@benchmax/env-excel")],
];

// Every catalog env passes `benchmax audit` over its fixtures, in process, over HTTP and over MCP, with the thresholds
// and accepted findings of its own audit.json.
describe("benchmax audit on every catalog env", () => {
  for (const [name, load] of catalog) {
    // a guard against a hang, not the speed goal (bench/audit.mjs measures that): excel took 138–176 s at load 22–35
    it(`${name} passes`, { timeout: 600_000 }, async () => {
      const env = (await (await load()).default.createEnv({})) as Env;
      try {
        const report = await auditEnv(env, { config: loadAuditConfig(resolve(envsDir, name)), envSpec: name });
        if (!report.ok) console.error(formatAuditReport(report));
        expect(report.ok).toBe(true);
        expect(report.transports).toEqual(["in-process", "http", "mcp"]);
        expect(report.episodes).toBeGreaterThan(50);
        for (const c of ["score", "outcome", "deterministic", "leak", "harness-tool"] as const) {
          expect(report.checks[c].run, c).toBeGreaterThan(0);
        }
      } finally {
        await env.close();
      }
    });
  }
});
