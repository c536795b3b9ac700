import { readFile, stat } from "node:fs/promises";
import { basename, extname, relative } from "node:path";
import { DatasetError, listCorpusFiles } from "@benchmax/core";
import { htmlToText } from "./html-text.js";

/** One document of an offline corpus. */
export interface CorpusDoc {
  title: string;
  text: string;
  url?: string;
  /** Where it came from (`file:line` or a file path), for error messages. */
  where?: string;
}

/** Load a corpus: a JSONL file of `{title, text, url?}` lines, or a folder of .txt / .md / .html files. */
export async function loadCorpus(path: string): Promise<CorpusDoc[]> {
  let info: Awaited<ReturnType<typeof stat>>;
  try {
    info = await stat(path);
  } catch (e) {
    throw new DatasetError(`cannot read corpus (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`, path);
  }
  const docs = info.isDirectory() ? await loadFolder(path) : parseCorpusJsonl(await readFile(path, "utf8"), path);
  if (docs.length === 0) throw new DatasetError("corpus has no documents", path);
  checkUniqueTitles(docs);
  return docs;
}

/** Parse JSONL corpus text; a bad line throws DatasetError naming `file:line` and the field. */
export function parseCorpusJsonl(text: string, path: string): CorpusDoc[] {
  const out: CorpusDoc[] = [];
  const lines = text.replace(/^\uFEFF/, "").split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line) continue;
    const where = `${path}:${i + 1}`;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (e) {
      throw new DatasetError(`malformed JSON line: ${(e as Error).message}`, where);
    }
    if (!row || typeof row !== "object" || Array.isArray(row)) {
      throw new DatasetError("expected an object {title, text, url?}", where, "(row)");
    }
    const r = row as Record<string, unknown>;
    if (typeof r.title !== "string" || !r.title.trim())
      throw new DatasetError("must be a non-empty string", where, "title");
    const body = r.text ?? r.contents ?? r.content;
    if (typeof body !== "string") throw new DatasetError("must be a string", where, "text");
    if (r.url !== undefined && typeof r.url !== "string")
      throw new DatasetError("must be a string when given", where, "url");
    out.push({ title: r.title.trim(), text: body, ...(typeof r.url === "string" ? { url: r.url } : {}), where });
  }
  return out;
}

function titleFromName(file: string): string {
  return basename(file, extname(file)).replace(/[_]+/g, " ").trim();
}

async function loadFolder(dir: string): Promise<CorpusDoc[]> {
  const files = await listCorpusFiles(dir);
  const docs: CorpusDoc[] = [];
  for (const file of files) {
    const where = relative(process.cwd(), file) || file;
    const raw = await readFile(file, "utf8");
    if (raw.includes("\u0000")) throw new DatasetError("not a text file (contains NUL bytes)", where);
    const ext = extname(file).toLowerCase();
    let title = titleFromName(file);
    let text: string;
    if (ext === ".html" || ext === ".htm") {
      const h = htmlToText(raw);
      if (h.title) title = h.title;
      text = h.text;
    } else if (ext === ".md" || ext === ".markdown") {
      const m = /^\s*#\s+(.+?)\s*#*\s*$/m.exec(raw);
      if (m && raw.slice(0, m.index).trim() === "") {
        title = m[1]!;
        text = raw.slice(m.index + m[0].length).trim();
      } else text = raw.trim();
    } else text = raw.trim();
    if (!text) throw new DatasetError("document has no text", where);
    docs.push({ title, text, where });
  }
  return docs;
}

function checkUniqueTitles(docs: CorpusDoc[]): void {
  const seen = new Map<string, string | undefined>();
  for (const d of docs) {
    if (seen.has(d.title)) {
      throw new DatasetError(`duplicate title "${d.title}" (first at ${seen.get(d.title) ?? "?"})`, d.where, "title");
    }
    seen.set(d.title, d.where);
  }
}
