import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startFakeVllm } from "@benchmax/core/testing";
import { describe, expect, it } from "vitest";
import { cliAsync, lines, openaiEvalArgs, tmp } from "./harness.js";

const evalArgs = (url: string, out: string, extra: string[] = []) =>
  openaiEvalArgs({ url, out, limit: 2, model: "m" }, ...extra);

describe("eval --token-ids against a fake vLLM endpoint", () => {
  it("writes each turn's token ids and logprobs to results.jsonl and counts drifted turns in summary.json", async () => {
    for (const drift of [false, true]) {
      const fake = await startFakeVllm({ drift });
      try {
        const out = join(tmp(), "run");
        const r = await cliAsync(evalArgs(fake.url, out, ["--token-ids"]));
        expect(r.stderr).not.toMatch(/ERR_|at .*\.js:\d+/);
        expect(r.code).toBe(0);
        expect(fake.requests[0]).toMatchObject({ return_token_ids: true, logprobs: true });
        const results = lines(join(out, "results.jsonl")).map((l) => JSON.parse(l));
        expect(results).toHaveLength(2);
        for (const res of results) {
          expect(res.outcome).toBe("completed");
          expect(res.tokens.map((t: { turn: number }) => t.turn)).toEqual([0, 1]);
          expect(res.tokens[0].logprobs).toHaveLength(res.tokens[0].completion_token_ids.length);
          expect(res.tokenDrift).toEqual(drift ? [1] : []);
        }
        const s = JSON.parse(readFileSync(join(out, "summary.json"), "utf8"));
        expect(s.tokenDrift).toEqual({ turns: 4, flagged: drift ? 2 : 0 });
      } finally {
        await fake.close();
      }
    }
  }, 240_000);

  it("without --token-ids sends no vLLM-only field and records no ids", async () => {
    const fake = await startFakeVllm({ strict: true });
    try {
      const out = join(tmp(), "run");
      const r = await cliAsync(evalArgs(fake.url, out));
      expect(r.code).toBe(0);
      expect(fake.requests.some((q) => "return_token_ids" in q)).toBe(false);
      const results = lines(join(out, "results.jsonl")).map((l) => JSON.parse(l));
      expect(results.every((x) => x.tokens === undefined)).toBe(true);
      expect(JSON.parse(readFileSync(join(out, "summary.json"), "utf8")).tokenDrift).toBeUndefined();
    } finally {
      await fake.close();
    }
  }, 120_000);
});
