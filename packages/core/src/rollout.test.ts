import { describe, expect, it } from "vitest";
import { z } from "zod";
import { extractAnswer } from "./answer.js";
import { defineEnv } from "./define-env.js";
import { InfraError } from "./errors.js";
import { scriptedPolicy } from "./policies/scripted.js";
import type { Policy } from "./policy.js";
import { runRollout } from "./rollout.js";
import { ToolError, tool } from "./tool.js";
import type { Task } from "./types.js";

function makeEnv(opts: { reward?: (c: string) => Record<string, number> } = {}) {
  return defineEnv<Task<string>, { calls: number }>({
    name: "echo",
    systemPrompt: "Answer in <answer> tags.",
    initState: () => ({ calls: 0 }),
    tools: [
      tool({
        name: "echo",
        description: "Echo text back",
        parameters: z.object({ text: z.string() }),
        execute: ({ text }, { state }) => {
          state.calls++;
          return text.toUpperCase();
        },
      }),
      tool({
        name: "fail",
        description: "Always fails",
        parameters: z.object({}),
        execute: () => {
          throw new ToolError("nope");
        },
      }),
      tool({
        name: "crash",
        description: "Throws unexpectedly",
        parameters: z.object({}),
        execute: () => {
          throw new TypeError("boom");
        },
      }),
      tool({
        name: "hang",
        description: "Never returns",
        parameters: z.object({}),
        timeoutMs: 50,
        execute: () => new Promise(() => {}),
      }),
    ],
    reward:
      opts.reward !== undefined
        ? ({ completion }) => opts.reward!(completion)
        : ({ completion, task, state }) => ({
            exact: extractAnswer(completion) === task.groundTruth ? 1 : 0,
            calls: state.calls,
          }),
    rewardWeights: { exact: 1 },
  });
}

const task: Task<string> = { id: "t1", prompt: "shout hi", groundTruth: "HI" };

const echoThenAnswer = scriptedPolicy("ref", ({ turn, messages }) => {
  if (turn === 0) return { calls: [{ name: "echo", arguments: { text: "hi" } }] };
  const last = messages[messages.length - 1]!;
  return { answer: `<answer>${last.content}</answer>` };
});

describe("runRollout", () => {
  it.each(["hermes", "openai"] as const)("completes a tool-using episode (%s)", async (toolFormat) => {
    const r = await runRollout(makeEnv(), task, echoThenAnswer, { toolFormat });
    expect(r.outcome).toBe("completed");
    expect(r.reward).toBe(1);
    expect(r.rewards).toEqual({ exact: 1, calls: 1 });
    expect(r.turns).toBe(2);
    expect(r.toolCalls).toBe(1);
    expect(r.messages[0]!.role).toBe("system");
    if (toolFormat === "hermes") expect(r.messages[0]!.content).toContain("<tools>");
    else expect(r.messages[0]!.content).not.toContain("<tools>");
  });

  it("runs every tool call of a reply and reports malformed ones to the model", async () => {
    const policy: Policy = {
      name: "multi",
      async act({ turn }) {
        if (turn === 0)
          return {
            message: {
              role: "assistant",
              content:
                '<tool_call>\n{"name": "echo", "arguments": {"text": "a"}}\n</tool_call>\n<tool_call>{bad json</tool_call>\n<tool_call>{"name": "nosuch", "arguments": {}}</tool_call><tool_call>{"name": "echo", "arguments": {"text": 5}}</tool_call>',
            },
          };
        return { message: { role: "assistant", content: "<answer>HI</answer>" } };
      },
    };
    const r = await runRollout(makeEnv(), task, policy);
    expect(r.outcome).toBe("completed");
    const tools = r.messages.filter((m) => m.role === "tool");
    expect(tools).toHaveLength(4);
    expect(tools[0]!.content).toBe("A");
    expect(tools[1]!.content).toMatch(/not valid JSON/);
    expect(tools[2]!.content).toMatch(/unknown tool "nosuch"/);
    expect(tools[3]!.content).toMatch(/invalid arguments for echo: text/);
    expect(r.toolErrors).toBe(3);
  });

  it("turns ToolError and tool timeouts into tool errors, and a crashing tool into env_error", async () => {
    const call = (name: string) =>
      scriptedPolicy("p", ({ turn }) => (turn === 0 ? { calls: [{ name, arguments: {} }] } : { answer: "x" }));
    const failed = await runRollout(makeEnv(), task, call("fail"));
    expect(failed.outcome).toBe("completed");
    expect(failed.messages.find((m) => m.role === "tool")!.content).toBe("Error: nope");
    const hung = await runRollout(makeEnv(), task, call("hang"));
    expect(hung.outcome).toBe("completed");
    expect(hung.messages.find((m) => m.role === "tool")!.content).toMatch(/timed out after 50 ms/);
    const crashed = await runRollout(makeEnv(), task, call("crash"));
    expect(crashed.outcome).toBe("env_error");
    expect(crashed.reward).toBeUndefined();
    expect(crashed.error).toMatch(/boom/);
  });

  it("never scores a non-finite reward or a failed policy", async () => {
    const nan = await runRollout(makeEnv({ reward: () => ({ exact: Number.NaN }) }), task, echoThenAnswer);
    expect(nan.outcome).toBe("env_error");
    expect(nan.reward).toBeUndefined();
    const down: Policy = {
      name: "down",
      act: async () => {
        throw new InfraError("503 from endpoint");
      },
    };
    const r = await runRollout(makeEnv(), task, down);
    expect(r.outcome).toBe("infra_error");
    expect(r.reward).toBeUndefined();
    expect(r.error).toMatch(/503/);
  });

  it("truncates at max turns and still scores", async () => {
    const loop = scriptedPolicy("loop", () => ({ calls: [{ name: "echo", arguments: { text: "x" } }] }));
    const r = await runRollout(makeEnv(), task, loop, { maxTurns: 3 });
    expect(r.outcome).toBe("truncated");
    expect(r.truncatedBy).toBe("max_turns");
    expect(r.turns).toBe(3);
    expect(r.reward).toBe(0);
  });
});

describe("env-specific action parsing", () => {
  it("lets an env map its own action format to tool calls", async () => {
    const env = makeEnv();
    env.capabilities!.episode = {
      parseActions: (message, turn) => {
        const m = /<execute>(.*?)<\/execute>/s.exec(typeof message.content === "string" ? message.content : "");
        return m ? [{ call: { id: `exec_${turn}`, name: "echo", arguments: { text: m[1]! } } }] : undefined;
      },
    };
    const policy = scriptedPolicy("exec", ({ turn, messages }) =>
      turn === 0 ? { answer: "<execute>hi</execute>" } : { answer: `<answer>${messages.at(-1)!.content}</answer>` },
    );
    const r = await runRollout(env, task, policy);
    expect(r.toolCalls).toBe(1);
    expect(r.reward).toBe(1);
  });
});

describe("tool error types", () => {
  it("marks unknown tools, invalid arguments and timeouts in the result's metadata", async () => {
    const env = makeEnv();
    await env.init("e1", task);
    const unknown = await env.runTool("e1", { name: "nosuch", arguments: {} });
    expect(unknown.metadata).toEqual({ errorType: "tool_not_found" });
    const invalid = await env.runTool("e1", { name: "echo", arguments: { text: 5 } });
    expect(invalid.metadata).toEqual({ errorType: "invalid_args" });
    const hung = await env.runTool("e1", { name: "hang", arguments: {} });
    expect(hung).toMatchObject({ isError: true, metadata: { errorType: "timeout" } });
    const own = await env.runTool("e1", { name: "fail", arguments: {} });
    expect(own).toEqual({ content: "Error: nope", isError: true });
    await env.release("e1");
  });
});
