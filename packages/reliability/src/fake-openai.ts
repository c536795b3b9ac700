import { startFakeOpenAI as startEndpoint } from "@benchmax/core/testing";

export type FakeBehaviour = "answer" | "http500" | "http503" | "hang" | "garbage" | "reset";

export interface FakeOpenAI {
  baseURL: string;
  /** Requests seen, by behaviour. */
  hits: Record<FakeBehaviour, number>;
  close(): Promise<void>;
}

/**
 * A local OpenAI-compatible chat.completions endpoint on 127.0.0.1. What it does is chosen per request by a marker
 * in the conversation (`FAULT:http500`, `FAULT:hang`, …); otherwise it answers `<answer>ok</answer>`.
 */
export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const hits: Record<FakeBehaviour, number> = { answer: 0, http500: 0, http503: 0, hang: 0, garbage: 0, reset: 0 };
  const endpoint = await startEndpoint(
    (body) => {
      const marker = /FAULT:(http500|http503|hang|garbage|reset)/.exec(JSON.stringify(body))?.[1] as
        | FakeBehaviour
        | undefined;
      const behaviour: FakeBehaviour = marker ?? "answer";
      hits[behaviour]++;
      switch (behaviour) {
        case "http500":
        case "http503":
          return { status: behaviour === "http500" ? 500 : 503, error: "upstream exploded" };
        case "hang":
        case "reset":
          return behaviour;
        case "garbage":
          return { raw: "{not json at all" };
        default:
          return { message: { role: "assistant", content: "<answer>ok</answer>" } };
      }
    },
    { model: "fake" },
  );
  return { baseURL: endpoint.url, hits, close: () => endpoint.close() };
}
