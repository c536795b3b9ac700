import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineEnv } from "./define-env.js";
import { defineEnvModule, type EnvModule } from "./env.js";
import { UsageError } from "./errors.js";
import { defineOptions, didYouMean, levenshtein, unknownNameMessage } from "./options.js";
import type { Task } from "./types.js";

describe("levenshtein / didYouMean", () => {
  it("measures edits", () => {
    expect(levenshtein("datset", "dataset")).toBe(1);
    expect(levenshtein("kitten", "sitting")).toBe(3);
    expect(levenshtein("", "abc")).toBe(3);
    expect(levenshtein("same", "same")).toBe(0);
  });

  it("suggests the closest name only when it is plausibly a typo", () => {
    const names = ["dataset", "split", "limit", "judgeModel"];
    expect(didYouMean("datset", names)).toBe("dataset");
    expect(didYouMean("DataSet", names)).toBe("dataset");
    expect(didYouMean("judgemodle", names)).toBe("judgeModel");
    expect(didYouMean("lmit", names)).toBe("limit");
    expect(didYouMean("temperature", names)).toBeUndefined();
    expect(unknownNameMessage("option", "datset", names)).toBe("unknown option datset; did you mean dataset?");
    expect(unknownNameMessage("option", "zzz", names)).toBe(
      "unknown option zzz; options are dataset, split, limit, judgeModel",
    );
  });
});

const options = defineOptions(
  z.object({
    dataset: z.string().optional().describe("a dataset file"),
    limit: z.number().int().positive().optional(),
    recalc: z.boolean().default(true),
    tags: z.array(z.string()).optional(),
  }),
);

describe("defineOptions", () => {
  it("refuses an unknown option with a suggestion", () => {
    expect(() => options.parse({ datset: "x.jsonl" })).toThrow(UsageError);
    expect(() => options.parse({ datset: "x.jsonl" })).toThrow("unknown option datset; did you mean dataset?");
  });

  it("converts command-line strings to the option's type and applies defaults", () => {
    expect(options.parse({ dataset: "x.jsonl", limit: "5", recalc: "false", tags: '["a","b"]' })).toEqual({
      dataset: "x.jsonl",
      limit: 5,
      recalc: false,
      tags: ["a", "b"],
    });
    expect(options.parse({})).toEqual({ recalc: true });
    expect(options.parse()).toEqual({ recalc: true });
  });

  it("names the option with a bad value", () => {
    expect(() => options.parse({ limit: "abc" })).toThrow(/bad env option: limit:/);
    expect(() => options.parse({ limit: -1 })).toThrow(/limit/);
  });

  it("describes the options for help text", () => {
    expect(options.describe()).toEqual([
      { name: "dataset", type: "string", description: "a dataset file", required: false },
      { name: "limit", type: "integer", required: false },
      { name: "recalc", type: "boolean", default: true, required: false },
      { name: "tags", type: "array", required: false },
    ]);
  });
});

describe("defineEnvModule with options", () => {
  const seen: unknown[] = [];
  const mod = defineEnvModule({
    name: "opt-env",
    description: "options demo",
    options,
    createEnv(o) {
      seen.push(o);
      const recalc: boolean = o.recalc;
      return defineEnv<Task>({
        name: "opt-env",
        systemPrompt: `recalc=${recalc}`,
        tools: [],
        reward: () => ({ r: 1 }),
      });
    },
  });

  it("checks what createEnv gets (the CLI path passes raw --env-opt strings)", async () => {
    const generic: EnvModule = mod;
    await expect(Promise.resolve().then(() => generic.createEnv({ datset: "x" }))).rejects.toThrow(
      "unknown option datset; did you mean dataset?",
    );
    const env = await generic.createEnv({ limit: "3" });
    expect(env.systemPrompt).toBe("recalc=true");
    expect(seen.at(-1)).toEqual({ limit: 3, recalc: true });
    expect(mod.options?.names).toEqual(["dataset", "limit", "recalc", "tags"]);
  });

  it("types createEnv's options, so a typo in code does not compile", () => {
    // @ts-expect-error datset is not an option (checked by `tsc --noEmit`)
    expect(() => mod.createEnv({ datset: "x" })).toThrow(/did you mean dataset/);
    expect(() => mod.createEnv({ dataset: "x", limit: 2 })).not.toThrow();
  });
});
