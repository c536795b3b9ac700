import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join, relative } from "node:path";
import { UsageError } from "@benchmax/core";
import type { Command } from "commander";
import { loadEnvModule } from "../env-loader.js";
import { addCommand, findProject } from "../package-manager.js";
import { envPackageOf, envSpecOf } from "../registry.js";

export interface AddedEnv {
  package: string;
  version: string;
  packageManager: string;
  env: string;
  tools: string[];
  tasks: number;
  /** What `benchmax eval` takes for it. */
  spec: string;
}

/**
 * `benchmax add NAME` — install an env package into the project in the working dir with the project's package
 * manager, then check that it loads: import it, create the env, list its tools and count its tasks.
 */
export function register(program: Command): void {
  program
    .command("add <name>")
    .description("install an env package (excel, @scope/env, benchmax-env-x) and check that it loads as an env")
    .option("--registry <url>", "registry to install from (default: npm's registry setting)")
    .option("--json", "print JSON (the package manager's output goes to stderr)")
    .action(async (name: string, flags: { registry?: string; json?: boolean }) => {
      const pkg = envPackageOf(name);
      const project = findProject();
      if (!project) {
        throw new UsageError(`no package.json in ${process.cwd()} or above: make a project first (npm init -y)`);
      }
      const [cmd, args] = addCommand(project.packageManager, pkg.spec, flags.registry);
      process.stderr.write(
        `benchmax add: ${cmd} ${args.join(" ")} (in ${relative(process.cwd(), project.dir) || "."})\n`,
      );
      const code = await new Promise<number>((resolve, reject) => {
        const child = spawn(cmd, args, { cwd: project.dir, stdio: ["ignore", process.stderr, process.stderr] });
        child.on("error", (e) => reject(new UsageError(`could not run ${cmd}: ${e.message}`)));
        child.on("exit", (c, signal) => resolve(c ?? (signal ? 1 : 0)));
      });
      if (code !== 0)
        throw new UsageError(`${cmd} ${args.join(" ")} failed (exit ${code}): ${pkg.name} is not installed`);
      const added = await checkEnv(pkg.name, project.dir, project.packageManager);
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(added, null, 2)}\n`);
        return;
      }
      process.stdout.write(
        `added ${added.package}@${added.version} (${added.packageManager}): env "${added.env}", ${added.tools.length} tools (${added.tools.join(", ")}), ${added.tasks} tasks\n`,
      );
      process.stdout.write(`next: npx benchmax eval ${added.spec}\n`);
    });
}

/** Import an installed env package from `dir` and describe it; an error names what does not load. */
export async function checkEnv(packageName: string, dir: string, packageManager = "npm"): Promise<AddedEnv> {
  const req = createRequire(join(dir, "package.json"));
  let entry: string;
  let version: string;
  try {
    entry = req.resolve(packageName);
    version = (req(`${packageName}/package.json`) as { version: string }).version;
  } catch (e) {
    throw new UsageError(`${packageName} was installed but does not resolve from ${dir}: ${(e as Error).message}`);
  }
  let mod: Awaited<ReturnType<typeof loadEnvModule>>;
  try {
    mod = await loadEnvModule(entry, dir);
  } catch (e) {
    throw new UsageError(`${packageName}@${version} is installed but does not load as an env: ${(e as Error).message}`);
  }
  const env = await mod.createEnv({});
  try {
    const own = env.capabilities?.tasks;
    const tasks = own?.loadTasks ? await own.loadTasks() : [];
    return {
      package: packageName,
      version,
      packageManager,
      env: env.name,
      tools: env.listTools().map((t) => t.name),
      tasks: tasks.length,
      spec: envSpecOf(packageName),
    };
  } finally {
    await env.close();
  }
}
