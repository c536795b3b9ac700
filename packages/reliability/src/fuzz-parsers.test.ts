import {
  type AssistantMessage,
  decodeArguments,
  defineEnv,
  extractToolCalls,
  openaiPolicy,
  parseHermes,
  runRollout,
  type ToolCall,
  tool,
} from "@benchmax/core";
import { type FakeOpenAI, startFakeOpenAI } from "@benchmax/core/testing";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { argumentsString, CLOSE, countOpenTags, modelOutput, OPEN, prose, validCall } from "./arbitraries.js";

/**
 * Fuzzing the two tool-call formats with generated model outputs (100,000 in all in this file):
 * no input crashes a parser, every block becomes exactly one call or one error, and valid calls are recovered exactly.
 */

const isPlainObject = (v: unknown) => v !== null && typeof v === "object" && !Array.isArray(v);

function checkItems(items: ReturnType<typeof extractToolCalls>, idsMustBeUnique = true) {
  const ids = new Set<string>();
  for (const it of items) {
    if ("call" in it) {
      expect(typeof it.call.name).toBe("string");
      expect(it.call.name.length).toBeGreaterThan(0);
      expect(isPlainObject(it.call.arguments)).toBe(true);
      ids.add(it.call.id);
    } else {
      expect(typeof it.error.message).toBe("string");
      expect(it.error.message.length).toBeGreaterThan(0);
      ids.add(it.error.id);
    }
  }
  if (idsMustBeUnique) expect(ids.size).toBe(items.length);
}

describe("fuzz: Hermes <tool_call> parser", () => {
  it("40,000 arbitrary replies: never throws; one item per <tool_call> block, each a call or an error", () => {
    let runs = 0;
    fc.assert(
      fc.property(modelOutput, (text) => {
        runs++;
        const parsed = parseHermes(text);
        expect(parsed.items.length).toBe(countOpenTags(text));
        expect(typeof parsed.content).toBe("string");
        for (const it of parsed.items) {
          expect(Boolean(it.call) !== Boolean(it.error)).toBe(true);
          if (it.call) {
            expect(it.call.name.length).toBeGreaterThan(0);
            expect(isPlainObject(it.call.arguments)).toBe(true);
          } else expect(it.error!.message.length).toBeGreaterThan(0);
        }
        const items = extractToolCalls({ role: "assistant", content: text }, "hermes", 3);
        expect(items.length).toBe(parsed.items.length);
        checkItems(items);
      }),
      { numRuns: 40_000 },
    );
    expect(runs).toBe(40_000);
    expect(Object.prototype).not.toHaveProperty("polluted");
  });

  it("20,000 replies of valid calls between prose: every call recovered exactly, in order", () => {
    let runs = 0;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(prose, validCall, fc.boolean()), { minLength: 1, maxLength: 5 }),
        prose,
        (pairs, tail) => {
          runs++;
          const text =
            pairs
              .map(([p, c, asString]) => {
                const body = asString ? { name: c.name, arguments: JSON.stringify(c.arguments) } : c;
                return `${p}${OPEN}\n${JSON.stringify(body)}\n${CLOSE}`;
              })
              .join("") + tail;
          const items = extractToolCalls({ role: "assistant", content: text }, "hermes");
          expect(items.length).toBe(pairs.length);
          items.forEach((it, i) => {
            expect("call" in it).toBe(true);
            if (!("call" in it)) return;
            const want = pairs[i]![1];
            expect(it.call.name).toBe(want.name);
            expect(JSON.stringify(it.call.arguments)).toBe(JSON.stringify(JSON.parse(JSON.stringify(want.arguments))));
          });
        },
      ),
      { numRuns: 20_000 },
    );
    expect(runs).toBe(20_000);
  });
});

describe("fuzz: OpenAI native tool_calls", () => {
  const rawCall = fc.record(
    {
      id: fc.oneof(fc.string({ maxLength: 12 }), fc.constant("")),
      type: fc.constant("function" as const),
      function: fc.record(
        {
          name: fc.oneof(
            { weight: 4, arbitrary: fc.string({ maxLength: 20 }) },
            { weight: 1, arbitrary: fc.constantFrom<unknown>("", null, undefined, 42, {}, ["a"]) },
          ),
          arguments: fc.oneof(
            { weight: 5, arbitrary: argumentsString },
            { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
            { weight: 1, arbitrary: fc.constant(undefined) },
          ),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ["function"] },
  );

  /** What the parser must decide, computed independently of it. */
  function expectedOk(fn: { name?: unknown; arguments?: unknown }): boolean {
    if (typeof fn.name !== "string" || fn.name === "") return false;
    let v = fn.arguments ?? "{}";
    if (typeof v === "string") {
      if (v.trim() === "") return true;
      try {
        v = JSON.parse(v);
      } catch {
        return false;
      }
    }
    return isPlainObject(v);
  }

  it("30,000 tool_calls arrays with arbitrary names and malformed arguments: one call or error each, decided right", () => {
    let runs = 0;
    fc.assert(
      fc.property(
        fc.array(rawCall, { minLength: 1, maxLength: 6 }),
        fc.option(fc.string({ maxLength: 30 })),
        (calls, content) => {
          runs++;
          const message = {
            role: "assistant",
            content,
            tool_calls: calls as unknown as ToolCall[],
          } as AssistantMessage;
          const items = extractToolCalls(message, "openai", 1);
          expect(items.length).toBe(calls.length);
          // the endpoint's own ids are kept (tool messages must answer them); ours are unique when its are
          const given = calls.map((c) => c.id ?? "").filter(Boolean);
          const distinct = new Set(given).size === given.length && !given.some((id) => /^call_\d+_\d+$/.test(id));
          checkItems(items, distinct);
          items.forEach((it, i) => {
            const fn = calls[i]!.function as { name?: unknown; arguments?: unknown };
            expect("call" in it).toBe(expectedOk(fn));
            if ("error" in it && typeof fn.name === "string" && fn.name) expect(it.error.message).toContain(fn.name);
          });
        },
      ),
      { numRuns: 30_000 },
    );
    expect(runs).toBe(30_000);
    expect(Object.prototype).not.toHaveProperty("x");
  });

  it("10,000 arguments values through decodeArguments: an object or a message, never a throw", () => {
    let runs = 0;
    fc.assert(
      fc.property(fc.oneof(argumentsString, fc.jsonValue({ maxDepth: 3 }), fc.anything({ maxDepth: 2 })), (value) => {
        runs++;
        const out = decodeArguments(value);
        if (typeof out === "string") expect(out.length).toBeGreaterThan(0);
        else expect(isPlainObject(out)).toBe(true);
      }),
      { numRuns: 10_000 },
    );
    expect(runs).toBe(10_000);
  });
});

describe("fuzz: endpoint replies end to end (openaiPolicy → runRollout)", () => {
  const replies: unknown[] = [];
  let endpoint: FakeOpenAI;
  let baseURL = "";
  beforeAll(async () => {
    endpoint = await startFakeOpenAI(
      () => ({
        message: (replies.shift() as Record<string, unknown> | undefined) ?? { role: "assistant", content: "done" },
      }),
      { model: "fuzz" },
    );
    baseURL = endpoint.url;
  });
  afterAll(() => endpoint.close());

  const wireCall = fc.record(
    {
      id: fc.string({ maxLength: 8 }),
      type: fc.constant("function"),
      function: fc.record(
        {
          name: fc.oneof(fc.string({ maxLength: 12 }), fc.constantFrom("echo", "", null)),
          arguments: fc.oneof(argumentsString, fc.jsonValue({ maxDepth: 2 })),
        },
        { requiredKeys: [] },
      ),
    },
    { requiredKeys: ["function"] },
  );
  const wireMessage = fc.record({
    role: fc.constant("assistant"),
    content: fc.oneof(fc.constant(null), modelOutput),
    tool_calls: fc.option(fc.array(wireCall, { minLength: 1, maxLength: 4 }), { nil: undefined }),
  });

  it("500 generated endpoint replies (native tool_calls and Hermes text): every rollout completes or truncates, every call answered", async () => {
    const env = defineEnv({
      name: "echo",
      systemPrompt: "",
      tools: [
        tool({
          name: "echo",
          description: "echo",
          parameters: z.object({ x: z.unknown().optional() }),
          execute: () => "ok",
        }),
      ],
      reward: () => ({ r: 1 }),
      rewardWeights: { r: 1 },
    });
    const policy = openaiPolicy({ model: "fuzz", baseURL, apiKey: "sk", maxRetries: 0, timeoutMs: 10_000 });
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(wireMessage, { minLength: 1, maxLength: 2 }),
        fc.constantFrom("openai", "hermes"),
        async (msgs, format) => {
          runs++;
          replies.length = 0;
          replies.push(...msgs);
          const r = await runRollout(env, { id: "t", prompt: "p", groundTruth: null }, policy, {
            rolloutId: `e2e-${runs}`,
            maxTurns: 3,
            toolFormat: format as "openai" | "hermes",
          });
          expect(["completed", "truncated"], `${r.outcome}: ${r.error}`).toContain(r.outcome);
          expect(r.reward).toBe(1);
          // every call the model made is answered by exactly one tool message
          const asked = r.messages
            .filter((m) => m.role === "assistant")
            .reduce(
              (n, m, turn) => n + extractToolCalls(m as AssistantMessage, format as "openai" | "hermes", turn).length,
              0,
            );
          expect(r.messages.filter((m) => m.role === "tool")).toHaveLength(asked);
        },
      ),
      { numRuns: 500 },
    );
    expect(runs).toBe(500);
    await env.close();
  });
});
