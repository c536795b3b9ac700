import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import type { Task } from "../types.js";
import { datasetHash, normalizeTaskIds, resumeMismatches } from "./identity.js";

const t = (id: string, prompt = "p"): Task => ({ id, prompt, groundTruth: "g" });

describe("run identity", () => {
  it("task ids that fell back to file:line lose the dataset's directory, wherever it was given", () => {
    const abs = resolve("data/rows.jsonl");
    expect(
      normalizeTaskIds([t(`${abs}:3`), t("data/rows.jsonl:4"), t("q7")], "data/rows.jsonl").map((x) => x.id),
    ).toEqual(["rows.jsonl:3", "rows.jsonl:4", "q7"]);
    const folder = resolve("bench/sb");
    expect(normalizeTaskIds([t(`${folder}/dataset.json[2]`)], "bench/sb")[0]!.id).toBe("sb/dataset.json[2]");
    expect(normalizeTaskIds([t(`${abs}:3`)], undefined)[0]!.id).toBe(`${abs}:3`);
  });

  it("hashes the tasks, not where they lie", () => {
    expect(datasetHash([t("a"), t("b")])).toBe(datasetHash([t("a"), t("b")]));
    expect(datasetHash([t("a"), t("b")])).not.toBe(datasetHash([t("a"), t("b", "other prompt")]));
    expect(datasetHash([t("a")])).toMatch(/^[0-9a-f]{64}$/);
  });

  it("names what differs between a run and its resume", () => {
    const id = {
      env: "math",
      dataset: "fixtures",
      datasetHash: "h",
      tasks: 2,
      group: 1,
      expectedRollouts: 2,
      completed: false,
      policy: "reference",
      config: { maxTurns: 10 },
    };
    expect(resumeMismatches(id, { ...id })).toEqual([]);
    expect(resumeMismatches(id, { ...id, policy: "openai", group: 4, config: { maxTurns: 3 } })).toEqual([
      "policy reference → openai",
      "group 1 → 4",
      "maxTurns 10 → 3",
    ]);
  });
});
