import { describe, expect, it } from "vitest";
import { AccessTokens, accessTokens, checkBearer, equalsBytes, safeEqual, tokenIdentity } from "./auth.js";

describe("equalsBytes", () => {
  it("matches only the same secret, of any length, reusing its scratch safely", () => {
    const want = Buffer.from("tok-abc");
    expect(equalsBytes("tok-abc", want)).toBe(true);
    expect(equalsBytes("tok-abd", want)).toBe(false);
    expect(equalsBytes("tok-ab", want)).toBe(false);
    expect(equalsBytes("tok-abcd", want)).toBe(false);
    // a wrong presentation of the same length leaves nothing behind that makes the next one pass
    expect(equalsBytes("xxxxxxx", want)).toBe(false);
    expect(equalsBytes("tok-abc", Buffer.from("tok-xyz"))).toBe(false);
    expect(equalsBytes("tok-abc", want)).toBe(true);
  });

  it("compares UTF-8 bytes (a multi-byte secret) and secrets longer than the scratch", () => {
    expect(equalsBytes("clé-ü", Buffer.from("clé-ü"))).toBe(true);
    expect(equalsBytes("cle-uu", Buffer.from("clé-u"))).toBe(false); // same byte length, other bytes
    const long = "s".repeat(2000);
    expect(equalsBytes(long, Buffer.from(long))).toBe(true);
    expect(equalsBytes(`${long.slice(1)}t`, Buffer.from(long))).toBe(false);
  });

  it("never takes characters for bytes: a string whose code units equal the secret's UTF-8 bytes is another secret", () => {
    // "Ã©" is U+00C3 U+00A9: two characters whose codes are the two UTF-8 bytes of "é"
    expect(equalsBytes("Ã©", Buffer.from("é"))).toBe(false);
    expect(equalsBytes("\u00e9", Buffer.from([0xe9]))).toBe(false);
    expect(equalsBytes("é", Buffer.from("é"))).toBe(true);
    // every position counts, the last one too
    expect(equalsBytes("tok-abC", Buffer.from("tok-abc"))).toBe(false);
    expect(equalsBytes("Tok-abc", Buffer.from("tok-abc"))).toBe(false);
  });

  it("safeEqual keeps its answers", () => {
    expect(safeEqual("bench-token", "bench-token")).toBe(true);
    expect(safeEqual("bench-tokeN", "bench-token")).toBe(false);
    expect(safeEqual("", "bench-token")).toBe(false);
  });
});

describe("checkBearer", () => {
  it("accepts the exact header first, and every other accepted form still through the parser", () => {
    const token = "s3cr3t-tok";
    expect(checkBearer(`Bearer ${token}`, token)).toBeUndefined();
    expect(checkBearer(`bearer ${token}`, token)).toBeUndefined();
    expect(checkBearer(`Bearer  ${token} `, token)).toBeUndefined();
    expect(checkBearer(`Basic ${Buffer.from(`u:${token}`).toString("base64")}`, token)).toBeUndefined();
    // another server's token in the same process: the cached header is per token
    expect(checkBearer("Bearer other", "other")).toBeUndefined();
    expect(checkBearer(`Bearer ${token}`, "other")?.status).toBe(403);
    expect(checkBearer(`Bearer ${token}x`, token)?.status).toBe(403);
    expect(checkBearer(`Bearer ${token.slice(1)}`, token)?.status).toBe(403);
    expect(checkBearer(token, token)?.status).toBe(401);
    expect(checkBearer(undefined, token)?.status).toBe(401);
  });
});

describe("AccessTokens", () => {
  const basic = (t: string) => `Basic ${Buffer.from(`benchmax:${t}`).toString("base64")}`;

  it("accepts the operator's token and each client's, Bearer or Basic, and names the client by a hash", () => {
    const a = new AccessTokens("op-token", ["client-a", "client-b"]);
    for (const t of ["op-token", "client-a", "client-b"]) {
      expect(a.check(`Bearer ${t}`)).toBeUndefined();
      expect(a.check(basic(t))).toBeUndefined();
      expect(a.identityOf(`Bearer ${t}`)).toBe(tokenIdentity(t));
      expect(a.identityOf(basic(t))).toBe(tokenIdentity(t));
    }
    expect(tokenIdentity("client-a")).toMatch(/^token:[0-9a-f]{12}$/);
    expect(tokenIdentity("client-a")).not.toBe(tokenIdentity("client-b"));
    expect(a.check(undefined)?.status).toBe(401);
    expect(a.check("Token x")?.status).toBe(401);
    expect(a.check("Bearer client-c")?.status).toBe(403);
    expect(a.identityOf("Bearer client-c")).toBeUndefined();
    expect(a.identityOf(undefined)).toBeUndefined();
  });

  it("refuses a bad list with a message naming the token by its place, never its value", () => {
    expect(() => new AccessTokens("op", ["a", "a"])).toThrow(/client token 2 is given twice/);
    expect(() => new AccessTokens("op", ["op"])).toThrow(/client token 1 is given twice/);
    expect(() => new AccessTokens("op", [" "])).toThrow(/client token 1 is empty/);
    expect(() => new AccessTokens("op", ["a "])).toThrow(/client token 1 has leading or trailing whitespace/);
    expect(() => accessTokens(undefined, ["a"])).toThrow(/clientTokens need an operator token/);
    expect(accessTokens(undefined, [])).toBeUndefined();
    expect(accessTokens("op", undefined)?.size).toBe(1);
  });
});
