import { describe, expect, it } from "vitest";
import { elements, firstElement, replaceElements, scanAttrs, startTags, XmlScanner } from "./xml-scan.js";

describe("xml-scan", () => {
  it("finds elements by local name, any prefix, in document order; self-closing ones with no content", () => {
    const xml = '<row r="1"><x:c r="A1"><v>1</v></x:c><c r="B1"/><cx/><c r="C1" ><f>1+1</f ></c ></row>';
    expect([...elements(xml, "c")].map((e) => [e.tag.qname, e.tag.attrs, e.tag.selfClosing, e.inner])).toEqual([
      ["x:c", ' r="A1"', false, "<v>1</v>"],
      ["c", ' r="B1"', true, ""],
      ["c", ' r="C1" ', false, "<f>1+1</f >"],
    ]);
    expect(firstElement(xml, "f")?.inner).toBe("1+1");
    expect([...startTags(xml, new Set(["row", "c"]))].map((t) => t.local)).toEqual(["row", "c", "c", "c"]);
  });

  it("an element never closed ends the scan (nothing after it can close it); a tag never ended too", () => {
    expect([...elements("<c>1</c><c>2<c>3</c>", "c")].map((e) => e.inner)).toEqual(["1", "2<c>3"]);
    expect([...elements("<c>1</c><c>2<c>3", "c")].map((e) => e.inner)).toEqual(["1"]);
    const s = new XmlScanner('<c r="A1"><c r="A2"');
    expect(s.next("c")?.attrs).toBe(' r="A1"');
    expect(s.next("c")).toBeUndefined();
  });

  it("replaceElements rewrites only what the callback returns, keeping every other byte", () => {
    const xml = '<a><c r="A1"><f>X</f></c><c r="A2"/><c r="A3"><f>Y</f></c>tail';
    const out = replaceElements(xml, "c", (el) => (el.inner.includes("X") ? "<c/>" : undefined));
    expect(out).toBe('<a><c/><c r="A2"/><c r="A3"><f>Y</f></c>tail');
    expect(replaceElements(xml, "c", () => undefined)).toBe(xml);
  });

  it("scanAttrs finds the pairs the attribute regex finds", () => {
    const RE = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
    const viaRegex = (s: string) => {
      const out: Record<string, string> = {};
      for (const m of s.matchAll(RE)) out[m[1]!] = m[2] ?? m[3] ?? "";
      return out;
    };
    const pieces = ['r="A1"', "t='s'", " ", 'x:id = "3"', '="', "'", '9a="1"', "b", "=", "c-d.e='v'", '"', "\n"];
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    for (let i = 0; i < 2000; i++) {
      const s = Array.from({ length: 1 + Math.floor(rnd() * 8) }, () => pieces[Math.floor(rnd() * pieces.length)]).join(
        "",
      );
      expect(scanAttrs(s), s).toEqual(viaRegex(s));
    }
  });
});
