import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { Service } from "kubernetes-models/v1/Service";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { z } from "zod";

/**
 * The fleet manifests in deploy/, checked in CI:
 * - Kubernetes objects against the Kubernetes API's OpenAPI schemas, through `kubernetes-models` (its schemas ship
 *   inside the npm package: nothing is downloaded at test time);
 * - the SkyPilot task against a task schema written here from SkyPilot's documented YAML fields
 *   (docs.skypilot.co, "SkyPilot YAML" reference and "Environment Variables and Secrets"): no npm package ships
 *   SkyPilot's own schema, and SkyPilot is a Python package;
 * - the security properties the issue asks for: a required token, non-root, read-only root filesystem, a
 *   NetworkPolicy admitting only the trainer, pinned image versions, and the rollout API the SkyRL shim uses.
 */
const deploy = fileURLToPath(new URL("../../../deploy/", import.meta.url));
const read = (p: string) => readFileSync(join(deploy, p), "utf8");
const docsOf = (p: string) => parseAllDocuments(read(p)).map((d) => d.toJS());

const MODELS: Record<string, new (o: never) => { validate(): void }> = {
  Deployment: Deployment as never,
  Service: Service as never,
  NetworkPolicy: NetworkPolicy as never,
};

/** SkyPilot task fields (reference/yaml-spec): unknown top-level or resources keys are refused. */
const resources = z
  .object({
    infra: z.string(),
    cloud: z.string(),
    region: z.string(),
    zone: z.string(),
    accelerators: z.union([z.string(), z.record(z.string(), z.number()), z.array(z.string())]),
    accelerator_args: z.record(z.string(), z.unknown()),
    cpus: z.union([z.string().regex(/^\d+(\.\d+)?\+?$/), z.number()]),
    memory: z.union([z.string().regex(/^\d+(\.\d+)?(x|\+)?$/), z.number()]),
    instance_type: z.string(),
    use_spot: z.boolean(),
    disk_size: z.number().int().positive(),
    disk_tier: z.enum(["low", "medium", "high", "ultra", "best"]),
    network_tier: z.enum(["standard", "best"]),
    image_id: z.union([z.string(), z.record(z.string(), z.string())]),
    ports: z.union([z.number().int(), z.string(), z.array(z.union([z.number().int(), z.string()]))]),
    labels: z.record(z.string(), z.string()),
    autostop: z.union([z.boolean(), z.number(), z.string(), z.record(z.string(), z.unknown())]),
    job_recovery: z.union([z.string(), z.record(z.string(), z.unknown())]),
    any_of: z.array(z.record(z.string(), z.unknown())),
    ordered: z.array(z.record(z.string(), z.unknown())),
  })
  .partial()
  .strict();
const envValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const skypilotTask = z
  .object({
    name: z.string().regex(/^[a-z]([-a-z0-9]*[a-z0-9])?$/),
    workdir: z.string(),
    num_nodes: z.number().int().positive(),
    resources,
    envs: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), envValue),
    secrets: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), envValue),
    file_mounts: z.record(z.string(), z.unknown()),
    volumes: z.record(z.string(), z.unknown()),
    setup: z.string(),
    run: z.string(),
    config: z.record(z.string(), z.unknown()),
    service: z.record(z.string(), z.unknown()),
  })
  .partial()
  .strict();

describe("deploy/k8s", () => {
  const objects = ["deployment.yaml", "service.yaml", "networkpolicy.yaml"].flatMap((f) => docsOf(`k8s/${f}`));
  const dep = objects.find((o) => o.kind === "Deployment");
  const pod = dep.spec.template.spec;

  it("every object validates against the Kubernetes API schemas", () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(["Deployment", "NetworkPolicy", "Service"]);
    for (const o of objects) {
      const Model = MODELS[o.kind]!;
      expect(() => new Model(o as never).validate(), `${o.kind}/${o.metadata.name}`).not.toThrow();
    }
    // the validator does catch a broken manifest
    const broken = structuredClone(dep);
    broken.spec.template.spec.containers[0].ports[0].containerPort = "eight thousand";
    expect(() => new Deployment(broken).validate()).toThrow(/containerPort/);
  });

  it("every container needs the token from the Secret, runs non-root on a read-only root filesystem", () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 1000 });
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.containers.map((c: { name: string }) => c.name)).toEqual(["env-server", "mcp-server"]);
    for (const c of pod.containers) {
      const token = c.env.find((e: { name: string }) => e.name === "BENCHMAX_TOKEN");
      expect(token.valueFrom.secretKeyRef).toEqual({
        name: "benchmax-env-server-token",
        key: "token",
        optional: false,
      });
      expect(c.securityContext).toMatchObject({
        readOnlyRootFilesystem: true,
        allowPrivilegeEscalation: false,
        capabilities: { drop: ["ALL"] },
      });
      expect(c.volumeMounts).toContainEqual({ name: "tmp", mountPath: "/tmp" });
      expect(c.image).toMatch(/^benchmax\/env-server-[a-z]+:\d+\.\d+\.\d+$/);
      expect(c.readinessProbe.httpGet.path).toBe("/health");
    }
    const kust = parse(read("k8s/kustomization.yaml"));
    expect(kust.resources).toEqual(["deployment.yaml", "service.yaml", "networkpolicy.yaml"]);
    expect(kust.secretGenerator).toEqual([
      { name: "benchmax-env-server-token", files: ["token=token.txt"], options: { disableNameSuffixHash: true } },
    ]);
    expect(read("k8s/.gitignore")).toMatch(/^token\.txt$/m);
  });

  it("serves the rollout API the SkyRL shim uses and MCP, found through one headless Service", () => {
    const [rollout, mcp] = pod.containers;
    expect(rollout.env).toContainEqual({ name: "BENCHMAX_MODE", value: "rollout" });
    expect(rollout.ports).toEqual([{ name: "rollout", containerPort: 8000 }]);
    expect(mcp.env).toContainEqual({ name: "BENCHMAX_MODE", value: "mcp" });
    const svc = objects.find((o) => o.kind === "Service");
    expect(svc.spec.clusterIP).toBe("None");
    expect(svc.spec.selector).toEqual(dep.spec.template.metadata.labels);
    expect(svc.spec.ports.map((p: { targetPort: string }) => p.targetPort)).toEqual(["rollout", "mcp"]);
  });

  it("the NetworkPolicy admits only the trainer's pods, on the two server ports", () => {
    const np = objects.find((o) => o.kind === "NetworkPolicy");
    expect(np.spec.podSelector.matchLabels).toEqual(dep.spec.template.metadata.labels);
    expect(np.spec.policyTypes).toEqual(["Ingress"]);
    expect(np.spec.ingress).toHaveLength(1);
    expect(np.spec.ingress[0].from).toEqual([
      { podSelector: { matchLabels: { "app.kubernetes.io/component": "benchmax-trainer" } } },
    ]);
    expect(np.spec.ingress[0].ports.map((p: { port: number }) => p.port)).toEqual([8000, 8080]);
  });
});

describe("deploy/docker", () => {
  const dockerfile = read("docker/Dockerfile");
  const entry = read("docker/entrypoint.sh");

  it("pins the base, installs this repo's packed tarballs at build time, runs as node unless built for SkyPilot", () => {
    const from = /^FROM (\S+)/m.exec(dockerfile)![1]!;
    expect(from).toMatch(/^node:\d+\.\d+\.\d+-[a-z]+-slim$/);
    expect(dockerfile).not.toMatch(/latest/);
    // issue 27: @benchmax/cli@0.1.0 is not on the registry; the image takes the repo's own packages
    expect(dockerfile).toMatch(/^COPY dist-tarballs\/ /m);
    expect(dockerfile).toMatch(/npm install --omit=dev .*\/opt\/benchmax-tarballs\/\*\.tgz/);
    expect(dockerfile).not.toMatch(/"@benchmax\/[a-z-]+@/);
    expect(dockerfile).toMatch(/^ARG BENCHMAX_USER=node$/m);
    expect(dockerfile).toMatch(/^USER \$\{BENCHMAX_USER\}$/m);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/local\/bin\/benchmax-entrypoint"\]$/m);
  });

  it("refuses to serve without a token; serves the rollout API by default", () => {
    expect(entry).toMatch(/if \[ -z "\$\{BENCHMAX_TOKEN:-\}" \]; then[\s\S]*exit 64/);
    expect(entry).toMatch(/rollout\) exec benchmax serve "\$BENCHMAX_ENV" --host 0\.0\.0\.0/);
    expect(entry).toMatch(/mcp\) exec benchmax serve "\$BENCHMAX_ENV" --mcp --host 0\.0\.0\.0/);
  });
});

describe("deploy/skypilot", () => {
  const task = parse(read("skypilot/env-servers.yaml"));

  it("validates against the SkyPilot task schema (documented fields only)", () => {
    expect(skypilotTask.safeParse(task).error?.issues ?? []).toEqual([]);
    expect(skypilotTask.safeParse({ ...task, nodes: 2 }).success).toBe(false);
    expect(skypilotTask.safeParse({ ...task, resources: { ...task.resources, gpu: 1 } }).success).toBe(false);
  });

  it("requires the token as a SkyPilot secret, runs the pinned image, serves the rollout API too", () => {
    expect(task.secrets).toEqual({ BENCHMAX_TOKEN: null });
    expect(task.envs.BENCHMAX_TOKEN).toBeUndefined();
    expect(task.resources.image_id).toMatch(/^docker:benchmax\/env-server-[a-z]+:\d+\.\d+\.\d+$/);
    expect(task.resources.ports).toBeUndefined();
    expect(task.run).toMatch(/benchmax serve "\$BENCHMAX_ENV" --host 0\.0\.0\.0 --port "\$ROLLOUT_PORT" &/);
    expect(task.run).toMatch(/BENCHMAX_ROLLOUT_ENDPOINT/);
    expect(task.setup).toBeUndefined();
  });
});
