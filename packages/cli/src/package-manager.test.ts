import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { addCommand, findProject } from "./package-manager.js";

const tmp = () => mkdtempSync(join(tmpdir(), "bmx-pm-"));

describe("findProject", () => {
  it("is the nearest package.json; its package manager is the lockfile's, up to the repository root", () => {
    const repo = tmp();
    mkdirSync(join(repo, ".git"));
    writeFileSync(join(repo, "pnpm-lock.yaml"), "");
    const app = join(repo, "apps/web");
    mkdirSync(join(app, "src"), { recursive: true });
    writeFileSync(join(app, "package.json"), "{}");
    expect(findProject(join(app, "src"))).toEqual({ dir: app, packageManager: "pnpm" });
    writeFileSync(join(app, "yarn.lock"), "");
    expect(findProject(app)).toEqual({ dir: app, packageManager: "yarn" });
  });

  it("without a lockfile: package.json packageManager, else npm", () => {
    const a = tmp();
    mkdirSync(join(a, ".git"));
    writeFileSync(join(a, "package.json"), JSON.stringify({ packageManager: "bun@1.2.0" }));
    expect(findProject(a)?.packageManager).toBe("bun");
    const b = tmp();
    mkdirSync(join(b, ".git"));
    writeFileSync(join(b, "package.json"), "{}");
    expect(findProject(b)).toEqual({ dir: b, packageManager: "npm" });
  });
});

describe("addCommand", () => {
  it("npm installs, the others add; a registry travels as a flag", () => {
    expect(addCommand("npm", "@benchmax/env-math")).toEqual(["npm", ["install", "@benchmax/env-math"]]);
    expect(addCommand("pnpm", "benchmax-env-x@1.0.0", "http://127.0.0.1:4873/")).toEqual([
      "pnpm",
      ["add", "benchmax-env-x@1.0.0", "--registry=http://127.0.0.1:4873/"],
    ]);
  });
});
