import { readdir } from "node:fs/promises";
import { extname, join } from "node:path";

/** The kinds of file a corpus folder's documents may be: plain text, markdown, HTML. */
export const CORPUS_EXTENSIONS: readonly string[] = [".txt", ".md", ".markdown", ".html", ".htm"];

/**
 * The document files under a corpus folder, depth first in name order (stable across runs and machines): files
 * (or links) whose extension, in any case, is one of `CORPUS_EXTENSIONS`. Names starting with a dot are skipped.
 */
export async function listCorpusFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    if (e.name.startsWith(".")) continue;
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await listCorpusFiles(p)));
    else if ((e.isFile() || e.isSymbolicLink()) && CORPUS_EXTENSIONS.includes(extname(e.name).toLowerCase()))
      out.push(p);
  }
  return out;
}
