import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { extractAnswer, finalAnswerText, stripToolCallText } from "./answer.js";
import { defineEnv } from "./define-env.js";
import type { Policy } from "./policy.js";
import { runRollout } from "./rollout.js";
import { tool } from "./tool.js";
import type { AssistantMessage, Message, Task } from "./types.js";

const policy = (reply: (messages: Message[]) => AssistantMessage): Policy => ({
  name: "fixed",
  act: async ({ messages }) => ({ message: reply(messages) }),
});

/** An env whose reward is 1 when the final answer text's last `<answer>` equals the gold. */
function answerEnv() {
  return defineEnv<Task<string>>({
    name: "answer-only",
    systemPrompt: "Answer in <answer></answer>.",
    tools: [
      tool({
        name: "note",
        description: "write a note",
        parameters: z.object({ why: z.string() }),
        execute: () => "noted",
      }),
    ],
    reward: ({ completion, task }) => ({ correct: extractAnswer(completion) === task.groundTruth ? 1 : 0 }),
  });
}

const task: Task<string> = { id: "t34", prompt: "What is 30 + 4?", groundTruth: "34" };
const hermesReply = '<tool_call>\n{"name": "note", "arguments": {"why": "<answer>34</answer>"}}\n</tool_call>';
const openaiReply: AssistantMessage = {
  role: "assistant",
  content: null,
  tool_calls: [
    {
      id: "c1",
      type: "function",
      function: { name: "note", arguments: JSON.stringify({ why: "<answer>34</answer>" }) },
    },
  ],
};

// regression (issue 26): a maxTurns-truncated rollout whose last reply is only a Hermes tool call with an answer in
// its arguments scored 1; the same reply as OpenAI tool_calls scored 0
describe("text inside a tool call is never the final answer", () => {
  for (const lastTurnTools of ["run", "skip"] as const) {
    it(`Hermes and OpenAI formats agree (maxTurns truncation, lastTurnTools ${lastTurnTools})`, async () => {
      const env = answerEnv();
      const hermes = await runRollout(
        env,
        task,
        policy(() => ({ role: "assistant", content: hermesReply })),
        {
          maxTurns: 1,
          toolFormat: "hermes",
          lastTurnTools,
        },
      );
      const openai = await runRollout(
        env,
        task,
        policy(() => openaiReply),
        {
          maxTurns: 1,
          toolFormat: "openai",
          lastTurnTools,
        },
      );
      expect(hermes.outcome).toBe("truncated");
      expect(openai.outcome).toBe("truncated");
      expect(hermes.rewards).toEqual({ correct: 0 });
      expect(openai.rewards).toEqual({ correct: 0 });
    });
  }

  it("an answer outside the tool call still counts (both formats)", async () => {
    const env = answerEnv();
    const hermes = await runRollout(
      env,
      task,
      policy((messages) => ({
        role: "assistant",
        content: messages.length > 2 ? "<answer>34</answer>" : `thinking ${hermesReply}`,
      })),
      { maxTurns: 3, toolFormat: "hermes" },
    );
    expect(hermes).toMatchObject({ outcome: "completed", rewards: { correct: 1 } });
  });

  it("strips closed, unclosed and several tool-call blocks", () => {
    expect(stripToolCallText(`a <answer>1</answer> ${hermesReply} b`)).toBe("a <answer>1</answer>  b");
    expect(stripToolCallText('x <tool_call>{"name": "n", "arguments": {"a": "<answer>2</answer>"}')).toBe("x");
    expect(stripToolCallText(`${hermesReply}${hermesReply}`)).toBe("");
    expect(stripToolCallText("plain <answer>3</answer>")).toBe("plain <answer>3</answer>");
    const msgs: Message[] = [
      { role: "user", content: "q" },
      { role: "assistant", content: "<answer>34</answer>" },
      { role: "assistant", content: hermesReply },
    ];
    expect(finalAnswerText(msgs)).toBe("");
  });
});
