import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, vi } from "vitest";
import { drainLine, serveCommand, serveToken } from "./serve.js";

describe("serve token (issue 27: a Kubernetes Secret from `openssl rand -hex 32 > token.txt`)", () => {
  it("drops the trailing newline a token file carries, so clients sending the bare token get in", () => {
    expect(serveToken(undefined, "abc123\n")).toBe("abc123");
    expect(serveToken(" abc \r\n", "other")).toBe("abc");
    expect(serveToken(undefined, undefined)).toBeUndefined();
    // a blank token is no token: the server then refuses to bind beyond loopback without --insecure
    expect(serveToken(undefined, "\n")).toBeUndefined();
  });
});

const cliDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

/**
 * The real CLI (`benchmax serve math`, run from this checkout's sources with tsx) as a child process on 127.0.0.1,
 * a free port. Waits are on its output and its exit, never on a clock.
 */
async function serve(args: string[]) {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("BENCHMAX_")));
  const child: ChildProcess = spawn(
    process.execPath,
    ["--conditions=@benchmax/source", "--import", "tsx", "src/cli.ts", "serve", "math", "--port", "0", ...args],
    { cwd: cliDir, env: clean, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  let err = "";
  child.stdout!.on("data", (d) => (out += d));
  child.stderr!.on("data", (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  let url = "";
  try {
    await vi.waitFor(
      () => {
        const m = /serving math (?:as MCP )?at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (!m) throw new Error(`not serving yet: ${out}${err}`);
        url = m[1]!;
      },
      { timeout: 90_000, interval: 50 },
    );
  } catch (e) {
    child.kill("SIGKILL");
    throw e;
  }
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(url + path, {
      method,
      headers: { "content-type": "application/json", ...headers },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.status, headers: r.headers, body: (await r.json()) as any };
  };
  const stderrShows = (re: RegExp) =>
    vi.waitFor(
      () => {
        if (!re.test(err)) throw new Error(`stderr so far: ${err}`);
      },
      { timeout: 60_000, interval: 20 },
    );
  return { child, exited, call, stderrShows, err: () => err };
}

/** A draining server refuses a new rollout (503, DRAINING) and says so on /health. */
async function expectDraining(s: Awaited<ReturnType<typeof serve>>) {
  const refused = await s.call("POST", "/v1/rollouts", {});
  expect(refused.status).toBe(503);
  expect(refused.headers.get("x-benchmax-draining")).toBe("1");
  expect(refused.body.error.code).toBe("DRAINING");
  const health = await s.call("GET", "/health");
  expect([health.status, health.body.status]).toEqual([503, "draining"]);
}

describe("benchmax serve: SIGTERM drains, a second SIGTERM or a SIGINT closes at once", { timeout: 180_000 }, () => {
  it("SIGTERM: new rollouts refused (503 DRAINING), the live one is served to its release, then exit 0", async () => {
    const s = await serve(["--drain-grace", "3600"]);
    const a = await s.call("POST", "/v1/rollouts", {});
    expect(a.status).toBe(201);
    const h = { "x-rollout-token": a.body.token as string };
    s.child.kill("SIGTERM");
    await s.stderrShows(/SIGTERM: draining \(1 live rollout\)/);
    expect(s.err().match(/draining/g)).toHaveLength(1);
    await expectDraining(s);
    const calc = await s.call(
      "POST",
      `/v1/rollouts/${a.body.rolloutId}/call`,
      { name: "calculator", arguments: { expression: "2+3" } },
      h,
    );
    expect(calc.status).toBe(200);
    expect(calc.body).toMatchObject({ content: "5", isError: false });
    expect((await s.call("POST", `/v1/rollouts/${a.body.rolloutId}/release`, {}, h)).status).toBe(200);
    // the last live rollout released: the server closes well before the grace (an hour) and exits 0
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(s.err()).toMatch(/drained: every live rollout was released; closed/);
  });

  it("with a rollout left open, exits 0 once --drain-grace has passed, saying what was left", async () => {
    const s = await serve(["--drain-grace", "1"]);
    expect((await s.call("POST", "/v1/rollouts", {})).status).toBe(201);
    s.child.kill("SIGTERM");
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(s.err()).toMatch(/SIGTERM: draining \(1 live rollout\).*1s at most/);
    expect(s.err()).toMatch(/drain ended with 1 rollout still live; closed/);
  });

  it("a second SIGTERM during the drain closes at once", async () => {
    const s = await serve(["--drain-grace", "3600"]);
    expect((await s.call("POST", "/v1/rollouts", {})).status).toBe(201);
    s.child.kill("SIGTERM");
    await s.stderrShows(/SIGTERM: draining/);
    s.child.kill("SIGTERM");
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(s.err()).toMatch(/SIGTERM: closing now/);
    expect(s.err()).toMatch(/drain ended with 1 rollout still live; closed/);
  });

  it("SIGINT closes at once, with no drain", async () => {
    const s = await serve(["--drain-grace", "3600"]);
    expect((await s.call("POST", "/v1/rollouts", {})).status).toBe(201);
    s.child.kill("SIGINT");
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(s.err()).toMatch(/SIGINT: closing/);
    expect(s.err()).not.toMatch(/draining/);
  });
});

describe("benchmax serve --mcp --port: SIGTERM drains too", { timeout: 180_000 }, () => {
  it("new MCP rollouts refused (503 DRAINING), the live one is served to its release, then exit 0", async () => {
    const s = await serve(["--mcp", "--drain-grace", "3600"]);
    const a = await s.call("POST", "/v1/rollouts", {});
    expect(a.status).toBe(201);
    const h = { "x-rollout-token": a.body.token as string };
    s.child.kill("SIGTERM");
    await s.stderrShows(/SIGTERM: draining \(1 live rollout\)/);
    await expectDraining(s);
    const reward = await s.call("POST", `/v1/rollouts/${a.body.rolloutId}/reward`, { completion: "42" }, h);
    expect(reward.status).toBe(200);
    expect((await s.call("POST", `/v1/rollouts/${a.body.rolloutId}/release`, {}, h)).status).toBe(200);
    expect(await s.exited).toEqual({ code: 0, signal: null });
    expect(s.err()).toMatch(/drained: every live rollout was released; closed/);
  });
});

describe("--drain-grace", () => {
  it("is refused with MCP over stdio (one session, closed at once), before any env loads", async () => {
    await expect(
      serveCommand("no-such-env", { host: "127.0.0.1", envOpt: [], mcp: true, drainGrace: 5 }),
    ).rejects.toThrow(/--drain-grace applies to a server on a port/);
  });
});

describe("drainLine", () => {
  it("says how many rollouts are live and how long the drain may take", () => {
    expect(drainLine("SIGTERM", 0, 30)).toMatch(/^benchmax: SIGTERM: draining \(0 live rollouts\).*30s at most/);
    expect(drainLine("SIGTERM", 1, 5)).toMatch(/\(1 live rollout\)/);
  });
});
