import type { Env, EnvModule, Task } from "@benchmax/core";

/**
 * Packages built in parallel with this suite are imported by a computed specifier, so a package that has not landed
 * yet (a stub, a broken build) makes the tests that need it skip with a printed reason instead of failing to compile —
 * outside CI only: with CI set, `warnSkip` turns the same reason into a failure.
 */
export async function importOptional<M = Record<string, unknown>>(
  spec: string,
): Promise<{ mod: M; reason?: undefined } | { mod?: undefined; reason: string }> {
  try {
    const mod = (await import(/* @vite-ignore */ spec)) as M;
    return { mod };
  } catch (e) {
    return { reason: `${spec} could not be imported: ${(e as Error).message.split("\n")[0]}` };
  }
}

/**
 * `@benchmax/server` and `@benchmax/mcp`, each imported as `importOptional` does, for tests that drive an env over
 * both; `reason` says why they cannot run when either is missing or lacks `serveEnv` / `serveMcpHttp`.
 */
export async function importServers<S extends { serveEnv?: unknown }, M extends { serveMcpHttp?: unknown }>() {
  const server = await importOptional<S>("@benchmax/server");
  const mcp = await importOptional<M>("@benchmax/mcp");
  const reason =
    server.reason ??
    mcp.reason ??
    (typeof server.mod?.serveEnv !== "function" || typeof mcp.mod?.serveMcpHttp !== "function"
      ? "@benchmax/server or @benchmax/mcp lacks serveEnv / serveMcpHttp"
      : undefined);
  return { server, mcp, reason };
}

export interface LoadedEnv {
  name: string;
  module: EnvModule;
  /** The env's embedded fixture tasks. */
  tasks: Task[];
  /** A fresh env (the caller closes it). */
  create(options?: Record<string, unknown>): Promise<Env>;
}

/** `@benchmax/env-<name>` when its default export is an EnvModule whose env lists tools and loads fixture tasks. */
export async function loadEnv(
  name: string,
): Promise<{ env: LoadedEnv; reason?: undefined } | { env?: undefined; reason: string }> {
  const spec = `@benchmax/env-${name}`;
  const got = await importOptional<{ default?: EnvModule }>(spec);
  if (!got.mod) return { reason: got.reason };
  const module = got.mod.default;
  if (!module || typeof module.createEnv !== "function") {
    return { reason: `${spec} has no default EnvModule export with createEnv() yet` };
  }
  let env: Env | undefined;
  try {
    env = await module.createEnv({});
    const tools = env.listTools();
    if (!Array.isArray(tools) || tools.length === 0)
      return { reason: `${spec}: createEnv() gives an env with no tools` };
    const own = env.capabilities?.tasks;
    if (typeof own?.loadTasks !== "function") return { reason: `${spec}: the env has no loadTasks()` };
    const tasks = await own.loadTasks();
    if (tasks.length === 0) return { reason: `${spec}: loadTasks() returned no fixture tasks` };
    return {
      env: {
        name,
        module,
        tasks,
        create: async (options = {}) => module.createEnv(options),
      },
    };
  } catch (e) {
    return { reason: `${spec}: createEnv()/loadTasks() failed: ${(e as Error).message.split("\n")[0]}` };
  } finally {
    await env?.close().catch(() => {});
  }
}

/** Is this a CI run (`CI=true` or `CI=1`, as CI services and .ci/run set it)? */
export function isCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = (env.CI ?? "").toLowerCase();
  return v === "true" || v === "1" || v === "yes";
}

/**
 * Print why a block of tests is skipped (vitest's own skip line does not say why). In CI nothing may be skipped for
 * a missing piece: a package that fails to import or build, or an env that fails to load, throws here and fails the
 * test file, so CI cannot go green while the safety tests did not run.
 */
export function warnSkip(what: string, reason: string | undefined, env: NodeJS.ProcessEnv = process.env): void {
  if (!reason) return;
  if (isCI(env)) {
    throw new Error(
      `[reliability] ${what} cannot run: ${reason} (CI=${env.CI}: a missing piece fails the suite instead of skipping)`,
    );
  }
  console.warn(`[reliability] SKIPPED ${what}: ${reason}`);
}

export const ENV_NAMES = ["math", "excel", "wikipedia", "crm"] as const;
