import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** A verdaccio started by a test: its URL, a publish token, and its storage folder. */
export interface LocalRegistry {
  url: string;
  /** An npm auth token of a user made through the registry's adduser API. */
  token: string;
  storage: string;
  /** `//127.0.0.1:PORT/:_authToken=…`, the .npmrc line that publishes to it. */
  authLine: string;
  /** What verdaccio printed (warnings and errors). */
  output(): string;
  close(): Promise<void>;
}

/**
 * Start verdaccio 6 on 127.0.0.1 with a config written into `dir` (storage and htpasswd there too). The @benchmax scope
 * and `benchmax-env-*` names are served only from its own storage; with `uplink` (the npm registry, when reachable),
 * every other package is proxied from it, as people run verdaccio. Publishing needs a user: one is added here.
 */
export async function startVerdaccio(options: { dir: string; uplink?: string }): Promise<LocalRegistry> {
  const { dir, uplink } = options;
  mkdirSync(join(dir, "storage"), { recursive: true });
  const local = "    access: $all\n    publish: $authenticated\n    unpublish: $authenticated\n";
  const config = [
    "storage: ./storage",
    "auth:",
    "  htpasswd:",
    "    file: ./htpasswd",
    "    max_users: 10",
    ...(uplink ? ["uplinks:", "  npmjs:", `    url: ${uplink}`, "    timeout: 60s", "    maxage: 30m"] : []),
    "packages:",
    "  '@benchmax/*':",
    local.trimEnd(),
    "  'benchmax-env-*':",
    local.trimEnd(),
    "  '**':",
    local.trimEnd(),
    ...(uplink ? ["    proxy: npmjs"] : []),
    "max_body_size: 200mb",
    "web:",
    "  enable: false",
    "log: { type: stdout, format: pretty, level: warn }",
    "",
  ].join("\n");
  const configPath = join(dir, "config.yaml");
  writeFileSync(configPath, config);
  const script = join(dirname(fileURLToPath(import.meta.url)), "verdaccio-server.mjs");
  const child = spawn(process.execPath, [script, configPath], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    const deadline = setTimeout(() => reject(new Error(`verdaccio did not start within 60 s:\n${out}`)), 60_000);
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = /verdaccio listening (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (m) {
        clearTimeout(deadline);
        resolve(m[1]!);
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(deadline);
      reject(new Error(`verdaccio exited with ${code} before listening:\n${out}`));
    });
  });
  const close = () => stop(child);
  try {
    const res = await fetch(new URL("-/user/org.couchdb.user:release-check", url), {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "release-check", password: "release-check-password" }),
    });
    const body = (await res.json()) as { token?: string; error?: string };
    if (!res.ok || !body.token) throw new Error(`verdaccio adduser answered ${res.status}: ${JSON.stringify(body)}`);
    const authLine = `//${new URL(url).host}/:_authToken=${body.token}`;
    return { url, token: body.token, storage: join(dir, "storage"), authLine, output: () => out, close };
  } catch (e) {
    await close();
    throw e;
  }
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

/** Whether the npm registry at `url` answers (its ping, or a package document), within 20 s, in one of three tries. */
export async function registryReachable(url: string): Promise<boolean> {
  // the registry's ping, then a small package's metadata; three tries each, as a busy machine or network can drop one
  for (let attempt = 0; attempt < 3; attempt++) {
    for (const path of ["-/ping", "left-pad"]) {
      try {
        const res = await fetch(new URL(path, url), { signal: AbortSignal.timeout(20_000) });
        await res.arrayBuffer();
        if (res.ok) return true;
      } catch {
        /* try again */
      }
    }
  }
  return false;
}
