import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { listCorpusFiles } from "./corpus-files.js";

describe("listCorpusFiles", () => {
  it("lists document files depth first in name order, any case of extension, skipping dot names and other kinds", async () => {
    const dir = mkdtempSync(join(tmpdir(), "bmx-corpus-"));
    for (const f of ["b.md", "a.TXT", "c.json", ".hidden.txt", "sub/z.html", "sub/a.htm", ".git/x.txt", "d.markdown"]) {
      mkdirSync(join(dir, f, ".."), { recursive: true });
      writeFileSync(join(dir, f), "x");
    }
    const files = (await listCorpusFiles(dir)).map((p) => p.slice(dir.length + 1));
    expect(files).toEqual(["a.TXT", "b.md", "d.markdown", "sub/a.htm", "sub/z.html"]);
  });
});
