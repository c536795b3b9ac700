import { describe, expect, it } from "vitest";
import { z } from "zod/v4";
import { defineEnv } from "./define-env.js";
import { hasStateView, stateViewProblems } from "./state-view.js";
import { tool } from "./tool.js";

const counter = (withView: boolean) =>
  defineEnv<{ id: string; prompt: string; groundTruth: unknown }, { n: number }>({
    name: "counter",
    systemPrompt: "count",
    initState: () => ({ n: 0 }),
    tools: [
      tool<{ n: number }>({
        name: "add",
        description: "add k",
        parameters: z.object({ k: z.number() }),
        execute: ({ k }, { state }) => {
          state.n += k;
          return String(state.n);
        },
      }),
    ],
    reward: () => ({ r: 1 }),
    rewardWeights: { r: 1 },
    ...(withView ? { renderState: (s: { n: number }) => ({ kind: "text" as const, text: `n = ${s.n}` }) } : {}),
  });

describe("StateViewCapability", () => {
  it("is offered only by an env that renders its state, and shows the state after a tool call", async () => {
    expect(hasStateView(counter(false))).toBe(false);
    const env = counter(true);
    if (!hasStateView(env)) throw new Error("counter should offer renderState");
    await env.init("r1", { id: "t", prompt: "p", groundTruth: 1 });
    expect(await env.capabilities.stateView.renderState("r1")).toEqual({ kind: "text", text: "n = 0" });
    await env.runTool("r1", { id: "c1", name: "add", arguments: { k: 3 } });
    expect(await env.capabilities.stateView.renderState("r1")).toEqual({ kind: "text", text: "n = 3" });
    await env.release("r1");
    expect(await env.capabilities.stateView.renderState("r1")).toBeUndefined();
  });

  it("names what is wrong with a malformed view", () => {
    expect(stateViewProblems({ kind: "grid", sheets: [{ name: "S", cells: [[1, "a", null]] }] })).toEqual([]);
    expect(stateViewProblems({ kind: "table" })).toEqual(['the state view\'s kind must be grid or text, got "table"']);
    expect(stateViewProblems({ kind: "grid", sheets: [{ name: "S", cells: [1] }] })).toEqual([
      "sheets[0] (S).cells must be an array of rows",
    ]);
    expect(stateViewProblems({ kind: "text" })).toEqual(["a text state view needs text (a string)"]);
  });
});
