import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { UsageError } from "@benchmax/core";
import type { Command } from "commander";
import { defaultImageRepo, findEnvPackage, imageTags, serveSpecOf } from "../ship/image.js";
import {
  baseName,
  CLOSE_WAIT_S,
  type FleetOptions,
  kubernetesObjects,
  kustomization,
  skypilotTask,
  TRAINER_LABEL,
  yamlFile,
} from "../ship/manifests.js";

interface DeployFlags {
  out?: string;
  image?: string;
  tag?: string;
  replicas?: string;
  drainGrace?: string;
  spot?: boolean;
  force?: boolean;
}

const positiveInt = (v: string | undefined, flag: string): number | undefined => {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${flag} must be a whole number ≥ 1, got "${v}"`);
  return n;
};

/** The files `benchmax deploy` writes, by name (text). */
export function deployFiles(platform: "k8s" | "skypilot", o: FleetOptions): Record<string, string> {
  const base = baseName(o);
  if (platform === "k8s") {
    const objs = kubernetesObjects(o);
    const grace = (
      objs["deployment.yaml"] as { spec: { template: { spec: { terminationGracePeriodSeconds: number } } } }
    ).spec.template.spec.terminationGracePeriodSeconds;
    const drain = o.drainGraceS ?? 30;
    const comments: Record<string, string> = {
      "deployment.yaml": `benchmax env servers for ${o.env} (written by \`benchmax deploy k8s\`). Each pod: env-server (the rollout API on
8000) and mcp-server (MCP on 8080), both from ${o.image}, both needing the token from the Secret ${base}-token
(kustomization.yaml makes it from token.txt). Non-root, read-only root filesystem, /tmp an emptyDir.
Drain: on SIGTERM the rollout server refuses new rollouts, /health answers 503 (the pod leaves the Service), and
live rollouts are served for ${drain} s at most (BENCHMAX_DRAIN_GRACE), then the close waits up to ${CLOSE_WAIT_S} s;
terminationGracePeriodSeconds (${grace}) covers both before SIGKILL. No preStop hook: the server refuses new rollouts
itself while it drains, so a preStop sleep would only keep the door open longer.`,
      "service.yaml": `Headless Service: one DNS A record per ready pod, so a trainer pins each rollout to one pod
(http://<pod-ip>:8000 rollout API, http://<pod-ip>:8080/mcp MCP).`,
      "networkpolicy.yaml": `Only the trainer reaches the servers: pods labelled ${Object.entries(TRAINER_LABEL)
        .map(([k, v]) => `${k}: ${v}`)
        .join(", ")}, and Prometheus (namespace monitoring) on 8000.`,
      "pdb.yaml": "Voluntary disruptions evict one pod at a time; each drains first.",
    };
    const files: Record<string, string> = {};
    for (const [file, obj] of Object.entries(objs)) files[file] = yamlFile(comments[file] ?? "", obj);
    files["kustomization.yaml"] = yamlFile(
      `kubectl apply -k <this folder>; first write the token (never commit it), without a trailing newline:
  openssl rand -hex 32 | tr -d '\\n' > token.txt`,
      kustomization(o),
    );
    files[".gitignore"] = "token.txt\n";
    files["README.md"] = `# ${o.env} on Kubernetes

Written by \`benchmax deploy k8s\` for the image \`${o.image}\` (\`benchmax build\` makes it; push it where the
cluster pulls from, and set that name in kustomization.yaml's \`images\`).

\`\`\`sh
openssl rand -hex 32 | tr -d '\\n' > token.txt     # the fleet token (never committed; no trailing newline)
kubectl apply -k .
kubectl label pod <trainer-pod> ${Object.entries(TRAINER_LABEL)
      .map(([k, v]) => `${k}=${v}`)
      .join(" ")}   # or set it in the trainer's pod spec
\`\`\`

Trainers find the ready pods through the headless Service \`${base}s\`: the rollout API on 8000, MCP on 8080/mcp.
`;
    return files;
  }
  const task = skypilotTask(o);
  const file = o.spot ? "task-spot.yaml" : "task.yaml";
  const launch = o.spot
    ? `sky jobs launch -n ${task.name} ${file} --secret BENCHMAX_TOKEN -y -d`
    : `sky launch -c ${task.name} ${file} --secret BENCHMAX_TOKEN -y -d`;
  return {
    [file]: yamlFile(
      `benchmax env servers for ${o.env} on SkyPilot (written by \`benchmax deploy skypilot\`), from ${o.skypilotImage}.
Each node: one rollout-API server ("BENCHMAX_ROLLOUT_ENDPOINT <url>") and SERVERS_PER_NODE MCP servers
("BENCHMAX_ENDPOINT <url>/mcp"). The token is a required SkyPilot secret; no port is opened to the internet.
A SIGTERM to the run script reaches every server; the rollout server drains for DRAIN_GRACE_S seconds at most.
  export BENCHMAX_TOKEN=$(openssl rand -hex 32) && (umask 077 && printf %s "$BENCHMAX_TOKEN" > benchmax-token.txt)
  ${launch}`,
      task,
    ),
  };
}

export function register(program: Command): void {
  program
    .command("deploy <platform> [env]")
    .description(
      "write the manifests that run an env's image: k8s (Deployment, headless Service, NetworkPolicy, PodDisruptionBudget, kustomization with the token Secret) or skypilot (a task; --spot: a managed spot job)",
    )
    .option("--out <dir>", "where to write them (default ./deploy-<env>)")
    .option("--image <name>", "image repository (default benchmax/env-server-<env>, as benchmax build names it)")
    .option("--tag <version>", "version part of the image tags (default the package's version)")
    .option("--replicas <n>", "pods (k8s, default 4) or nodes (skypilot, default 2)")
    .option(
      "--drain-grace <seconds>",
      "how long a SIGTERM'd server serves its live rollouts (default 30 k8s, 20 skypilot)",
    )
    .option("--spot", "skypilot: a managed job on spot instances with job recovery")
    .option("--force", "write into a folder that already has files")
    .action(async (platform: string, spec: string | undefined, flags: DeployFlags) => {
      if (platform !== "k8s" && platform !== "skypilot") {
        throw new UsageError(`benchmax deploy: the platform is k8s or skypilot, got "${platform}"`);
      }
      if (flags.spot && platform !== "skypilot") throw new UsageError("--spot is for skypilot");
      const pkg = findEnvPackage(spec ?? ".");
      const tags = imageTags(flags.image ?? defaultImageRepo(pkg.env), flags.tag ?? pkg.version);
      const replicas = positiveInt(flags.replicas, "--replicas");
      const drainGraceS = positiveInt(flags.drainGrace, "--drain-grace");
      const o: FleetOptions = {
        env: pkg.env,
        serveSpec: serveSpecOf(pkg.name),
        image: tags.server,
        skypilotImage: tags.skypilot,
        ...(replicas !== undefined ? { replicas } : {}),
        ...(drainGraceS !== undefined ? { drainGraceS } : {}),
        ...(flags.spot ? { spot: true } : {}),
      };
      const out = resolve(flags.out ?? `deploy-${pkg.env}`);
      if (existsSync(out) && readdirSync(out).length > 0 && !flags.force) {
        throw new UsageError(`${out} already has files; pass --force to overwrite, or --out DIR`);
      }
      mkdirSync(out, { recursive: true });
      const files = deployFiles(platform, o);
      for (const [name, text] of Object.entries(files)) writeFileSync(join(out, name), text);
      process.stdout.write(`benchmax deploy ${platform}: ${Object.keys(files).join(", ")} in ${out}\n`);
    });
}
