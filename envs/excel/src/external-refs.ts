/**
 * External references are refused before LibreOffice sees a model-written workbook, as Excel does with links
 * disabled: a formula that names another workbook, a URL or a file path, or a DDE channel, becomes the error value
 * `#REF!` (its cell keeps no formula), and the parts that point outside the file (external-link parts, data
 * connections, linked pictures and other external relationships but hyperlinks) are removed. The jail
 * (libreoffice-jail.ts) is the defence for what cannot be seen statically (an INDIRECT whose text is built at run
 * time): it has no network and no host file.
 */
import { zipFiles } from "./raw-xlsx.js";
import { firstElement, replaceElements, scanAttrs } from "./xml-scan.js";
import { ZipReader } from "./zip.js";

export interface Refusal {
  /** The part the reference was in (`xl/worksheets/sheet1.xml`). */
  part: string;
  /** The cell (`B8`), defined name (`name X`) or part removed. */
  where: string;
  why: string;
}

const unescapeXml = (s: string) =>
  s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, "&");

/** A string literal that names a workbook, a URL or a path (LibreOffice's `'file:…'#$Sheet.A1` included). */
const EXTERNAL_TEXT = /\[|:\/\/|^\s*(?:'\s*)?file:|\\\\|'#\$|^\s*\/|^\s*'\/|^\s*[A-Za-z]:\\/i;

/** Characters that end a `[book]Sheet` reference before its `!` (Excel's operators, separators and spaces). */
const REF_END = new Set([...' \t\r\n!(),;+-*/&=<>^%"{}'].map((c) => c.charCodeAt(0)));
/** Characters that may not stand right before a workbook's `[` (a table's `Table1[Col]`, nested brackets). */
const WORD_BEFORE_BRACKET = /[A-Za-z0-9_.\]\\[]/;

/**
 * One pass over a formula: its code with string literals emptied (`""`), the literals' texts, the code with quoted
 * sheet names emptied too (`''`), and the quoted names with whether a `!` follows. A literal or name that is never
 * closed runs to the end (as Excel's tokenizer reads it).
 */
function tokens(formula: string): { code: string; unquoted: string; strings: string[]; names: string[] } {
  const strings: string[] = [];
  const names: string[] = [];
  const code: string[] = [];
  const unquoted: string[] = [];
  const n = formula.length;
  let last = 0;
  for (let i = 0; i < n; i++) {
    const q = formula[i];
    if (q !== '"' && q !== "'") continue;
    let j = i + 1;
    for (; j < n; j++) {
      if (formula[j] !== q) continue;
      if (formula[j + 1] === q) j++;
      else break;
    }
    const text = formula.slice(i + 1, Math.min(j, n)).replaceAll(q + q, q);
    const between = formula.slice(last, i);
    if (q === '"') {
      strings.push(text);
      code.push(between, '""');
      unquoted.push(between, '""');
    } else {
      const whole = formula.slice(i, Math.min(j + 1, n));
      if (formula[j + 1] === "!") names.push(text);
      code.push(between, whole);
      unquoted.push(between, "''");
    }
    i = j; // the closing quote (or the end)
    last = Math.min(j + 1, n);
  }
  code.push(formula.slice(last));
  unquoted.push(formula.slice(last));
  return { code: code.join(""), unquoted: unquoted.join(""), strings, names };
}

/** `[1]Sheet1!A1`, `[book.xlsx]Sheet1!A1`, `[1]!Name`: a `[` not opening a structured reference, then `]…!`. */
function workbookBracket(s: string): boolean {
  let p = s.indexOf("[");
  let checkedTo = -1; // the scan for `!` after a `]` already reached here without finding one
  while (p >= 0) {
    if (p === 0 || !WORD_BEFORE_BRACKET.test(s[p - 1]!)) {
      const q = s.indexOf("]", p + 1);
      if (q < 0) return false; // no `]` after this one closes any later `[` either
      let k = Math.max(q + 1, checkedTo);
      while (k < s.length && !REF_END.has(s.charCodeAt(k))) k++;
      if (k < s.length && s[k] === "!") return true;
      checkedTo = k;
    }
    p = s.indexOf("[", p + 1);
  }
  return false;
}

/**
 * Why a formula reaches outside its workbook, or null. Looks at the formula outside string literals for a
 * `[book]Sheet!` or `'…[book]…'!` reference and DDE's `app|topic!item`, and at the string literals of a formula
 * that calls INDIRECT (or LibreOffice's own external functions) for a workbook, URL or path. Linear in the formula's
 * length (a model writes formulas of any length).
 */
export function externalReason(formula: string): string | null {
  const { code, unquoted, strings, names } = tokens(formula);
  for (const name of names) {
    if (name.includes("[") || /^(?:file:|\/)/i.test(name) || name.includes("://"))
      return "a reference to another workbook";
  }
  if (workbookBracket(unquoted)) return "a reference to another workbook";
  // app|topic!item: a `|` right after a name character, with a `!` somewhere after it
  const bar = code.search(/[A-Za-z0-9_.]\|/);
  if (bar >= 0 && code.indexOf("!", bar + 2) >= 0) return "a DDE link";
  if (/\b(DDE|WEBSERVICE|FILTERXML)\s*\(/i.test(unquoted)) return "an external data function";
  if (/\bINDIRECT\s*\(/i.test(unquoted) && strings.some((s) => EXTERNAL_TEXT.test(s)))
    return "INDIRECT of another workbook, a URL or a path";
  return null;
}

const REF_CELL = (attrs: string) => `<c${attrs.replace(/\st="[^"]*"/, "")} t="e"><v>#REF!</v></c>`;
const attr = (attrs: string, name: string) => scanAttrs(attrs)[name];

/** Rewrite the formula cells of one sheet that reach outside: `#REF!` values, no formula. */
function sheetXml(xml: string, part: string, out: Refusal[]): string {
  // shared formulas: a refused master takes its whole group with it
  const refusedShared = new Set<string>();
  let changed = false;
  let next = replaceElements(xml, "c", (cell) => {
    const f = firstElement(cell.inner, "f");
    if (!f || f.tag.selfClosing) return undefined;
    const why = externalReason(unescapeXml(f.inner));
    if (!why) return undefined;
    const fa = scanAttrs(f.tag.attrs);
    if (fa.t === "shared" && fa.si !== undefined) refusedShared.add(fa.si);
    out.push({ part, where: attr(cell.tag.attrs, "r") ?? "?", why });
    changed = true;
    return REF_CELL(cell.tag.attrs);
  });
  if (refusedShared.size) {
    next = replaceElements(next, "c", (cell) => {
      const f = firstElement(cell.inner, "f");
      const fa = f?.tag.selfClosing ? scanAttrs(f.tag.attrs) : undefined;
      if (fa?.t !== "shared" || fa.si === undefined || !refusedShared.has(fa.si)) return undefined;
      out.push({ part, where: attr(cell.tag.attrs, "r") ?? "?", why: "shares a refused formula" });
      return REF_CELL(cell.tag.attrs);
    });
  }
  // conditional formats and data validations: their formulas reach outside too
  next = replaceElements(next, FORMULA_TAGS, (el) => {
    const why = externalReason(unescapeXml(el.inner));
    if (!why) return undefined;
    out.push({ part, where: el.tag.local, why });
    changed = true;
    return `<${el.tag.qname}>#REF!</${el.tag.qname}>`;
  });
  return changed || refusedShared.size ? next : xml;
}

const FORMULA_TAGS = new Set(["formula", "formula1", "formula2"]);

/** Defined names whose formula reaches outside become `#REF!`; `<externalReferences>` goes. */
function workbookXml(xml: string, part: string, out: Refusal[]): string {
  let next = replaceElements(xml, "externalReferences", () => {
    out.push({ part, where: "externalReferences", why: "external-link parts" });
    return "";
  });
  next = replaceElements(next, "definedName", (el) => {
    if (el.tag.selfClosing) return undefined;
    const why = externalReason(unescapeXml(el.inner));
    if (!why) return undefined;
    out.push({ part, where: `name ${attr(el.tag.attrs, "name") ?? "?"}`, why });
    return `<${el.tag.qname}${el.tag.attrs}>#REF!</${el.tag.qname}>`;
  });
  return next;
}

const DROPPED_PART = /^xl\/(externalLinks\/|connections\.xml$|queryTables\/)/;
const KEEP_EXTERNAL_TYPE = /\/hyperlink$/;

/** Relationships: those to dropped parts and every external one but hyperlinks are removed. */
function relsXml(xml: string, part: string, out: Refusal[]): string {
  return replaceElements(xml, "Relationship", (el) => {
    const a = scanAttrs(el.tag.attrs);
    const type = a.Type ?? "";
    const target = a.Target ?? "";
    const external = /^External$/i.test(a.TargetMode ?? "");
    const dropped =
      /externalLink|connections|queryTable/i.test(type) ||
      /externalLinks\/|connections\.xml|queryTables\//.test(target);
    if (dropped || (external && !KEEP_EXTERNAL_TYPE.test(type))) {
      out.push({
        part,
        where: target.slice(0, 200),
        why: external ? "an external relationship" : "an external-link part",
      });
      return "";
    }
    return undefined;
  });
}

/** Content-type overrides of the dropped parts. */
function contentTypesXml(xml: string): string {
  return replaceElements(xml, "Override", (el) =>
    /^\/xl\/(?:externalLinks\/|connections\.xml|queryTables\/)/.test(scanAttrs(el.tag.attrs).PartName ?? "")
      ? ""
      : undefined,
  );
}

export interface Sealed {
  /** The workbook LibreOffice may see (the input itself when nothing was refused). */
  xlsx: Buffer;
  refused: Refusal[];
}

/**
 * Refuse every external reference of a workbook (see the module comment). A file that is not a readable zip is
 * returned as it is: LibreOffice fails to open it, and that is the file's own outcome.
 */
export function refuseExternalRefs(xlsx: Buffer): Sealed {
  let zip: ZipReader;
  let names: string[];
  try {
    zip = new ZipReader(xlsx);
    names = zip.names();
  } catch {
    return { xlsx, refused: [] };
  }
  const refused: Refusal[] = [];
  const files: Array<[string, string | Buffer]> = [];
  try {
    for (const name of names) {
      if (name.endsWith("/")) continue;
      if (DROPPED_PART.test(name)) {
        refused.push({ part: name, where: name, why: "an external-link or data-connection part" });
        continue;
      }
      if (/^xl\/worksheets\/[^/]+\.xml$/.test(name)) files.push([name, sheetXml(zip.readText(name), name, refused)]);
      else if (name === "xl/workbook.xml") files.push([name, workbookXml(zip.readText(name), name, refused)]);
      else if (name.endsWith(".rels")) files.push([name, relsXml(zip.readText(name), name, refused)]);
      else if (/^xl\/drawings\/[^/]+\.xml$/.test(name)) {
        const xml = zip.readText(name);
        const next = xml.replace(/\s(?:r|[A-Za-z0-9]+):link="[^"]*"/g, () => {
          refused.push({ part: name, where: "linked picture", why: "a linked picture" });
          return "";
        });
        files.push([name, next]);
      } else if (name === "[Content_Types].xml") {
        const xml = zip.readText(name);
        files.push([name, contentTypesXml(xml)]);
      } else files.push([name, zip.read(name)]);
    }
  } catch {
    return { xlsx, refused: [] };
  }
  return refused.length ? { xlsx: zipFiles(files), refused } : { xlsx, refused };
}
