import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeRunDir } from "./make-run.test-util.js";
import { writeReport } from "./write-report.js";

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), "benchmax-report-drift-"));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("the report's token drift count", () => {
  it("shows the flagged turns out of the turns with token ids, and nothing for a run without ids", async () => {
    const dir = join(root, "run");
    await makeRunDir(dir, { tasks: 2, accuracy: 0.5 });
    const plain = readFileSync(await writeReport(dir), "utf8");
    expect(plain).not.toContain('id="token-drift"');
    const s = JSON.parse(readFileSync(join(dir, "summary.json"), "utf8"));
    s.tokenDrift = { turns: 6, flagged: 2 };
    writeFileSync(join(dir, "summary.json"), JSON.stringify(s));
    const html = readFileSync(await writeReport(dir), "utf8");
    expect(html).toContain('id="token-drift" data-flagged="2"');
    expect(html).toMatch(/turns with token-id drift<\/div><div class="value">2 of 6/);
  });
});
