import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { generateTasks } from "./generate-tasks.js";
import { createCrmEnv } from "./index.js";
import { fixtureOrg } from "./test-org.js";

const file = fileURLToPath(new URL("../fixtures/crmarena-pro-tasks.jsonl", import.meta.url));
const cases = fileURLToPath(new URL("../fixtures/score-cases.jsonl", import.meta.url));

describe("fixtures", () => {
  it("fixtures/crmarena-pro-tasks.jsonl is what the generator makes from the fixture org (UPDATE_FIXTURES=1 rewrites it)", async () => {
    const generated = (await generateTasks(await fixtureOrg())).map((t) => JSON.stringify(t.record)).join("\n") + "\n";
    if (process.env.UPDATE_FIXTURES === "1") {
      writeFileSync(file, generated);
      console.warn(`rewrote ${file}`);
    }
    expect(readFileSync(file, "utf8")).toBe(generated);
  });

  it("the committed task file loads through the env and score cases score as labelled", async () => {
    const env = createCrmEnv({ org: await fixtureOrg() });
    const tasks = await env.capabilities!.tasks!.loadTasks!(file);
    expect(tasks.length).toBeGreaterThanOrEqual(40);
    for (const line of readFileSync(cases, "utf8").trim().split("\n")) {
      const c = JSON.parse(line) as { id: string; expected: number };
      const r = await env.capabilities!.scoring!.scoreCase(c, { baseDir: ".", options: {} });
      expect(r.reward, c.id).toBeCloseTo(c.expected, 5);
    }
    await env.close();
  });
});
