import { readFile, stat } from "node:fs/promises";
import { basename, extname, relative } from "node:path";
import { DatasetError, jsonlLines, listCorpusFiles, UsageError } from "@benchmax/core";
import * as cheerio from "cheerio";

/** One document of a corpus. `id` is stable across runs (the JSONL id/title or the file's relative path). */
export interface CorpusDoc {
  id: string;
  title: string;
  text: string;
  /** Where it came from: `file:line` or a file path. */
  where: string;
}

/** Plain text of an HTML page (scripts and styles dropped, block elements on their own lines). */
export function htmlToText(html: string): { title: string; text: string } {
  const $ = cheerio.load(html);
  $("script, style, noscript, template").remove();
  const title = ($("title").first().text() || $("h1").first().text()).trim();
  $("p, h1, h2, h3, h4, h5, h6, li, br, div, tr, section, article, blockquote, pre").each((_, el) => {
    $(el).append("\n\n");
  });
  const text = $("body").length ? $("body").text() : $.root().text();
  return {
    title,
    text: text
      .replace(/[ \t]+/g, " ")
      .replace(/\n\s*\n+/g, "\n\n")
      .trim(),
  };
}

/** A markdown document's title: its first line when that is a `# heading` (as the wikipedia env reads it). */
function markdownTitle(text: string): string | undefined {
  const m = /^\s*#\s+(.+?)\s*#*\s*$/m.exec(text);
  return m && text.slice(0, m.index).trim() === "" ? m[1] : undefined;
}

/** A title from a file name: the base name with underscores as spaces. */
function titleFromName(file: string): string {
  return basename(file, extname(file)).replace(/_+/g, " ").trim();
}

/** Parse a corpus JSONL: `{title, text}` rows (also FlashRAG `{id, contents}` with the title on the first line). */
export function parseCorpusJsonl(content: string, file: string): CorpusDoc[] {
  const docs: CorpusDoc[] = [];
  for (const l of jsonlLines(content)) {
    const where = `${file}:${l.line}`;
    if (l.error) throw new DatasetError(`not valid JSON (${l.error.message})`, where);
    const row = l.value as Record<string, unknown>;
    if (!row || typeof row !== "object" || Array.isArray(row))
      throw new DatasetError("a corpus row must be an object", where);
    let title = row.title;
    let text = row.text ?? row.contents ?? row.content;
    if (typeof text !== "string") {
      throw new DatasetError('needs a string "text" (or FlashRAG "contents")', where, "text");
    }
    if (title === undefined && row.contents !== undefined) {
      // FlashRAG wiki corpus: contents = "\"Title\"\ntext"
      const nl = text.indexOf("\n");
      if (nl > 0) {
        title = text.slice(0, nl).replace(/^"|"$/g, "");
        text = text.slice(nl + 1);
      }
    }
    if (title !== undefined && typeof title !== "string")
      throw new DatasetError("title must be a string", where, "title");
    const id = row.id !== undefined ? String(row.id) : ((title as string | undefined) ?? `${basename(file)}:${l.line}`);
    docs.push({ id, title: (title as string | undefined) ?? id, text: text as string, where });
  }
  return docs;
}

async function readText(file: string): Promise<string> {
  try {
    return await readFile(file, "utf8");
  } catch (e) {
    throw new DatasetError(
      `cannot read corpus file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      file,
    );
  }
}

/**
 * Load a corpus: a JSONL file of `{title, text}` rows, or a folder of .txt / .md / .html files (read recursively,
 * in name order). An unreadable file or a bad row is a DatasetError naming it.
 */
export async function loadCorpus(path: string): Promise<CorpusDoc[]> {
  let s: Awaited<ReturnType<typeof stat>>;
  try {
    s = await stat(path);
  } catch {
    throw new UsageError(`corpus not found: ${path} (expected a .jsonl file or a folder of .txt/.md/.html files)`);
  }
  let docs: CorpusDoc[];
  if (s.isDirectory()) {
    docs = [];
    for (const file of await listCorpusFiles(path)) {
      const ext = extname(file).toLowerCase();
      const raw = await readText(file);
      const rel = relative(path, file);
      if (ext === ".html" || ext === ".htm") {
        const { title, text } = htmlToText(raw);
        docs.push({ id: rel, title: title || titleFromName(file), text, where: file });
      } else {
        const title = (ext === ".txt" ? undefined : markdownTitle(raw)) ?? titleFromName(file);
        docs.push({ id: rel, title, text: raw, where: file });
      }
    }
  } else {
    const raw = await readText(path);
    if (/\.jsonl?$/i.test(path)) docs = parseCorpusJsonl(raw, path);
    else if (/\.html?$/i.test(path)) {
      const { title, text } = htmlToText(raw);
      docs = [{ id: basename(path), title: title || titleFromName(path), text, where: path }];
    } else docs = [{ id: basename(path), title: markdownTitle(raw) ?? titleFromName(path), text: raw, where: path }];
  }
  docs = docs.filter((d) => d.text.trim().length > 0);
  if (docs.length === 0) throw new UsageError(`corpus ${path} holds no documents with text`);
  return docs;
}
