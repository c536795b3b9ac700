import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

export interface Child {
  proc: ChildProcess;
  /** The first JSON line the child printed. */
  hello: Record<string, unknown>;
  stderr(): string;
  /** The next stdout line after the first (waits for it). */
  nextLine(timeoutMs?: number): Promise<string>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Whether TypeScript children can be run (tsx resolvable). */
export function tsxAvailable(): string | undefined {
  try {
    require.resolve("tsx");
    return undefined;
  } catch {
    return "tsx is not installed";
  }
}

/**
 * Start `src/child/<script>.ts` in its own Node process (workspace packages resolved to their TS sources) and wait
 * for its first stdout line, a JSON object.
 */
export function startChild(
  script: string,
  args: string[] = [],
  options: {
    timeoutMs?: number;
    nodeArgs?: string[] /** A command the node process runs under, e.g. `ip netns exec NS`. */;
    wrap?: string[];
  } = {},
): Promise<Child> {
  const timeoutMs = options.timeoutMs ?? 30_000;
  const file = join(here, "child", `${script}.ts`);
  const nodeArgs = [...(options.nodeArgs ?? []), "--conditions=@benchmax/source", "--import", "tsx", file, ...args];
  const [cmd, ...pre] = options.wrap?.length ? [...options.wrap, process.execPath] : [process.execPath];
  const proc = spawn(cmd!, [...pre, ...nodeArgs], {
    cwd: join(here, ".."),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (d) => {
    err += d;
  });
  const exited = new Promise<void>((r) => proc.once("exit", () => r()));
  return new Promise((resolve, reject) => {
    let out = "";
    let ready = false;
    const lines: string[] = [];
    const waiters: Array<(l: string) => void> = [];
    const timer = setTimeout(() => {
      proc.kill("SIGKILL");
      reject(new Error(`child ${script} printed nothing in ${timeoutMs} ms; stderr: ${err.slice(-2000)}`));
    }, timeoutMs);
    proc.stdout!.on("data", (d) => {
      out += d;
      if (ready) {
        let nl: number;
        while ((nl = out.indexOf("\n")) >= 0) {
          const line = out.slice(0, nl);
          out = out.slice(nl + 1);
          const w = waiters.shift();
          if (w) w(line);
          else lines.push(line);
        }
        return;
      }
      const nl = out.indexOf("\n");
      if (nl < 0) return;
      ready = true;
      clearTimeout(timer);
      const first = out.slice(0, nl);
      out = out.slice(nl + 1);
      try {
        resolve({
          proc,
          hello: JSON.parse(first),
          stderr: () => err,
          nextLine(ms = 30_000) {
            const l = lines.shift();
            if (l !== undefined) return Promise.resolve(l);
            return new Promise<string>((res, rej) => {
              const t = setTimeout(() => rej(new Error(`child ${script}: no output line in ${ms} ms`)), ms);
              waiters.push((line) => {
                clearTimeout(t);
                res(line);
              });
            });
          },
          async kill(signal: NodeJS.Signals = "SIGKILL") {
            if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
            await exited;
          },
        });
      } catch (e) {
        proc.kill("SIGKILL");
        reject(new Error(`child ${script} printed ${first}: ${(e as Error).message}`));
      }
    });
    proc.once("exit", (code, sig) => {
      clearTimeout(timer);
      if (ready) return;
      reject(new Error(`child ${script} exited (${code ?? sig}) before it was ready; stderr: ${err.slice(-2000)}`));
    });
  });
}
