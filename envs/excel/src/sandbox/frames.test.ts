import { afterEach, describe, expect, it, vi } from "vitest";
import { encodeFrame, FrameError, FrameReader } from "./frames.js";

afterEach(() => vi.restoreAllMocks());

describe("FrameReader", () => {
  it("splits frames that arrive a byte at a time, and several frames in one chunk", () => {
    const a = encodeFrame({ t: "out", n: 1 }, Buffer.from("hello"));
    const b = encodeFrame({ t: "ready" });
    const r = new FrameReader(1 << 10, 1 << 10);
    const got = [];
    for (const byte of Buffer.concat([a, b])) got.push(...r.push(Buffer.from([byte])));
    expect(got.map((f) => [f.head, f.body.toString()])).toEqual([
      [{ t: "out", n: 1 }, "hello"],
      [{ t: "ready" }, ""],
    ]);
    const both = new FrameReader(1 << 10, 1 << 10).push(Buffer.concat([a, b, a]));
    expect(both.map((f) => f.head.t)).toEqual(["out", "ready", "out"]);
  });

  it("joins a big body's chunks once, when the whole frame is in (not once per chunk)", () => {
    const body = Buffer.alloc(4 << 20, 7);
    const frame = encodeFrame({ t: "saved" }, body);
    const r = new FrameReader(1 << 10, 8 << 20);
    const concat = vi.spyOn(Buffer, "concat");
    const got = [];
    for (let i = 0; i < frame.length; i += 16 << 10) got.push(...r.push(frame.subarray(i, i + (16 << 10))));
    expect(got).toHaveLength(1);
    expect(got[0]!.body.equals(body)).toBe(true);
    expect(concat.mock.calls.length).toBeLessThanOrEqual(1); // 256 chunks: joined once
  });

  it("refuses a head or body past its cap from the header alone", () => {
    const big = encodeFrame({ t: "x" }, Buffer.alloc(2000));
    expect(() => new FrameReader(1 << 10, 1000).push(big.subarray(0, 8))).toThrow(FrameError);
    const head = encodeFrame({ t: "x".repeat(3000) });
    expect(() => new FrameReader(1000, 1000).push(head.subarray(0, 8))).toThrow(/head of \d+ bytes/);
    const notJson = Buffer.concat([Buffer.from([0, 0, 0, 3, 0, 0, 0, 0]), Buffer.from("{x]")]);
    expect(() => new FrameReader(100, 100).push(notJson)).toThrow(/not JSON/);
  });
});
