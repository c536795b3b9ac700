import { describe, expect, it } from "vitest";
import { serveToken } from "./serve.js";

describe("serve token (issue 27: a Kubernetes Secret from `openssl rand -hex 32 > token.txt`)", () => {
  it("drops the trailing newline a token file carries, so clients sending the bare token get in", () => {
    expect(serveToken(undefined, "abc123\n")).toBe("abc123");
    expect(serveToken(" abc \r\n", "other")).toBe("abc");
    expect(serveToken(undefined, undefined)).toBeUndefined();
    // a blank token is no token: the server then refuses to bind beyond loopback without --insecure
    expect(serveToken(undefined, "\n")).toBeUndefined();
  });
});
