import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// a plain .mjs script (scripts/pack.d.mts types it): the same code as `npm run pack`
import { publicPackages, root } from "../../../scripts/pack.mjs";

/**
 * The public packages' manifests, before any pack: what publishing relies on. The registry release check
 * (registry-release.test.ts) checks the published tarballs themselves.
 */
type Exports = Record<string, string | Record<string, string>>;
const manifests = publicPackages().map((p) => ({
  ...p,
  pkg: JSON.parse(readFileSync(join(root, p.dir, "package.json"), "utf8")) as {
    exports: Exports;
    keywords?: string[];
    publishConfig?: { exports?: Exports; access?: string };
  },
}));

describe("public package manifests", () => {
  it("publish their exports without the workspace's @benchmax/source condition (its src/ is not shipped)", () => {
    for (const { name, pkg } of manifests) {
      const stripped = Object.fromEntries(
        Object.entries(pkg.exports).map(([k, v]) => [
          k,
          typeof v === "string" ? v : Object.fromEntries(Object.entries(v).filter(([c]) => c !== "@benchmax/source")),
        ]),
      );
      // pnpm publish (changeset publish) and pnpm pack put publishConfig.exports in place of exports
      expect(pkg.publishConfig?.exports, name).toEqual(stripped);
      expect(JSON.stringify(pkg.publishConfig?.exports), name).not.toContain("@benchmax/source");
      expect(pkg.publishConfig?.access, name).toBe("public");
    }
  });

  it("every env package (and the scaffold a new env starts from) carries the keyword `benchmax search` looks for", () => {
    const envs = manifests.filter((m) => m.dir.startsWith("envs/"));
    expect(envs.length).toBeGreaterThanOrEqual(4);
    for (const { name, pkg } of envs) expect(pkg.keywords, name).toContain("benchmax-env");
    for (const { name, pkg } of manifests.filter((m) => !m.dir.startsWith("envs/"))) {
      expect(pkg.keywords ?? [], `${name} is not an env`).not.toContain("benchmax-env");
    }
    const template = join(root, "packages/cli/templates/env/package.json.tmpl");
    expect(existsSync(template)).toBe(true);
    expect(readFileSync(template, "utf8")).toContain('"benchmax-env"');
  });
});
