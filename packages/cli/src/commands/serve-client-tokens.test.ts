import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { clientTokens } from "./serve.js";

describe("serve's client tokens (--client-token, --client-tokens-file, BENCHMAX_CLIENT_TOKENS)", () => {
  it("gathers the flags, the file's lines (no blanks or # comments) and the variable's words, trimmed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "client-tokens-"));
    const file = join(dir, "tokens.txt");
    writeFileSync(file, "# one per trainer\r\ntok-file-a\n\n  tok-file-b  \n#tok-off\n");
    expect(await clientTokens([" tok-flag "], file, "tok-env-a\ttok-env-b\n")).toEqual([
      "tok-flag",
      "tok-file-a",
      "tok-file-b",
      "tok-env-a",
      "tok-env-b",
    ]);
    expect(await clientTokens(undefined, undefined, undefined)).toEqual([]);
  });

  it("a file it cannot read is a usage error naming the file", async () => {
    await expect(clientTokens([], "/nonexistent/tokens.txt", undefined)).rejects.toThrow(
      /--client-tokens-file \/nonexistent\/tokens.txt: ENOENT/,
    );
  });
});
