/**
 * Linear scans of the XML a model wrote (worksheet, workbook, relationship and string parts), for the readers
 * that pick elements out of it without a full parser. A regex such as `<c\b[^>]*>([\s\S]*?)<\/c>` restarts its lazy
 * scan at every `<c` and runs to the end of the text each time one is never closed: 300k unclosed tags in a few KB of
 * zip cost minutes. These scans look at each character a bounded number of times: a tag that is never closed ends
 * the scan for that tag name (nothing after it can close it either).
 */

/** One start tag: `<x:c r="A1">` gives qname `x:c`, local `c`, attrs ` r="A1"`. */
export interface StartTag {
  qname: string;
  local: string;
  /** The text between the name and `>` (without a self-closing `/`). */
  attrs: string;
  selfClosing: boolean;
  /** Index of `<`. */
  start: number;
  /** Index just after `>`. */
  end: number;
}

/** One element: its start tag, and its content and end (just after the close tag) when it is not self-closing. */
export interface Element {
  tag: StartTag;
  /** The content between the start and the close tag ("" for a self-closing element). */
  inner: string;
  /** Index just after the element. */
  end: number;
}

const isNameChar = (c: number) =>
  (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95 || c === 46 || c === 45 || c === 58;
const isSpace = (c: number) => c === 32 || c === 9 || c === 10 || c === 13;

/** The wanted local name that `xml[start, end)` spells, or undefined (no string made for a name not wanted). */
function matchLocal(xml: string, start: number, end: number, locals: ReadonlySet<string> | string): string | undefined {
  const len = end - start;
  if (typeof locals === "string") return len === locals.length && xml.startsWith(locals, start) ? locals : undefined;
  for (const l of locals) if (len === l.length && xml.startsWith(l, start)) return l;
  return undefined;
}

/**
 * Element scanner over `xml[from, to)`. `next` finds start tags of the given local names (any namespace prefix) in
 * document order; `element` reads a start tag's content up to its close tag. Each finds its way with `indexOf`, and
 * remembers what it could not find, so a text of n characters costs O(n) whatever its shape.
 */
export class XmlScanner {
  pos: number;
  private noGt = false;
  /** Close tags known to be absent from a position on (made on the first miss). */
  private noClose: Map<string, number> | undefined;

  constructor(
    readonly xml: string,
    from = 0,
    readonly to = xml.length,
  ) {
    this.pos = from;
  }

  /** The next start tag whose local name is in `locals`, from `pos` on; undefined when there is none. */
  next(locals: ReadonlySet<string> | string): StartTag | undefined {
    const { xml, to } = this;
    while (this.pos < to && !this.noGt) {
      const lt = xml.indexOf("<", this.pos);
      if (lt < 0 || lt >= to) {
        this.pos = to;
        return undefined;
      }
      let e = lt + 1;
      let colon = -1;
      while (e < to && isNameChar(xml.charCodeAt(e))) {
        if (xml.charCodeAt(e) === 58) colon = e;
        e++;
      }
      this.pos = Math.max(e, lt + 1);
      if (e === lt + 1) continue;
      const local = matchLocal(xml, colon >= 0 ? colon + 1 : lt + 1, e, locals);
      if (local === undefined) continue;
      const qname = colon >= 0 ? xml.slice(lt + 1, e) : local;
      const gt = xml.indexOf(">", e);
      if (gt < 0 || gt >= to) {
        this.noGt = true; // no tag after this one can end either
        this.pos = to;
        return undefined;
      }
      const selfClosing = xml.charCodeAt(gt - 1) === 47 && gt - 1 >= e;
      this.pos = gt + 1;
      return { qname, local, attrs: xml.slice(e, selfClosing ? gt - 1 : gt), selfClosing, start: lt, end: gt + 1 };
    }
    return undefined;
  }

  /**
   * The element a start tag opens: its content up to the first `</qname>` after it (as a lazy regex would take
   * it), and `pos` moved past it. Undefined (and `pos` left after the start tag) when it is never closed.
   */
  element(tag: StartTag): Element | undefined {
    if (tag.selfClosing) return { tag, inner: "", end: tag.end };
    const close = this.closeOf(tag.qname, tag.end);
    if (!close) return undefined;
    this.pos = close.end;
    return { tag, inner: this.xml.slice(tag.end, close.start), end: close.end };
  }

  /** The next `</qname>` (`</qname >` too) from `from`, within the scanner's end. */
  private closeOf(qname: string, from: number): { start: number; end: number } | undefined {
    const known = this.noClose?.get(qname);
    if (known !== undefined && from >= known) return undefined;
    const { xml, to } = this;
    const needle = `</${qname}`;
    let p = from;
    for (;;) {
      const i = xml.indexOf(needle, p);
      if (i < 0 || i + needle.length > to) break;
      let j = i + needle.length;
      while (j < to && isSpace(xml.charCodeAt(j))) j++;
      if (j < to && xml.charCodeAt(j) === 62) return { start: i, end: j + 1 };
      p = Math.max(j, i + needle.length);
    }
    this.noClose ??= new Map();
    this.noClose.set(qname, Math.min(known ?? from, from));
    return undefined;
  }
}

/** Every element of the given local names in `xml[from, to)`, in document order (unclosed ones end the scan). */
export function* elements(
  xml: string,
  locals: ReadonlySet<string> | string,
  from = 0,
  to = xml.length,
): Generator<Element> {
  const s = new XmlScanner(xml, from, to);
  for (let t = s.next(locals); t; t = s.next(locals)) {
    const el = s.element(t);
    if (!el) return;
    yield el;
  }
}

/** The first element of a local name in `xml` (its content; "" when self-closing), or undefined. */
export function firstElement(xml: string, local: string): Element | undefined {
  const s = new XmlScanner(xml);
  const t = s.next(local);
  return t && s.element(t);
}

/** Every start tag of a local name in `xml[from, to)`, in document order. */
export function* startTags(xml: string, local: ReadonlySet<string> | string, from = 0, to = xml.length) {
  const s = new XmlScanner(xml, from, to);
  for (let t = s.next(local); t; t = s.next(local)) yield t;
}

/**
 * `xml` with elements replaced: `fn` returns the replacement text of a whole element, or undefined to keep it. The
 * text after an element that is never closed is kept as it is.
 */
export function replaceElements(
  xml: string,
  locals: ReadonlySet<string> | string,
  fn: (el: Element, whole: string) => string | undefined,
): string {
  const parts: string[] = [];
  let last = 0;
  for (const el of elements(xml, locals)) {
    const whole = xml.slice(el.tag.start, el.end);
    const next = fn(el, whole);
    if (next === undefined) continue;
    parts.push(xml.slice(last, el.tag.start), next);
    last = el.end;
  }
  if (last === 0) return xml;
  parts.push(xml.slice(last));
  return parts.join("");
}

/**
 * The attributes of a start tag's text: `name="value"` / `name='value'` pairs, entities decoded by `decode`. The same
 * pairs as `/([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g` finds, in one pass (that regex is quadratic on a
 * long run of name characters, or on a quote never closed).
 */
export function scanAttrs(s: string, decode: (v: string) => string = (v) => v): Record<string, string> {
  const out: Record<string, string> = {};
  const n = s.length;
  let noDq = false;
  let noSq = false;
  let i = 0;
  while (i < n) {
    const c = s.charCodeAt(i);
    if (!((c >= 97 && c <= 122) || (c >= 65 && c <= 90) || c === 95)) {
      i++;
      continue;
    }
    let j = i + 1;
    while (j < n && isNameChar(s.charCodeAt(j))) j++;
    let k = j;
    while (k < n && isSpace(s.charCodeAt(k))) k++;
    if (s.charCodeAt(k) !== 61) {
      i = j;
      continue;
    }
    k++;
    while (k < n && isSpace(s.charCodeAt(k))) k++;
    const q = s.charCodeAt(k);
    if (q !== 34 && q !== 39) {
      i = j;
      continue;
    }
    const end = (q === 34 ? noDq : noSq) ? -1 : s.indexOf(q === 34 ? '"' : "'", k + 1);
    if (end < 0) {
      if (q === 34) noDq = true;
      else noSq = true;
      i = j;
      continue;
    }
    out[s.slice(i, j)] = decode(s.slice(k + 1, end));
    i = end + 1;
  }
  return out;
}
