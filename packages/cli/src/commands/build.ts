import { spawnSync } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { UsageError } from "@benchmax/core";
import type { Command } from "commander";
import {
  DEFAULT_BASE_IMAGE,
  defaultImageRepo,
  type EnvPackage,
  entrypointScript,
  envDockerfile,
  findEngine,
  findEnvPackage,
  IMAGE_TARGETS,
  type ImageTarget,
  imageTags,
  packCommand,
  serveSpecOf,
  tarballsIn,
} from "../ship/image.js";
import { cliVersion } from "../version.js";

interface BuildFlags {
  image?: string;
  tag?: string;
  base: string;
  target: string;
  engine?: string;
  engineArg: string[];
  tarballs?: string;
  context?: string;
  dryRun?: boolean;
}

const collect = (v: string, prev: string[]) => [...prev, v];

export interface BuildPlan {
  pkg: EnvPackage;
  tags: Record<ImageTarget, string>;
  targets: ImageTarget[];
  dockerfile: string;
  /** The build commands, one per target (the engine first). */
  commands: string[][];
  /** The pack command, as text. */
  pack: string;
}

/** The file name npm and pnpm give the packed package (`@benchmax/env-x` 0.1.0 → `benchmax-env-x-0.1.0.tgz`). */
const envTarballOf = (pkg: EnvPackage) => `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}.tgz`;

/** Shell-quote one word for the printed commands. */
const sh = (w: string) => (/^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replace(/'/g, "'\\''")}'`);

/** Everything `benchmax build` will do, without doing it (the dry run prints this). */
export function planBuild(
  spec: string,
  flags: BuildFlags,
  context: string,
  engine: string,
  cwd = process.cwd(),
): BuildPlan {
  const pkg = findEnvPackage(spec, cwd);
  const targets = flags.target === "all" ? [...IMAGE_TARGETS] : [flags.target as ImageTarget];
  if (!targets.every((t) => (IMAGE_TARGETS as readonly string[]).includes(t))) {
    throw new UsageError(`--target must be server, skypilot or all, got "${flags.target}"`);
  }
  const tags = imageTags(flags.image ?? defaultImageRepo(pkg.env), flags.tag ?? pkg.version);
  // other envs' tarballs in the folder (npm run pack packs them all) stay out of this env's image
  const extra = flags.tarballs
    ? tarballsIn(resolve(cwd, flags.tarballs)).filter((t) => !/^benchmax-env-/.test(t) || t === envTarballOf(pkg))
    : [];
  // without --tarballs, the CLI comes from the registry, the same version as this one
  const hasCli = extra.some((t) => /^benchmax-cli-\d/.test(t));
  const envTarball = envTarballOf(pkg);
  const dockerfile = envDockerfile({
    base: flags.base,
    tarballs: [envTarball, ...extra.filter((t) => t !== envTarball)],
    registryPackages: hasCli ? [] : [`@benchmax/cli@${cliVersion()}`],
    serveSpec: serveSpecOf(pkg.name),
    packageName: pkg.name,
  });
  const commands = targets.map((t) => [
    engine,
    "build",
    ...flags.engineArg,
    "--target",
    t,
    "-t",
    tags[t],
    "-f",
    join(context, "Dockerfile"),
    context,
  ]);
  const p = packCommand(pkg, join(context, "packages"));
  return {
    pkg,
    tags,
    targets,
    dockerfile,
    commands,
    pack: `(cd ${sh(p.cwd)} && ${[p.cmd, ...p.args].map(sh).join(" ")})`,
  };
}

/** `benchmax build`: pack the env, write the build context, build one image per target. */
export async function runBuild(spec: string, flags: BuildFlags, log: (s: string) => void): Promise<BuildPlan> {
  const engine = flags.dryRun ? (flags.engine ?? "docker") : findEngine(flags.engine);
  const context = flags.context
    ? resolve(flags.context)
    : flags.dryRun
      ? join(tmpdir(), "benchmax-build-XXXXXX")
      : mkdtempSync(join(tmpdir(), "benchmax-build-"));
  const plan = planBuild(spec, flags, context, engine);
  if (flags.dryRun) {
    log(
      `# benchmax build ${spec}: ${plan.pkg.name}@${plan.pkg.version} → ${plan.targets.map((t) => plan.tags[t]).join(", ")}\n`,
    );
    log(`# ${context}/Dockerfile\n${plan.dockerfile}\n`);
    log(`# commands\n${plan.pack}\n`);
    if (flags.tarballs) log(`cp ${sh(resolve(flags.tarballs))}/*.tgz ${sh(join(context, "packages"))}/\n`);
    for (const c of plan.commands) log(`${c.map(sh).join(" ")}\n`);
    return plan;
  }
  const { pkg } = plan;
  // the packed package ships dist/: build it first when its entry is missing
  const pj = JSON.parse(readFileSync(join(pkg.dir, "package.json"), "utf8")) as {
    main?: string;
    scripts?: Record<string, string>;
  };
  if (pj.main && !existsSync(join(pkg.dir, pj.main))) {
    if (!pj.scripts?.build) throw new UsageError(`${pkg.name}: ${pj.main} is missing and there is no build script`);
    log(`benchmax build: ${pj.main} is missing; npm run build in ${pkg.dir}\n`);
    run("npm", ["run", "build"], pkg.dir);
  }
  mkdirSync(join(context, "packages"), { recursive: true });
  const p = packCommand(pkg, join(context, "packages"));
  log(`benchmax build: packing ${pkg.name}@${pkg.version}\n`);
  run(p.cmd, p.args, p.cwd);
  if (flags.tarballs) {
    const from = resolve(flags.tarballs);
    for (const t of tarballsIn(from)) {
      const wanted = plan.dockerfile.includes(`/opt/benchmax-packages/${t}`);
      if (wanted && !existsSync(join(context, "packages", t)))
        copyFileSync(join(from, t), join(context, "packages", t));
    }
  }
  const packed = readdirSync(join(context, "packages"));
  const envTarball = plan.dockerfile.match(/\/opt\/benchmax-packages\/(\S+\.tgz)/)?.[1];
  if (!envTarball || !packed.includes(envTarball)) {
    throw new Error(`benchmax build: packing ${pkg.name} gave ${packed.join(", ") || "nothing"}, not ${envTarball}`);
  }
  writeFileSync(join(context, "Dockerfile"), plan.dockerfile);
  writeFileSync(join(context, "entrypoint.sh"), entrypointScript(), { mode: 0o555 });
  for (const c of plan.commands) {
    log(`benchmax build: ${c.map(sh).join(" ")}\n`);
    const r = spawnSync(c[0]!, c.slice(1), { stdio: ["ignore", "inherit", "inherit"] });
    if (r.status !== 0)
      throw new UsageError(`${c[0]} build failed (exit ${r.status ?? r.signal}); the context is ${context}`);
  }
  if (!flags.context) rmSync(context, { recursive: true, force: true });
  return plan;
}

function run(cmd: string, args: string[], cwd: string): void {
  const r = spawnSync(cmd, args, {
    cwd,
    encoding: "utf8",
    env: { ...process.env, npm_config_update_notifier: "false" },
  });
  if (r.status !== 0) {
    throw new UsageError(`${cmd} ${args.join(" ")} (in ${cwd}) failed:\n${`${r.stdout}${r.stderr}`.slice(-3000)}`);
  }
}

export function register(program: Command): void {
  program
    .command("build [env]")
    .description(
      "build the container image of an env (a folder, `.` by default, or an installed package): npm pack, then an image per target, <name>:<version>-server and <name>:<version>-skypilot",
    )
    .option("--image <name>", "image repository (default benchmax/env-server-<env>)")
    .option("--tag <version>", "version part of the tags (default the package's version)")
    .option("--base <image>", "base image (Debian + Node 20)", DEFAULT_BASE_IMAGE)
    .option("--target <target>", "server (Kubernetes), skypilot, or all", "all")
    .option("--engine <engine>", "docker or podman (default: the first found)")
    .option(
      "--engine-arg <arg>",
      "an extra argument to `<engine> build` (repeatable), e.g. --engine-arg=--isolation=chroot",
      collect,
      [],
    )
    .option(
      "--tarballs <dir>",
      "also install these packed packages (npm run pack's dist-tarballs/), e.g. @benchmax packages not on the registry",
    )
    .option("--context <dir>", "write the build context here and keep it (default: a temp folder, removed)")
    .option("--dry-run", "print the Dockerfile and the commands; build nothing")
    .action(async (spec: string | undefined, flags: BuildFlags) => {
      const plan = await runBuild(spec ?? ".", flags, (s) => process.stdout.write(s));
      if (!flags.dryRun) {
        process.stdout.write(
          `benchmax build: ${plan.targets.map((t) => plan.tags[t]).join(", ")}\nnext: benchmax deploy k8s ${spec ?? "."} (or skypilot)\n`,
        );
      }
    });
}
