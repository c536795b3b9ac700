import type { RolloutResult } from "@benchmax/core";
import { recordedRow } from "@benchmax/core/testing";
import { describe, expect, it } from "vitest";
import { feedEvents, PendingLines } from "./pending-lines.js";

/** A recorded row with its gold explanation, and text in two-, three- and four-byte UTF-8 (a surrogate pair). */
const result = (i: number, extra: Partial<RolloutResult> = {}): RolloutResult => ({
  ...recordedRow(i),
  messages: [{ role: "assistant", content: `answer ${i} ü ✓ 😀` }],
  explain: { extracted: `${i}`, gold: `GOLD-${i} é` },
  ...extra,
});

/** Each pending line, as the file gets it and as the feed shows it (its record without `explain`). */
function lines(p: PendingLines): Array<{ file: string; feed: string }> {
  const b = p.bytes;
  return p.ends.map((end, i) => {
    const start = i === 0 ? 0 : p.ends[i - 1]!;
    return {
      file: b.toString("utf8", start, end),
      feed: `${b.toString("utf8", start, p.feedEnds[i]!)}}`,
    };
  });
}

describe("PendingLines", () => {
  it("encodes each rollout's line as it is added: the file's JSON with explain, the feed's without", () => {
    const p = new PendingLines();
    const rs = [result(1), result(2, { explain: undefined }), result(3)];
    let bytes = 0;
    for (const r of rs) bytes += p.add(r);
    expect(p.count).toBe(3);
    expect(p.length).toBe(bytes);
    const got = lines(p);
    got.forEach(({ file, feed }, i) => {
      expect(file.endsWith("}\n")).toBe(true);
      expect(JSON.parse(file)).toEqual(JSON.parse(JSON.stringify(rs[i])));
      const { explain: _gold, ...rest } = rs[i]!;
      expect(JSON.parse(feed)).toEqual(JSON.parse(JSON.stringify(rest)));
      expect(feed).not.toContain("GOLD");
    });
    // a record without explain: the file's line is its feed form
    expect(got[1]!.file).toBe(`${got[1]!.feed}\n`);
    // the record itself is left as it was (explain is taken off only while its feed form is serialized)
    expect(rs[0]!.explain).toEqual({ extracted: "1", gold: "GOLD-1 é" });
    expect(Buffer.byteLength(got.map((l) => l.file).join(""))).toBe(bytes);
  });

  it("keeps an empty record's explain inside its object", () => {
    const p = new PendingLines();
    p.add({ explain: { gold: "g" } } as unknown as RolloutResult);
    expect(lines(p)).toEqual([{ file: '{"explain":{"gold":"g"}}\n', feed: "{}" }]);
  });

  it("adds nothing for a record JSON cannot hold, and grows past its first buffer", () => {
    const p = new PendingLines();
    expect(() => p.add(result(1, { metadata: { n: 1n } as unknown as Record<string, unknown> }))).toThrow(/BigInt/);
    expect(p.count).toBe(0);
    expect(p.length).toBe(0);
    const big = result(2, { messages: [{ role: "assistant", content: "ü".repeat(200_000) }] });
    p.add(result(1));
    p.add(big);
    const [first, second] = lines(p);
    expect(JSON.parse(first!.file).rolloutId).toBe("r1");
    expect(JSON.parse(second!.file).messages[0].content).toHaveLength(200_000);
    p.clear();
    expect(p.count).toBe(0);
    expect(p.length).toBe(0);
    p.add(result(3));
    expect(JSON.parse(lines(p)[0]!.file).rolloutId).toBe("r3");
  });
});

describe("feedEvents", () => {
  it("renders one rollout event per line: id the offset past the line in the file, data without explain", () => {
    const p = new PendingLines();
    for (const i of [1, 2]) p.add(result(i));
    const start = 1000;
    const text = feedEvents(start, p.bytes, p.ends, p.feedEnds).toString("utf8");
    const events = text
      .split("\n\n")
      .filter(Boolean)
      .map((e) => {
        const [id, event, data] = e.split("\n");
        return { id: Number(id!.slice(4)), event, data: JSON.parse(data!.slice(6)) };
      });
    expect(events.map((e) => e.id)).toEqual(p.ends.map((e) => start + e));
    expect(events.map((e) => e.event)).toEqual(["event: rollout", "event: rollout"]);
    expect(events.map((e) => e.data.rolloutId)).toEqual(["r1", "r2"]);
    expect(events[0]!.data.messages[0].content).toBe("answer 1 ü ✓ 😀");
    expect(text).not.toMatch(/GOLD|explain/);
  });
});
