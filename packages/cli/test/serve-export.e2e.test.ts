import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cliArgv } from "./harness.js";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "../../..");
const tmp = () => mkdtempSync(join(tmpdir(), "bmx-serve-"));

describe("benchmax serve / eval --endpoint / export skyrl", () => {
  it("serves an env, evals against it with a token, and drains on SIGTERM", async () => {
    const server = spawn(process.execPath, cliArgv(["serve", "math", "--port", "0", "--token", "sekret"]), {
      cwd: root,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    const url = await new Promise<string>((res, rej) => {
      server.stdout.on("data", (d) => {
        out += d;
        const m = /serving math at (http:\/\/[^\s]+)/.exec(out);
        if (m) res(m[1]!);
      });
      server.once("exit", (code) => rej(new Error(`serve exited ${code}: ${out}`)));
    });
    try {
      const health = await fetch(`${url}/health`);
      expect(health.status).toBe(200);
      expect((await fetch(`${url}/metadata`)).status).toBe(401);
      const dir = tmp();
      const r = spawnSync(
        process.execPath,
        cliArgv([
          "eval",
          "math",
          "--endpoint",
          url,
          "--token",
          "sekret",
          "--limit",
          "4",
          "--group",
          "2",
          "--out",
          dir,
          "--json",
        ]),
        { cwd: root, encoding: "utf8", timeout: 120_000 },
      );
      expect(r.status).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ n: 8, passRate: 1, outcomes: { completed: 8 } });
      const wrong = spawnSync(
        process.execPath,
        cliArgv(["eval", "math", "--endpoint", url, "--token", "nope", "--limit", "1"]),
        {
          cwd: root,
          encoding: "utf8",
        },
      );
      expect(wrong.status).toBe(1);
    } finally {
      server.kill("SIGTERM");
      const code = await new Promise((r) => server.once("exit", r));
      expect(code).toBe(0);
    }
  });

  it("exports SkyRL parquet files and the shim", () => {
    const dir = tmp();
    const r = spawnSync(process.execPath, cliArgv(["export", "skyrl", "math", "--out", dir, "--split", "train=0.9"]), {
      cwd: root,
      encoding: "utf8",
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/train \/ \d+ validation rows/);
    expect(existsSync(join(dir, "train.parquet"))).toBe(true);
    expect(existsSync(join(dir, "validation.parquet"))).toBe(true);
    expect(readFileSync(join(dir, "train.parquet")).subarray(0, 4).toString()).toBe("PAR1");
    const bad = spawnSync(process.execPath, cliArgv(["export", "skyrl", "math", "--out", dir, "--split", "train=7"]), {
      cwd: root,
      encoding: "utf8",
    });
    expect(bad.status).toBe(1);
    expect(bad.stderr.trim().split("\n")).toHaveLength(1);
  });
});
