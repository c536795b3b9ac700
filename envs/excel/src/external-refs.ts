/**
 * External references are refused before LibreOffice sees a model-written workbook, as Excel does with links
 * disabled: a formula that names another workbook, a URL or a file path, or a DDE channel, becomes the error value
 * `#REF!` (its cell keeps no formula), and the parts that point outside the file (external-link parts, data
 * connections, linked pictures and other external relationships but hyperlinks) are removed. The jail
 * (libreoffice-jail.ts) is the defence for what cannot be seen statically (an INDIRECT whose text is built at run
 * time): it has no network and no host file.
 */
import { zipFiles } from "./raw-xlsx.js";
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
const EXTERNAL_TEXT = /\[|:\/\/|^\s*'?\s*file:|\\\\|'#\$|^\s*\/|^\s*'\/|^\s*[A-Za-z]:\\/i;

/**
 * Why a formula reaches outside its workbook, or null. Looks at the formula outside string literals for a
 * `[book]Sheet!` or `'…[book]…'!` reference and DDE's `app|topic!item`, and at the string literals of a formula
 * that calls INDIRECT (or LibreOffice's own external functions) for a workbook, URL or path.
 */
export function externalReason(formula: string): string | null {
  const strings: string[] = [];
  // code outside "…" literals; quoted sheet names ('…') kept
  const code = formula.replace(/"((?:[^"]|"")*)"/g, (_, s: string) => {
    strings.push(s.replace(/""/g, '"'));
    return '""';
  });
  for (const m of code.matchAll(/'((?:[^']|'')*)'!/g)) {
    if (m[1]!.includes("[") || /:\/\/|^file:|^\//i.test(m[1]!)) return "a reference to another workbook";
  }
  const unquoted = code.replace(/'(?:[^']|'')*'/g, "''");
  // [1]Sheet1!A1, [book.xlsx]Sheet1!A1, [1]!Name: a bracket not opening a structured reference (Table1[Col])
  if (/(^|[^A-Za-z0-9_.\]\\[])\[[^\]]*\][^\s!(),;+\-*/&=<>^%"{}]*!/.test(unquoted))
    return "a reference to another workbook";
  if (/[A-Za-z0-9_.]+\|[^!]*!/.test(code)) return "a DDE link";
  if (/\b(DDE|WEBSERVICE|FILTERXML)\s*\(/i.test(unquoted)) return "an external data function";
  if (/\bINDIRECT\s*\(/i.test(unquoted) && strings.some((s) => EXTERNAL_TEXT.test(s)))
    return "INDIRECT of another workbook, a URL or a path";
  return null;
}

/** A cell with content: `<c …>…</c>` (a self-closing `<c …/>` never matches, so it cannot swallow the next cell). */
const CELL = /<c\b((?:[^>/]|\/(?!>))*)>([\s\S]*?)<\/c>/g;

const REF_CELL = (attrs: string) => {
  const a = attrs.replace(/\s+t="[^"]*"/, "");
  return `<c${a} t="e"><v>#REF!</v></c>`;
};

/** Rewrite the formula cells of one sheet that reach outside: `#REF!` values, no formula. */
function sheetXml(xml: string, part: string, out: Refusal[]): string {
  // shared formulas: a refused master takes its whole group with it
  const refusedShared = new Set<string>();
  let changed = false;
  let next = xml.replace(CELL, (whole, attrs: string, inner: string) => {
    const f = /<f\b([^>]*)>([\s\S]*?)<\/f>/.exec(inner);
    if (!f) return whole;
    const why = externalReason(unescapeXml(f[2]!));
    if (!why) return whole;
    const si = /\bt="shared"/.test(f[1]!) ? /\bsi="(\d+)"/.exec(f[1]!)?.[1] : undefined;
    if (si !== undefined) refusedShared.add(si);
    const ref = /\br="([^"]+)"/.exec(attrs)?.[1] ?? "?";
    out.push({ part, where: ref, why });
    changed = true;
    return REF_CELL(attrs);
  });
  if (refusedShared.size) {
    next = next.replace(CELL, (whole, attrs: string, inner: string) => {
      const f = /<f\b([^>]*)\/>/.exec(inner);
      const si = f && /\bt="shared"/.test(f[1]!) ? /\bsi="(\d+)"/.exec(f[1]!)?.[1] : undefined;
      if (si === undefined || !refusedShared.has(si)) return whole;
      out.push({ part, where: /\br="([^"]+)"/.exec(attrs)?.[1] ?? "?", why: "shares a refused formula" });
      return REF_CELL(attrs);
    });
  }
  // conditional formats and data validations: their formulas reach outside too
  next = next.replace(/<(formula|formula1|formula2)>([\s\S]*?)<\/\1>/g, (whole, tag: string, text: string) => {
    const why = externalReason(unescapeXml(text));
    if (!why) return whole;
    out.push({ part, where: tag, why });
    changed = true;
    return `<${tag}>#REF!</${tag}>`;
  });
  return changed || refusedShared.size ? next : xml;
}

/** Defined names whose formula reaches outside become `#REF!`; `<externalReferences>` goes. */
function workbookXml(xml: string, part: string, out: Refusal[]): string {
  let next = xml.replace(/<externalReferences>[\s\S]*?<\/externalReferences>|<externalReferences\s*\/>/g, () => {
    out.push({ part, where: "externalReferences", why: "external-link parts" });
    return "";
  });
  next = next.replace(/<definedName\b([^>]*)>([\s\S]*?)<\/definedName>/g, (whole, attrs: string, text: string) => {
    const why = externalReason(unescapeXml(text));
    if (!why) return whole;
    out.push({ part, where: `name ${/\bname="([^"]*)"/.exec(attrs)?.[1] ?? "?"}`, why });
    return `<definedName${attrs}>#REF!</definedName>`;
  });
  return next;
}

const DROPPED_PART = /^xl\/(externalLinks\/|connections\.xml$|queryTables\/)/;
const KEEP_EXTERNAL_TYPE = /\/hyperlink$/;

/** Relationships: those to dropped parts and every external one but hyperlinks are removed. */
function relsXml(xml: string, part: string, out: Refusal[]): string {
  return xml.replace(
    /<Relationship\b([^>]*?)\/>|<Relationship\b([^>]*?)>[\s\S]*?<\/Relationship>/g,
    (whole, a1, a2) => {
      const attrs = (a1 ?? a2) as string;
      const type = /\bType="([^"]*)"/.exec(attrs)?.[1] ?? "";
      const target = /\bTarget="([^"]*)"/.exec(attrs)?.[1] ?? "";
      const external = /\bTargetMode="External"/i.test(attrs);
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
      return whole;
    },
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
        files.push([
          name,
          xml.replace(
            /<Override\b[^>]*PartName="\/xl\/(?:externalLinks\/|connections\.xml|queryTables\/)[^"]*"[^>]*\/>/g,
            "",
          ),
        ]);
      } else files.push([name, zip.read(name)]);
    }
  } catch {
    return { xlsx, refused: [] };
  }
  return refused.length ? { xlsx: zipFiles(files), refused } : { xlsx, refused };
}
