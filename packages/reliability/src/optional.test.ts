import { describe, expect, it } from "vitest";
import { importOptional, isCI, warnSkip } from "./optional.js";

describe("optional pieces: skipped with a reason locally, a failure in CI", () => {
  it("a package that fails to import is a printed skip outside CI and an error with CI=true", async () => {
    const got = await importOptional("@benchmax/does-not-exist");
    expect(got.reason).toMatch(/could not be imported/);
    expect(() => warnSkip("an example block (optional.test.ts)", got.reason, {})).not.toThrow();
    expect(() => warnSkip("an example block (optional.test.ts)", got.reason, { CI: "true" })).toThrow(
      /an example block \(optional.test.ts\) cannot run: @benchmax\/does-not-exist could not be imported.*fails the suite/,
    );
    expect(() => warnSkip("an example block (optional.test.ts)", undefined, { CI: "true" })).not.toThrow();
  });

  it("reads CI the way CI services set it", () => {
    expect(isCI({ CI: "true" })).toBe(true);
    expect(isCI({ CI: "1" })).toBe(true);
    expect(isCI({ CI: "false" })).toBe(false);
    expect(isCI({})).toBe(false);
  });
});
