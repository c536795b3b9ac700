import { describe, expect, it } from "vitest";
import { Episode } from "./episode.js";
import { adderEnv, adderTask } from "./policies/adder-env.test-util.js";

const call = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 2}}\n</tool_call>';

describe("token records through Episode.step (a transport's client sends them)", () => {
  it("keeps well-formed records per turn, drops malformed ones, and flags drift", async () => {
    const ep = await Episode.start(adderEnv, adderTask, { toolFormat: "hermes" });
    await ep.step({
      message: { role: "assistant", content: call },
      tokens: { prompt_token_ids: [1, 2], completion_token_ids: [3], logprobs: [-0.5] },
    });
    // a hostile or broken client: strings for ids never reach results.jsonl
    await ep.step({
      message: { role: "assistant", content: "<answer>4</answer>" },
      tokens: { prompt_token_ids: ["1"], completion_token_ids: [4] } as never,
    });
    await ep.close();
    const r = ep.result();
    expect(r.outcome).toBe("completed");
    expect(r.tokens).toEqual([{ turn: 0, prompt_token_ids: [1, 2], completion_token_ids: [3], logprobs: [-0.5] }]);
    expect(r.tokenDrift).toEqual([]);
  });

  it("flags a turn whose prompt does not extend the previous prompt + completion", async () => {
    const ep = await Episode.start(adderEnv, adderTask, { toolFormat: "hermes" });
    await ep.step({
      message: { role: "assistant", content: call },
      tokens: { prompt_token_ids: [1, 2], completion_token_ids: [3] },
    });
    await ep.step({
      message: { role: "assistant", content: "<answer>4</answer>" },
      tokens: { prompt_token_ids: [1, 2, 9, 5], completion_token_ids: [6] },
    });
    await ep.close();
    expect(ep.result().tokenDrift).toEqual([1]);
  });
});
