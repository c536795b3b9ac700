import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { type EnvServer, serveEnv } from "@benchmax/server";
import { calcEnv } from "@benchmax/server/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runShimUnittest } from "./run-process.test-util.js";
import { shimDir } from "./shim.js";

const python = spawnSync("python3", ["--version"], { encoding: "utf8" });
const hasPython = python.status === 0;
if (!hasPython) console.warn("skipping the Python shim tests: python3 is not installed");

describe.skipIf(!hasPython)("Python shim (unittest) against a live server", () => {
  let server: EnvServer;
  let custom: EnvServer;
  beforeAll(async () => {
    server = await serveEnv(calcEnv(), { token: "shim-token" });
    custom = await serveEnv(calcEnv({ customActions: true }), { token: "shim-token" });
  });
  afterAll(async () => {
    await server?.close();
    await custom?.close();
  });

  it("passes its unittest suite", { timeout: 180_000 }, async () => {
    const tests = join(shimDir(), "tests");
    const { code, out } = await runShimUnittest(["discover", "-s", tests, "-t", tests, "-v"], {
      BENCHMAX_TEST_ENDPOINT: server.url,
      BENCHMAX_TEST_TOKEN: "shim-token",
      BENCHMAX_TEST_CUSTOM_ENDPOINT: custom.url,
    });
    if (code !== 0 || process.env.BENCHMAX_SHOW_PY) console.error(out);
    expect(code).toBe(0);
    expect(out).toMatch(/Ran \d+ tests/);
    expect(out).not.toMatch(/skipped/);
    // SkyRL's generator sequence and the cookbook's group rollout loop both ran against these servers
    // the shim really drove the server
    expect(server.metrics.snapshot(0).toolCalls).toBeGreaterThan(4);
    expect(custom.metrics.snapshot(0).toolCalls).toBeGreaterThan(0);
  });
});
