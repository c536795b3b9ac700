import { describe, expect, it } from "vitest";
import { jsonlLines } from "./jsonl.js";

describe("jsonlLines", () => {
  it("parses each non-blank line, numbered from 1, trimmed", () => {
    const lines = [...jsonlLines('{"a":1}\n\n  [2]  \r\n"x"\n')];
    expect(lines).toEqual([
      { line: 1, text: '{"a":1}', last: false, value: { a: 1 } },
      { line: 3, text: "[2]", last: false, value: [2] },
      { line: 4, text: '"x"', last: true, value: "x" },
    ]);
  });

  it("gives a bad line its parse error, and marks the last non-blank line (a torn write)", () => {
    const lines = [...jsonlLines('{"a":\n1\n{"torn"\n\n  \n')];
    expect(lines.map((l) => [l.line, l.last, l.error instanceof SyntaxError])).toEqual([
      [1, false, true],
      [2, false, false],
      [3, true, true],
    ]);
    expect(lines[0]!.value).toBeUndefined();
    expect(lines[0]!.error!.message).toMatch(/JSON/);
  });

  it("yields nothing for an empty or blank text", () => {
    expect([...jsonlLines("")]).toEqual([]);
    expect([...jsonlLines("\n \n\t\n")]).toEqual([]);
  });
});
