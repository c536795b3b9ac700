import { getEventListeners } from "node:events";
import { afterEach, describe, expect, it, vi } from "vitest";
import { McpConnection } from "./connection.js";
import { perRequestSignalFetch } from "./per-request-signal.js";
import { serveMcpHttp } from "./serve-mcp.js";
import { sumEnv } from "./test-utils/sum-env.js";

const closers: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  vi.restoreAllMocks();
  while (closers.length) await closers.pop()!().catch(() => {});
});

/** The streamable-HTTP transport's own AbortSignal: it lives as long as the connection (the SDK keeps it private). */
function transportSignal(conn: McpConnection): AbortSignal {
  const t = conn.client.transport as unknown as { _abortController?: AbortController };
  if (!t._abortController) throw new Error("the SDK's streamable-HTTP transport has no _abortController any more");
  return t._abortController.signal;
}

describe("McpConnection over streamable HTTP", () => {
  it("adds no abort listener per call to the connection's long-lived signal (2,000 calls)", async () => {
    const { env } = sumEnv();
    const server = await serveMcpHttp(env, { port: 0 });
    closers.push(() => server.close());
    const conn = await McpConnection.open({ type: "http", url: server.url });
    closers.push(() => conn.close());
    const signal = transportSignal(conn);
    await conn.callTool("add", { n: 1 }, 10_000);
    const before = getEventListeners(signal, "abort").length;
    for (let i = 0; i < 2_000; i++) {
      const r = await conn.callTool("add", { n: 1 }, 10_000);
      expect(r.isError).toBeFalsy();
    }
    const after = getEventListeners(signal, "abort").length;
    expect(after).toBeLessThanOrEqual(before);
    expect(after).toBeLessThan(10);
  }, 120_000);
});

describe("perRequestSignalFetch", () => {
  it("gives each request its own signal, aborted when the transport's signal aborts", async () => {
    const seen: AbortSignal[] = [];
    vi.spyOn(globalThis, "fetch").mockImplementation(async (_url, init) => {
      seen.push(init!.signal!);
      return new Response("{}");
    });
    const transport = new AbortController();
    await perRequestSignalFetch("http://127.0.0.1:1/mcp", { method: "POST", signal: transport.signal });
    await perRequestSignalFetch("http://127.0.0.1:1/mcp", { method: "POST", signal: transport.signal });
    expect(seen).toHaveLength(2);
    expect(seen[0]).not.toBe(transport.signal);
    expect(seen[0]).not.toBe(seen[1]);
    expect(getEventListeners(transport.signal, "abort")).toHaveLength(0);
    transport.abort(new Error("closed"));
    expect(seen.every((s) => s.aborted)).toBe(true);
  });

  it("passes a request without a signal through unchanged", async () => {
    const spy = vi.spyOn(globalThis, "fetch").mockResolvedValue(new Response("{}"));
    const init = { method: "GET" };
    await perRequestSignalFetch("http://127.0.0.1:1/mcp", init);
    expect(spy).toHaveBeenCalledWith("http://127.0.0.1:1/mcp", init);
  });
});
