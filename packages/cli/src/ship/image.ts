import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "@benchmax/core";
import { findWorkspaceRoot, templatesDir } from "../scaffold/scaffold.js";

/** The base image the env images start from: the one deploy/docker/Dockerfile pins (Debian bookworm + Node 20). */
export const DEFAULT_BASE_IMAGE = "node:20.20.2-bookworm-slim";

/** The Dockerfile's two stages: `server` (Kubernetes: uid 1000, HOME=/tmp) and `skypilot` (root, HOME=/root). */
export const IMAGE_TARGETS = ["server", "skypilot"] as const;
export type ImageTarget = (typeof IMAGE_TARGETS)[number];

/** An env package to put in an image: where it is, its name and version, and what `benchmax serve` loads. */
export interface EnvPackage {
  /** The package's folder (an env dir, or an installed package's folder). */
  dir: string;
  name: string;
  version: string;
  /** The env's short name (`glossary-demo` for `benchmax-env-glossary-demo` or `@benchmax/env-glossary-demo`). */
  env: string;
  /** Whether the package.json has `workspace:` ranges (inside the benchmax repo: packed with pnpm, which rewrites them). */
  workspace: boolean;
}

/** The env's short name from its package name: the scope and a leading `benchmax-env-` or `env-` dropped. */
export function envNameOf(packageName: string): string {
  const bare = packageName.replace(/^@[^/]+\//, "");
  return bare.replace(/^benchmax-env-/, "").replace(/^env-/, "") || bare;
}

/**
 * Find the env package for `spec`: a folder (`.`, `./envs/x`) with a package.json, or a package name (`excel`,
 * `@benchmax/env-excel`, `benchmax-env-x`) installed where the CLI looks for envs.
 */
export function findEnvPackage(spec: string, cwd = process.cwd()): EnvPackage {
  const asDir = resolve(cwd, spec);
  let dir: string | undefined;
  if (spec === "." || spec.startsWith("./") || spec.startsWith("../") || spec.startsWith("/")) {
    if (!existsSync(join(asDir, "package.json"))) {
      throw new UsageError(`${spec}: no package.json there; an env image is made from an env package (npm pack)`);
    }
    dir = asDir;
  } else {
    const name = spec.startsWith("@") || spec.startsWith("benchmax-env-") ? spec : `@benchmax/env-${spec}`;
    for (const from of [cwd, dirname(templatesDir())]) {
      try {
        dir = dirname(realpathSync(createRequire(join(from, "noop.js")).resolve(`${name}/package.json`)));
        break;
      } catch {
        /* next */
      }
    }
    if (!dir)
      throw new UsageError(`env package ${name} is not installed here (npm i ${name}), and ${spec} is no folder`);
  }
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as {
    name?: string;
    version?: string;
    private?: boolean;
    dependencies?: Record<string, string>;
  };
  if (!pkg.name || !pkg.version) throw new UsageError(`${join(dir, "package.json")} needs a name and a version`);
  const workspace = Object.values(pkg.dependencies ?? {}).some((v) => v.startsWith("workspace:"));
  return { dir, name: pkg.name, version: pkg.version, env: envNameOf(pkg.name), workspace };
}

/** The image's name and one tag per target: `<repo>:<version>-server` and `<repo>:<version>-skypilot`. */
export function imageTags(repo: string, version: string): Record<ImageTarget, string> {
  if (!/^[a-z0-9]+([._-][a-z0-9]+)*(\/[a-z0-9]+([._-][a-z0-9]+)*)*(:[0-9]+)?$/.test(repo.replace(/^[^/]+:\d+\//, ""))) {
    throw new UsageError(`image name "${repo}" is not valid: lowercase letters, digits, ".", "_", "-" and "/"`);
  }
  const tag = version.replace(/[^A-Za-z0-9_.-]/g, "-");
  return { server: `${repo}:${tag}-server`, skypilot: `${repo}:${tag}-skypilot` };
}

/** The default image repository of an env: `benchmax/env-server-<env>`. */
export const defaultImageRepo = (env: string) => `benchmax/env-server-${env}`;

/** What `benchmax serve` loads inside the image: a scoped package by name, an unscoped one by its installed path. */
export function serveSpecOf(packageName: string): string {
  return packageName.startsWith("@") ? packageName : `/opt/benchmax/node_modules/${packageName}`;
}

export interface DockerfileOptions {
  base?: string;
  /** The package tarballs in the build context's `packages/` folder (the env's first). */
  tarballs: string[];
  /** What `npm install` takes from the registry besides the tarballs (`@benchmax/cli@^0.1.0`), if anything. */
  registryPackages: string[];
  /** `benchmax serve`'s env spec inside the image. */
  serveSpec: string;
  /** The env package's name (checked at build time: it must load). */
  packageName: string;
}

/**
 * The Dockerfile `benchmax build` writes into its build context: the packed env (and any packed @benchmax packages)
 * installed with npm at build time into /opt/benchmax, the env checked to load (`benchmax info`), the entrypoint that
 * refuses to serve without a token; stages `skypilot` (root, HOME=/root) and `server` (uid 1000, HOME=/tmp, last).
 */
export function envDockerfile(o: DockerfileOptions): string {
  const base = o.base ?? DEFAULT_BASE_IMAGE;
  const installs = [...o.tarballs.map((t) => `/opt/benchmax-packages/${t}`), ...o.registryPackages].join(" ");
  return `# benchmax env server image for ${o.packageName}, written by \`benchmax build\`: \`benchmax serve <env>\` (rollout
# API on 8000) or, with BENCHMAX_MODE=mcp, the MCP server (8080). The token comes from BENCHMAX_TOKEN (a Kubernetes
# Secret, a SkyPilot secret); without it the entrypoint refuses to start. Writes only to /tmp.
FROM ${base} AS base

ENV NODE_ENV=production \\
    NPM_CONFIG_UPDATE_NOTIFIER=false \\
    BENCHMAX_ENV=${o.serveSpec} \\
    BENCHMAX_MODE=rollout \\
    BENCHMAX_PORT=8000 \\
    TMPDIR=/tmp \\
    PATH=/opt/benchmax/node_modules/.bin:\${PATH}

# the packed env (npm pack) and the CLI, installed together at build time, never at start; the env must load
COPY packages/ /opt/benchmax-packages/
RUN mkdir -p /opt/benchmax && cd /opt/benchmax \\
 && npm init -y >/dev/null \\
 && npm install --omit=dev --no-fund --no-audit ${installs} \\
 && test -x /opt/benchmax/node_modules/.bin/benchmax \\
 && /opt/benchmax/node_modules/.bin/benchmax info "$BENCHMAX_ENV" >/dev/null \\
 && ln -s /opt/benchmax/node_modules/.bin/benchmax /usr/local/bin/benchmax \\
 && rm -rf /opt/benchmax-packages && npm cache clean --force

COPY --chmod=0555 entrypoint.sh /usr/local/bin/benchmax-entrypoint

EXPOSE 8000 8080
HEALTHCHECK --interval=10s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+process.env.BENCHMAX_PORT+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["/usr/local/bin/benchmax-entrypoint"]

# SkyPilot: root, with root's own home, so SkyPilot's SSH keys are where sshd looks
FROM base AS skypilot
USER root
ENV HOME=/root

# The default (last) stage, for Kubernetes: the unprivileged \`node\` user (uid 1000), its HOME on the writable /tmp
FROM base AS server
USER node
ENV HOME=/tmp
`;
}

/** The entrypoint every env image runs (the CLI ships it; deploy/docker/Dockerfile copies the same file). */
export function entrypointScript(): string {
  return readFileSync(join(dirname(templatesDir()), "image", "entrypoint.sh"), "utf8");
}

/** The container engine to build with: `docker` or `podman`, the one asked for, else the first on PATH. */
export function findEngine(wanted?: string): string {
  if (wanted && !["docker", "podman"].includes(basename(wanted))) {
    throw new UsageError(`--engine must be docker or podman (or a path to one), got "${wanted}"`);
  }
  const runs = (cmd: string, args: string[]) =>
    spawnSync(cmd, args, { encoding: "utf8", timeout: 20_000 }).status === 0;
  if (wanted) {
    if (runs(wanted, ["--version"])) return wanted;
    throw new UsageError(`${wanted} is not runnable here (${wanted} --version failed)`);
  }
  // docker needs its daemon (`docker info` answers); podman needs none
  if (runs("docker", ["info"])) return "docker";
  if (runs("podman", ["--version"])) return "podman";
  throw new UsageError(
    runs("docker", ["--version"])
      ? "docker is installed but its daemon does not answer (docker info failed), and there is no podman: start dockerd, or apt-get install podman"
      : "no container engine: install docker or podman (apt-get install podman), or print the Dockerfile with --dry-run",
  );
}

/** The command that packs an env package: pnpm (inside the benchmax repo, for `workspace:` ranges) or npm. */
export function packCommand(pkg: EnvPackage, dest: string): { cmd: string; args: string[]; cwd: string } {
  const root = pkg.workspace ? findWorkspaceRoot(pkg.dir) : undefined;
  if (pkg.workspace && !root) {
    throw new UsageError(
      `${pkg.name} has workspace: dependencies but is not inside the benchmax repo; publish-ready ranges are needed`,
    );
  }
  return root
    ? {
        cmd: process.execPath,
        args: [join(root, "scripts", "pnpm.mjs"), "-C", pkg.dir, "pack", "--pack-destination", dest],
        cwd: pkg.dir,
      }
    : { cmd: "npm", args: ["pack", "--pack-destination", dest, "--silent"], cwd: pkg.dir };
}

/** The .tgz files in a folder (`npm run pack`'s dist-tarballs/), sorted. */
export function tarballsIn(dir: string): string[] {
  if (!existsSync(dir)) throw new UsageError(`--tarballs ${dir}: no such folder`);
  const out = readdirSync(dir)
    .filter((f) => f.endsWith(".tgz"))
    .sort();
  if (out.length === 0) throw new UsageError(`--tarballs ${dir}: no .tgz files there (npm run pack writes them)`);
  return out;
}
