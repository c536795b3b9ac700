import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "@benchmax/core";
import { afterAll, describe, expect, it } from "vitest";
import { scaffoldEnv } from "../scaffold/scaffold.js";
import { envNameOf, findEngine, imageTags, serveSpecOf } from "../ship/image.js";
import { runBuild } from "./build.js";

// `benchmax build --dry-run`: the Dockerfile and the commands, for a scaffolded env and a catalog env, with no
// container engine. The image itself is built in test/build-image.e2e.test.ts (slow set) where an engine runs.

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");
const flags = { base: "node:20.20.2-bookworm-slim", target: "all", engineArg: [], dryRun: true };

describe("benchmax build --dry-run", () => {
  const tmp = mkdtempSync(join(tmpdir(), "bmx-build-"));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it("a scaffolded env: npm pack, the CLI from the registry, one tag per target, the env checked at build time", async () => {
    const dir = join(tmp, "ship-dry");
    scaffoldEnv({ name: "ship-dry", dir });
    let out = "";
    const plan = await runBuild(dir, { ...flags, engine: "podman" }, (s) => {
      out += s;
    });
    expect(plan.pkg).toMatchObject({ name: "benchmax-env-ship-dry", version: "0.1.0", env: "ship-dry" });
    expect(plan.tags).toEqual({
      server: "benchmax/env-server-ship-dry:0.1.0-server",
      skypilot: "benchmax/env-server-ship-dry:0.1.0-skypilot",
    });
    expect(plan.dockerfile).toMatch(/^FROM node:20\.20\.2-bookworm-slim AS base$/m);
    expect(plan.dockerfile).toContain("BENCHMAX_ENV=/opt/benchmax/node_modules/benchmax-env-ship-dry");
    expect(plan.dockerfile).toMatch(
      /npm install --omit=dev --no-fund --no-audit \/opt\/benchmax-packages\/benchmax-env-ship-dry-0\.1\.0\.tgz @benchmax\/cli@\d+\.\d+\.\d+/,
    );
    expect(plan.dockerfile).toMatch(/benchmax info "\$BENCHMAX_ENV"/);
    expect(plan.dockerfile.match(/^FROM .*$/gm)).toEqual([
      "FROM node:20.20.2-bookworm-slim AS base",
      "FROM base AS skypilot",
      "FROM base AS server",
    ]);
    expect(out).toMatch(/npm pack --pack-destination \S+\/packages --silent/);
    expect(out).toMatch(/podman build --target server -t benchmax\/env-server-ship-dry:0\.1\.0-server -f /);
    expect(out).toMatch(/podman build --target skypilot -t benchmax\/env-server-ship-dry:0\.1\.0-skypilot -f /);
  });

  it("a catalog env inside the repo is packed with pnpm (workspace: ranges rewritten); --tarballs installs those too", async () => {
    let out = "";
    const plan = await runBuild(
      join(root, "envs/math"),
      {
        ...flags,
        target: "server",
        image: "registry.example.com/bmx/math",
        tag: "2.0.0",
        tarballs: join(root, "packages/cli/templates"),
      },
      (s) => {
        out += s;
      },
    ).catch((e: unknown) => e as Error);
    // the templates folder holds no tarballs: a clear error naming the flag
    expect(plan).toBeInstanceOf(UsageError);
    expect((plan as Error).message).toMatch(/--tarballs .*templates: no \.tgz files there/);
    const ok = await runBuild(join(root, "envs/math"), { ...flags, target: "server", engine: "docker" }, (s) => {
      out += s;
    });
    expect(ok.targets).toEqual(["server"]);
    expect(ok.dockerfile).toContain("BENCHMAX_ENV=@benchmax/env-math");
    expect(out).toMatch(/scripts\/pnpm\.mjs -C \S+envs\/math pack --pack-destination/);
    expect(out).not.toMatch(/--target skypilot/);
  });

  it("names and refusals", async () => {
    expect(envNameOf("@benchmax/env-excel")).toBe("excel");
    expect(envNameOf("benchmax-env-my-env")).toBe("my-env");
    expect(serveSpecOf("@acme/env-x")).toBe("@acme/env-x");
    expect(imageTags("ghcr.io/acme/x", "1.0.0-rc.1")).toEqual({
      server: "ghcr.io/acme/x:1.0.0-rc.1-server",
      skypilot: "ghcr.io/acme/x:1.0.0-rc.1-skypilot",
    });
    expect(() => findEngine("buildkit")).toThrow(/--engine must be docker or podman/);
    await expect(runBuild(join(tmp, "nowhere"), flags, () => {})).rejects.toThrow(/no package\.json there/);
    await expect(runBuild(join(root, "envs/math"), { ...flags, target: "both" }, () => {})).rejects.toThrow(
      /--target must be server, skypilot or all, got "both"/,
    );
  });
});
