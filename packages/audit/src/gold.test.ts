import { describe, expect, it } from "vitest";
import { dummyArgs, formatTricks, HARNESS_TOOL, pathParams, wrongTypeArgs } from "./attacks.js";
import { parseAuditConfig } from "./config.js";
import { goldStrings, leakedGold, normalizeForScan } from "./gold.js";

describe("gold values and the leak scan", () => {
  it("collects answer leaves and leaves scoring keys out", () => {
    expect(goldStrings({ kind: "arithmetic", value: 34, text: "34" })).toEqual(["34"]);
    expect(goldStrings({ answer: ["005A", null], reward_metric: "exact_match", task: "case_lookup" })).toEqual([
      "005A",
    ]);
    expect(goldStrings(["Paris", "paris "])).toEqual(["Paris", "paris"]);
    expect(goldStrings({ answers: ["/x.xlsx"], answerPosition: "B8" }, ["answers"])).toEqual(["/x.xlsx"]);
  });

  it("matches the gold as the scorers normalise it, as whole tokens", () => {
    expect(normalizeForScan("The ANSWER: 1,234!")).toBe(" the answer 1234 ");
    expect(leakedGold("hint: the answer is 1,234.", ["1234"])).toEqual(["1234"]);
    expect(leakedGold("ＰＡＲＩＳ is it", ["Paris"])).toEqual(["Paris"]);
    expect(leakedGold("comparison", ["Paris"])).toEqual([]);
    expect(leakedGold("12345", ["234"])).toEqual([]);
    // short golds are not looked for (too likely by chance), whatever their numeric variants
    expect(leakedGold("version 2.0", ["2"])).toEqual([]);
    expect(leakedGold("value 34.0", ["34"], 2)).toEqual(["34"]);
  });
});

describe("attack building blocks", () => {
  it("format tricks change the value under a strict reading", () => {
    const t = Object.fromEntries(formatTricks("34").map((x) => [x.label, x.text]));
    expect(t["separator: leading zero group"]).toBe("0,034");
    expect(t["separator: misplaced comma"]).toBe("3,4");
    expect(t["whitespace: split digits"]).toBe("3 4");
    expect(t["units: thousand"]).toBe("34 thousand");
    expect(t["look-alike: letters for digits"]).toBe("\u04174");
    expect(formatTricks("1234").find((x) => x.label === "separator: leading zero group")!.text).toBe("0,001,234");
    const words = formatTricks("Morrow River").map((x) => x.text);
    expect(words).toContain("\u041corrow Riv\u0435r");
    expect(words).toContain("Mo rrow Ri ver");
  });

  it("placeholder, wrong-type and path arguments from a JSON schema", () => {
    const schema = {
      type: "object",
      properties: { path: { type: "string" }, n: { type: "integer", minimum: 2 }, mode: { enum: ["a", "b"] } },
      required: ["path", "n"],
    };
    expect(dummyArgs(schema)).toEqual({ path: "x", n: 2 });
    expect(wrongTypeArgs(schema)).toEqual({
      path: { not: ["a string"] },
      n: "not-the-right-type",
      mode: "not-the-right-type",
    });
    expect(pathParams({ name: "open", description: "", parameters: schema })).toEqual(["path"]);
  });

  it("names a reward or task-picking tool", () => {
    for (const n of ["get_reward", "score", "check_answer", "select_task", "reset", "verify"]) {
      expect(HARNESS_TOOL.test(n), n).toBe(true);
    }
    for (const n of ["search", "lookup", "read_range", "calculator", "issue_soql_query", "set_number_format"]) {
      expect(HARNESS_TOOL.test(n), n).toBe(false);
    }
  });
});

describe("audit.json", () => {
  it("reads the settings and names a bad field", () => {
    expect(parseAuditConfig({ threshold: 0.2, allow: [{ check: "score", below: 0.3, reason: "F1" }] })).toEqual({
      threshold: 0.2,
      leakMinLength: undefined,
      maxTasks: undefined,
      allow: [{ check: "score", below: 0.3, reason: "F1" }],
    });
    expect(() => parseAuditConfig({ threshhold: 0 })).toThrow(/unknown field "threshhold"/);
    expect(() => parseAuditConfig({ threshold: 2 })).toThrow(/threshold must be a number from 0 to 1/);
    expect(() => parseAuditConfig({ allow: [{ check: "score" }] })).toThrow(/allow\[0\].reason must say why/);
    expect(() => parseAuditConfig({ fileProbes: [{ tool: "t", argument: "a", template: "x" }] })).toThrow(/\{path\}/);
  });
});
