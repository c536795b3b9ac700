import { getEventListeners } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeOpenAI, startFakeOpenAI } from "./fake-openai.js";
import { openaiPolicy } from "./openai.js";

let fake: FakeOpenAI;
let url = "";
beforeAll(async () => {
  fake = await startFakeOpenAI();
  url = fake.url;
});
afterAll(() => fake.close());

describe("openai policy and the run's abort signal (issue 27: MaxListenersExceededWarning)", () => {
  it("leaves no abort listener behind on a signal shared by many calls, and still aborts through it", async () => {
    const policy = openaiPolicy({ model: "m", baseURL: url, apiKey: "k" });
    const run = new AbortController();
    const warnings: Error[] = [];
    const onWarning = (w: Error) => warnings.push(w);
    process.on("warning", onWarning);
    try {
      for (let i = 0; i < 25; i++) {
        const reply = await policy.act({
          messages: [{ role: "user", content: `q${i}` }],
          tools: [],
          toolFormat: "hermes",
          signal: run.signal,
        } as never);
        expect(reply.message.content).toBe("ok");
      }
      // the SDK's own listener went on a per-call signal; none stayed on the run's
      expect(getEventListeners(run.signal, "abort")).toHaveLength(0);
      await new Promise((r) => setImmediate(r));
      expect(warnings.filter((w) => w.name === "MaxListenersExceededWarning")).toEqual([]);
    } finally {
      process.off("warning", onWarning);
    }
    run.abort();
    await expect(
      policy.act({
        messages: [{ role: "user", content: "late" }],
        tools: [],
        toolFormat: "hermes",
        signal: run.signal,
      } as never),
    ).rejects.toThrow();
  });
});
