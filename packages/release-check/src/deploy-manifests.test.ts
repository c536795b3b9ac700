import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { kubernetesRelease, validateManifest } from "./deploy-k8s-schema.js";
import { validateSkypilotTask } from "./deploy-skypilot-schema.js";

/**
 * The fleet manifests in deploy/, checked in CI:
 * - Kubernetes objects strictly (every object closed: an unknown or misspelled field is refused with its path)
 *   against schemas generated from the Kubernetes release-1.36 OpenAPI models that ship in `@kubernetes/client-node`
 *   (deploy-k8s-schema.ts; nothing is downloaded at test time);
 * - the SkyPilot task against a closed task schema written here from SkyPilot's own validator, `sky/utils/schemas.py`
 *   and `sky/task.py` in its Python package (deploy-skypilot-schema.ts names the commits read);
 * - the security properties the issue asks for: a required token, non-root, read-only root filesystem, a
 *   NetworkPolicy admitting only the trainer, pinned image versions, and the rollout API the SkyRL shim uses.
 */
const deploy = fileURLToPath(new URL("../../../deploy/", import.meta.url));
const read = (p: string) => readFileSync(join(deploy, p), "utf8");
const docsOf = (p: string) => parseAllDocuments(read(p)).map((d) => d.toJS());

describe("strict Kubernetes schemas (release-1.36)", () => {
  const dep = docsOf("k8s/deployment.yaml")[0];

  it("come from the Kubernetes 1.36 OpenAPI", () => {
    expect(kubernetesRelease()).toBe("release-1.36");
  });

  it("refuse an unknown field and a misspelled one, naming the path", async () => {
    const bogus = structuredClone(dep);
    bogus.spec.bogusField = true;
    expect(await validateManifest(bogus)).toEqual(["Deployment/benchmax-env-servers /spec/bogusField: unknown field"]);

    const typo = structuredClone(dep);
    const sc = typo.spec.template.spec.containers[1].securityContext;
    sc.readOnlyRootFS = sc.readOnlyRootFilesystem;
    delete sc.readOnlyRootFilesystem;
    expect(await validateManifest(typo)).toEqual([
      "Deployment/benchmax-env-servers /spec/template/spec/containers/1/securityContext/readOnlyRootFS: unknown field",
    ]);
  });

  it("refuse wrong types, a missing required field, a wrong apiVersion and an unknown kind", async () => {
    const bad = structuredClone(dep);
    bad.spec.template.spec.containers[0].ports[0].containerPort = "eight thousand";
    delete bad.spec.selector;
    bad.metadata.labels = { ok: 1 };
    expect((await validateManifest(bad)).sort()).toEqual([
      "Deployment/benchmax-env-servers /metadata/labels/ok: must be string",
      "Deployment/benchmax-env-servers /spec/template/spec/containers/0/ports/0/containerPort: must be integer",
      "Deployment/benchmax-env-servers /spec: must have required property 'selector'",
    ]);
    expect(await validateManifest({ ...dep, apiVersion: "extensions/v1beta1" })).toEqual([
      'Deployment/benchmax-env-servers /apiVersion: Deployment is apps/v1, got "extensions/v1beta1"',
    ]);
    expect((await validateManifest({ ...dep, kind: "Deploymnet" }))[0]).toMatch(/"Deploymnet" is not a kind/);
    // release-1.36 models: the pod's schedulingGroup is known; workloadRef, which their PodSpec lacks, is refused
    const newer = structuredClone(dep);
    newer.spec.template.spec.schedulingGroup = { podGroupName: "g" };
    expect(await validateManifest(newer)).toEqual([]);
    newer.spec.template.spec.workloadRef = { name: "w" };
    expect(await validateManifest(newer)).toEqual([
      "Deployment/benchmax-env-servers /spec/template/spec/workloadRef: unknown field",
    ]);
  });
});

describe("deploy/k8s", () => {
  const objects = ["deployment.yaml", "service.yaml", "networkpolicy.yaml"].flatMap((f) => docsOf(`k8s/${f}`));
  const dep = objects.find((o) => o.kind === "Deployment");
  const pod = dep.spec.template.spec;

  it("every object validates strictly against the Kubernetes 1.36 schemas", async () => {
    expect(objects.map((o) => o.kind).sort()).toEqual(["Deployment", "NetworkPolicy", "Service"]);
    for (const o of objects) expect(await validateManifest(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
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

  it("validates against the closed SkyPilot task schema; unknown or misspelled fields are refused by path", () => {
    expect(validateSkypilotTask(task)).toEqual([]);
    expect(validateSkypilotTask({ ...task, nodes: 2 })).toEqual(["/nodes: unknown field"]);
    expect(validateSkypilotTask({ ...task, resources: { ...task.resources, gpu: 1 } })).toEqual([
      "/resources/gpu: unknown field",
    ]);
    expect(validateSkypilotTask({ ...task, secret: { BENCHMAX_TOKEN: null } })).toEqual(["/secret: unknown field"]);
    expect(validateSkypilotTask({ ...task, num_nodes: "2" })).toEqual(["/num_nodes: must be integer"]);
    expect(validateSkypilotTask({ ...task, envs: { ...task.envs, "BAD-NAME": "x" } })).toEqual([
      "/envs/BAD-NAME: unknown field",
    ]);
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
