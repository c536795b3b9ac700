import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

/**
 * Tests' stand-in for an env server: holder.fixture.ts (live interpreters, driven by JSON lines on stdin) bundled to
 * node_modules/.cache/benchmax-test/<name>.mjs and run in its own Node process. `name` keeps test files that run at
 * once from writing the same bundle.
 */
function holderScript(name: string): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const out = join(here, "..", "..", "node_modules", ".cache", "benchmax-test", `${name}.mjs`);
  mkdirSync(dirname(out), { recursive: true });
  const require = createRequire(import.meta.url);
  const esbuild = require(createRequire(require.resolve("tsup")).resolve("esbuild")) as {
    buildSync(o: Record<string, unknown>): unknown;
  };
  esbuild.buildSync({
    entryPoints: [join(here, "holder.fixture.ts")],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    outfile: out,
    logLevel: "error",
  });
  return out;
}

/** The holder process: `send` a request line, `next` the answer that matches (they come in the order they finish). */
export class HolderProcess {
  readonly child: ChildProcess;
  private readonly lines: string[] = [];
  private waiter?: () => void;
  constructor(name: string, options: { env?: NodeJS.ProcessEnv; extraFd?: number } = {}) {
    this.child = spawn(process.execPath, [holderScript(name)], {
      stdio: ["pipe", "pipe", "inherit", ...(options.extraFd !== undefined ? [options.extraFd] : [])],
      ...(options.env ? { env: options.env } : {}),
    });
    createInterface({ input: this.child.stdout! }).on("line", (l) => {
      this.lines.push(l);
      this.waiter?.();
    });
  }
  send(req: Record<string, unknown>): void {
    this.child.stdin!.write(`${JSON.stringify(req)}\n`);
  }
  async next<T>(match: (a: Record<string, unknown>) => boolean): Promise<T> {
    for (;;) {
      const i = this.lines.findIndex((l) => match(JSON.parse(l)));
      if (i >= 0) return JSON.parse(this.lines.splice(i, 1)[0]!) as T;
      await new Promise<void>((r) => (this.waiter = r));
    }
  }
  /** Send a request and take the next answer, whatever it is. */
  async ask<T = { ok: boolean; output: string }>(req: Record<string, unknown>): Promise<T> {
    this.send(req);
    return this.next<T>(() => true);
  }
}
