/**
 * The gate a model-written workbook passes before anything parses it as a workbook (exceljs on the server's
 * thread, or the scorer): a real zip, bounded sizes (a zip bomb stops at the byte cap while inflating), no DTD in
 * any XML part (entity expansion, external entities), and at most so many cells and shared strings. It runs on a
 * worker thread of the compare pool; what it refuses becomes a tool error the model reads, or a case scored 0.
 */
import { ZipError, ZipReader } from "./zip.js";

export interface InspectCaps {
  /** Most bytes the file itself may have. */
  maxFileBytes: number;
  /** Most bytes all its parts may inflate to, together. */
  maxInflatedBytes: number;
  /** Most cells (`<c>` elements) over all worksheets. */
  maxCells: number;
  /** Most shared strings. */
  maxSharedStrings: number;
  /** Most zip entries. */
  maxEntries: number;
}

export const DEFAULT_INSPECT_CAPS: InspectCaps = {
  maxFileBytes: 64 * 1024 * 1024,
  maxInflatedBytes: 256 * 1024 * 1024,
  maxCells: 1_000_000,
  maxSharedStrings: 1_000_000,
  maxEntries: 10_000,
};

/** Why the file is refused, or undefined when it may be parsed. */
export function inspectXlsx(buf: Buffer, caps: InspectCaps = DEFAULT_INSPECT_CAPS): string | undefined {
  if (buf.length > caps.maxFileBytes) return `the file has ${buf.length} bytes, more than ${caps.maxFileBytes}`;
  let zip: ZipReader;
  try {
    zip = new ZipReader(buf);
  } catch (e) {
    return `not an xlsx file: ${(e as Error).message}`;
  }
  const names = zip.names();
  if (names.length > caps.maxEntries) return `the zip has ${names.length} entries, more than ${caps.maxEntries}`;
  if (!zip.has("[Content_Types].xml")) return "not an xlsx file: no [Content_Types].xml";
  let inflated = 0;
  let cells = 0;
  for (const name of names) {
    if (!/\.(xml|rels|vml)$/i.test(name)) continue;
    let data: Buffer;
    try {
      data = zip.read(name, caps.maxInflatedBytes - inflated);
    } catch (e) {
      if (e instanceof ZipError) return `part ${name}: ${e.message}`;
      throw e;
    }
    inflated += data.length;
    if (inflated > caps.maxInflatedBytes) return `its parts inflate to more than ${caps.maxInflatedBytes} bytes`;
    const head = data.subarray(0, 4096).toString("latin1");
    if (/<!DOCTYPE|<!ENTITY/i.test(head) || data.includes("<!ENTITY") || data.includes("<!DOCTYPE")) {
      return `part ${name} has a DTD (<!DOCTYPE/<!ENTITY), which a workbook never needs`;
    }
    if (/^xl\/worksheets\/[^/]+\.xml$/i.test(name)) {
      cells += count(data, "<c ") + count(data, "<c>");
      if (cells > caps.maxCells) return `its worksheets hold more than ${caps.maxCells} cells`;
    } else if (/^xl\/sharedStrings\.xml$/i.test(name)) {
      const n = count(data, "<si>") + count(data, "<si ");
      if (n > caps.maxSharedStrings) return `it has ${n} shared strings, more than ${caps.maxSharedStrings}`;
    }
  }
  return undefined;
}

function count(buf: Buffer, needle: string): number {
  let n = 0;
  for (let i = buf.indexOf(needle); i >= 0; i = buf.indexOf(needle, i + needle.length)) n++;
  return n;
}
