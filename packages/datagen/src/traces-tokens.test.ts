import { isPlainRow, parsePlainRow } from "@benchmax/core";
import { describe, expect, it } from "vitest";
import { convertTraces } from "./traces.js";

/** A results.jsonl line of a token-faithful eval: the conversation plus each assistant turn's ids and logprobs. */
function resultLine(userText: string, drift = false) {
  const t0 = { turn: 0, prompt_token_ids: [1, 2, 3], completion_token_ids: [4, 5], logprobs: [-0.1, -0.2] };
  const t1 = { turn: 1, prompt_token_ids: drift ? [1, 2, 3, 9, 5, 6] : [1, 2, 3, 4, 5, 6], completion_token_ids: [7] };
  return JSON.stringify({
    rolloutId: `r-${userText.length}-${drift}`,
    outcome: "completed",
    messages: [
      { role: "user", content: userText },
      {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "c1", type: "function", function: { name: "add", arguments: '{"a":2,"b":2}' } }],
      },
      { role: "tool", tool_call_id: "c1", content: "4" },
      { role: "assistant", content: "<answer>4</answer>" },
    ],
    tokens: [t0, t1],
  });
}

describe("generate traces keeps token records", () => {
  it("copies a results line's tokens onto its row and runs the drift check on them", () => {
    const r = convertTraces([resultLine("2+2?"), resultLine("what is 2+2?", true)].join("\n"));
    expect(r.errors).toEqual([]);
    const [clean, drifted] = r.train;
    expect(clean!.tokens).toEqual(JSON.parse(resultLine("2+2?")).tokens);
    expect(clean!.token_drift).toEqual([]);
    expect(drifted!.token_drift).toEqual([1]);
    for (const row of r.train) {
      expect(isPlainRow(row)).toBe(true);
      expect(() => parsePlainRow(row, "x")).not.toThrow();
    }
  });

  it("drops the ids when PII scrubbing changed the text (they would still hold it), and keeps them when asked to leave PII", () => {
    const line = resultLine("mail me at jane.doe@example.com");
    const scrubbed = convertTraces(line);
    expect(scrubbed.train[0]!.prompt).toContain("[EMAIL]");
    expect(scrubbed.train[0]!.tokens).toBeUndefined();
    expect(scrubbed.train[0]!.meta.tokens_dropped).toBe("pii");
    const kept = convertTraces(line, { scrubPii: false });
    expect(kept.train[0]!.tokens).toHaveLength(2);
  });

  it("refuses a malformed token record with its field", () => {
    const bad = JSON.parse(resultLine("2+2?"));
    bad.tokens[1].prompt_token_ids = ["a"];
    const r = convertTraces(JSON.stringify(bad));
    expect(r.train).toEqual([]);
    expect(r.errors).toEqual([{ line: 1, field: "tokens[1]", message: expect.stringMatching(/integer/) }]);
  });
});
