import { describe, expect, it, vi } from "vitest";

// the SDK is an optional peer: simulate an install without it
vi.mock("openai", () => {
  throw new Error("Cannot find package 'openai' imported from @benchmax/core");
});

const { ensureOpenAI } = await import("../openai-sdk.js");
const { openaiPolicy } = await import("./openai.js");

describe("openai policy without the openai package", () => {
  it("fails with an error naming the fix, as infra_error that is not retried", async () => {
    await expect(ensureOpenAI()).rejects.toThrow(/install openai to use the openai policy/);
    const policy = openaiPolicy({ model: "m", apiKey: "k", baseURL: "http://127.0.0.1:9/v1" });
    const err = await policy
      .act({
        messages: [],
        tools: [],
        task: { id: "t", groundTruth: null },
        rolloutId: "r",
        toolFormat: "openai",
        turn: 0,
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ name: "InfraError", retryable: false });
    expect((err as Error).message).toMatch(/install openai/);
  });
});
