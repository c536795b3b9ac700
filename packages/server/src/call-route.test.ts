import FindMyWay from "find-my-way";
import { describe, expect, it } from "vitest";
import { CALL_ROUTE, callId } from "./call-route.js";
import { ROUTE_LIST } from "./routes.js";

describe("callId (the direct match for POST /v1/rollouts/:id/call)", () => {
  // the router as route-table.ts builds it, every declared route in it
  const router = FindMyWay<FindMyWay.HTTPVersion.V1>({ ignoreTrailingSlash: false, caseSensitive: true });
  for (const r of ROUTE_LIST) router.on(r.method as FindMyWay.HTTPMethod, r.path, () => {}, { path: r.path });

  it("is declared in the route list", () => {
    expect(ROUTE_LIST.some((r) => r.method === "POST" && r.path === CALL_ROUTE)).toBe(true);
  });

  it("answers only what the router would, for paths a client (or a model) can send", () => {
    const paths = [
      "/v1/rollouts/r-1/call",
      "/v1/rollouts/abc_DEF.123~x/call",
      "/v1/rollouts//call",
      "/v1/rollouts/a/b/call",
      "/v1/rollouts/a%2Fb/call",
      "/v1/rollouts/%E2%9C%93/call",
      "/v1/rollouts/r-1/call/",
      "/v1/rollouts/r-1/CALL",
      "/V1/rollouts/r-1/call",
      "/v1/rollouts/r-1/calls",
      "/v1/rollouts/r-1/reward",
      "/v1/rollouts/call",
      "/v1/rollouts/r-1",
      `/v1/rollouts/${"x".repeat(100)}/call`,
      `/v1/rollouts/${"x".repeat(101)}/call`,
      "/v1/rollouts/r;1/call",
      "/v1/rollouts/r:1/call",
      "/v1/rollouts/ü/call",
    ];
    for (const p of paths) {
      const id = callId(p);
      if (id === undefined) continue; // the router decides
      const found = router.find("POST", p);
      expect(found?.store, p).toEqual({ path: CALL_ROUTE });
      expect((found?.params as { id?: string } | undefined)?.id, p).toBe(id);
    }
    expect(callId("/v1/rollouts/r-1/call")).toBe("r-1");
    expect(callId(`/v1/rollouts/${"x".repeat(100)}/call`)).toBe("x".repeat(100));
    for (const p of [
      "/v1/rollouts//call",
      "/v1/rollouts/a/b/call",
      "/v1/rollouts/a%2Fb/call",
      "/v1/rollouts/r-1/call/",
    ]) {
      expect(callId(p), p).toBeUndefined();
    }
  });
});
