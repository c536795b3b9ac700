import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { describe, expect, it } from "vitest";
import { workspaceRoot } from "./workspace.js";

describe("workspaceRoot (issue 27: two containers of one pod share /tmp, both PID 1)", () => {
  it("is unique to this process, not named by the PID alone, and leaves another process's folder alone", () => {
    // what the other container made: benchmax-<same pid>
    const other = join(tmpdir(), `benchmax-${process.pid}`);
    const existed = existsSync(other);
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, "theirs.txt"), "keep");
    try {
      const root = workspaceRoot();
      expect(root).not.toBe(other);
      expect(basename(root)).toMatch(new RegExp(`^benchmax-${process.pid}-[A-Za-z0-9]{6}$`));
      expect(workspaceRoot()).toBe(root);
      expect(readFileSync(join(other, "theirs.txt"), "utf8")).toBe("keep");
    } finally {
      if (!existed) rmSync(other, { recursive: true, force: true });
    }
  });
});
