import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { movable, readShared, shareable } from "./compare-pool.js";

describe("bytes for a worker without a copy on the event loop", () => {
  it("readShared reads a file into a Buffer on a SharedArrayBuffer; shareable passes it as is", async () => {
    const dir = mkdtempSync(join(tmpdir(), "compare-pool-"));
    try {
      const bytes = Buffer.from(Array.from({ length: 300_000 }, (_, i) => i % 251));
      writeFileSync(join(dir, "f.bin"), bytes);
      const b = await readShared(join(dir, "f.bin"));
      expect(b.buffer).toBeInstanceOf(SharedArrayBuffer);
      expect(b.equals(bytes)).toBe(true);
      expect(shareable(b)).toBe(b);
      expect(movable(b)).toEqual([]);
      writeFileSync(join(dir, "empty"), "");
      expect((await readShared(join(dir, "empty"))).length).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("any other Buffer is copied once into an ArrayBuffer of its own, which is moved (the caller's stays usable)", () => {
    const b = Buffer.from("a workbook's bytes");
    const c = shareable(b);
    expect(c).not.toBe(b);
    expect(c.buffer).not.toBe(b.buffer);
    expect(Buffer.from(c).equals(b)).toBe(true);
    expect(movable(c, undefined)).toEqual([c.buffer]);
  });
});
