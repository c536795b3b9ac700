import { SKYPILOT_RUN } from "@benchmax/mcp";
import { stringify } from "yaml";

/**
 * The fleet manifests for one env image, from one source: `benchmax deploy k8s|skypilot` writes them, and deploy/k8s
 * and deploy/skypilot in the repo are these objects for the catalog's math (release-check compares them). Every
 * server needs the token (a Kubernetes Secret, a SkyPilot secret); only the trainer may connect; a SIGTERM drains.
 */
export interface FleetOptions {
  /** The env's name, for comments and the SkyPilot task (e.g. `glossary-demo`). */
  env: string;
  /** What `benchmax serve` loads in the image (its `BENCHMAX_ENV`): a catalog name, a package name or a path. */
  serveSpec: string;
  /** The image for Kubernetes (the Dockerfile's `server` stage, e.g. `benchmax/env-server-x:0.1.0-server`). */
  image: string;
  /** The image for SkyPilot (the `skypilot` stage, e.g. `benchmax/env-server-x:0.1.0-skypilot`). */
  skypilotImage: string;
  /**
   * The objects' base name: the Deployment, Service and budget are `<base>s`, the pods' label `<base>`, the Secret
   * `<base>-token`. Default `benchmax-<env>-server`.
   */
  base?: string;
  /** Pods (Kubernetes) or nodes (SkyPilot). Default 4 pods, 2 nodes. */
  replicas?: number;
  /** Seconds a SIGTERM'd rollout server serves its live rollouts at most (`--drain-grace`). Default 30 (k8s), 20 (spot). */
  drainGraceS?: number;
  /** SkyPilot: a managed job on spot instances with job recovery. */
  spot?: boolean;
}

/** How long the rollout server's close waits for requests in flight after a drain (serveEnv's default), seconds. */
export const CLOSE_WAIT_S = 10;
/** Slack the kubelet keeps between the end of a drain and SIGKILL, seconds. */
const KILL_SLACK_S = 10;
/** The label a trainer's pods carry to be let in by the NetworkPolicy. */
export const TRAINER_LABEL = { "app.kubernetes.io/component": "benchmax-trainer" } as const;

export const baseName = (o: Pick<FleetOptions, "env" | "base">) => o.base ?? `benchmax-${o.env}-server`;

/** A drain grace must be a whole number of seconds, 1 or more. */
function grace(o: FleetOptions, dflt: number): number {
  const g = o.drainGraceS ?? dflt;
  if (!Number.isInteger(g) || g < 1)
    throw new RangeError(`drain grace must be a whole number of seconds ≥ 1, got ${g}`);
  return g;
}

/** The Kubernetes objects, by file name: Deployment, headless Service, NetworkPolicy, PodDisruptionBudget. */
export function kubernetesObjects(o: FleetOptions): Record<string, Record<string, unknown>> {
  const base = baseName(o);
  const name = `${base}s`;
  const labels = { "app.kubernetes.io/name": base };
  const drain = grace(o, 30);
  const token = {
    name: "BENCHMAX_TOKEN",
    valueFrom: { secretKeyRef: { name: `${base}-token`, key: "token", optional: false } },
  };
  const hardening = {
    readOnlyRootFilesystem: true,
    allowPrivilegeEscalation: false,
    capabilities: { drop: ["ALL"] },
  };
  const probe = (port: string) => ({ httpGet: { path: "/health", port } });
  // liveness fails only after the drain and the close have had their time (a drain outside a pod deletion, which
  // stops liveness probes, is not cut short): failureThreshold × periodSeconds ≥ drain + close + 20
  const livenessFailures = Math.max(4, Math.ceil((drain + CLOSE_WAIT_S + 20) / 20));
  // one container per server mode: `benchmax serve` in the image, on its own port, named by its mode
  const server = (name: string, mode: "rollout" | "mcp", port: number, requests: { cpu: string; memory: string }) => ({
    name,
    image: o.image,
    imagePullPolicy: "IfNotPresent",
    env: [
      { name: "BENCHMAX_MODE", value: mode },
      { name: "BENCHMAX_PORT", value: String(port) },
      { name: "BENCHMAX_DRAIN_GRACE", value: String(drain) },
      token,
    ],
    ports: [{ name: mode, containerPort: port }],
    securityContext: hardening,
    volumeMounts: [{ name: "tmp", mountPath: "/tmp" }],
    readinessProbe: { ...probe(mode), initialDelaySeconds: 3, periodSeconds: 5, failureThreshold: 3 },
    livenessProbe: { ...probe(mode), initialDelaySeconds: 30, periodSeconds: 20, failureThreshold: livenessFailures },
    resources: { requests, limits: { memory: "2Gi" } },
  });
  const deployment = {
    apiVersion: "apps/v1",
    kind: "Deployment",
    metadata: { name, labels },
    spec: {
      replicas: o.replicas ?? 4,
      selector: { matchLabels: labels },
      template: {
        metadata: {
          labels,
          annotations: {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "8000",
            "prometheus.io/path": "/metrics",
          },
        },
        spec: {
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: drain + CLOSE_WAIT_S + KILL_SLACK_S,
          securityContext: {
            runAsNonRoot: true,
            runAsUser: 1000,
            runAsGroup: 1000,
            fsGroup: 1000,
            seccompProfile: { type: "RuntimeDefault" },
          },
          volumes: [{ name: "tmp", emptyDir: { sizeLimit: "4Gi" } }],
          containers: [
            server("env-server", "rollout", 8000, { cpu: "500m", memory: "512Mi" }),
            server("mcp-server", "mcp", 8080, { cpu: "250m", memory: "256Mi" }),
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, labels },
    spec: {
      clusterIP: "None",
      selector: labels,
      ports: [
        { name: "rollout", port: 8000, targetPort: "rollout" },
        { name: "mcp", port: 8080, targetPort: "mcp" },
      ],
    },
  };
  const networkPolicy = {
    apiVersion: "networking.k8s.io/v1",
    kind: "NetworkPolicy",
    metadata: { name: `${name}-trainer-only`, labels },
    spec: {
      podSelector: { matchLabels: labels },
      policyTypes: ["Ingress"],
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { ...TRAINER_LABEL } } }],
          ports: [
            { protocol: "TCP", port: 8000 },
            { protocol: "TCP", port: 8080 },
          ],
        },
        {
          from: [
            {
              namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
              podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } },
            },
          ],
          ports: [{ protocol: "TCP", port: 8000 }],
        },
      ],
    },
  };
  const pdb = {
    apiVersion: "policy/v1",
    kind: "PodDisruptionBudget",
    metadata: { name, labels },
    spec: { maxUnavailable: 1, unhealthyPodEvictionPolicy: "AlwaysAllow", selector: { matchLabels: labels } },
  };
  return {
    "deployment.yaml": deployment,
    "service.yaml": service,
    "networkpolicy.yaml": networkPolicy,
    "pdb.yaml": pdb,
  };
}

/** The kustomization: the four objects, the Secret generated from token.txt (never committed), the image's tag. */
export function kustomization(o: FleetOptions): Record<string, unknown> {
  const at = o.image.lastIndexOf(":");
  const slash = o.image.lastIndexOf("/");
  const [image, tag] = at > slash ? [o.image.slice(0, at), o.image.slice(at + 1)] : [o.image, "latest"];
  return {
    apiVersion: "kustomize.config.k8s.io/v1beta1",
    kind: "Kustomization",
    resources: ["deployment.yaml", "service.yaml", "networkpolicy.yaml", "pdb.yaml"],
    secretGenerator: [
      { name: `${baseName(o)}-token`, files: ["token=token.txt"], options: { disableNameSuffixHash: true } },
    ],
    images: [{ name: image, newTag: tag }],
  };
}

/**
 * The SkyPilot task: on each node one rollout-API server (with the drain grace) and SERVERS_PER_NODE MCP servers,
 * the token a required secret, no public ports; a SIGTERM to the run script reaches every server. With `spot`: a
 * managed job on spot instances with job recovery.
 */
export function skypilotTask(o: FleetOptions): Record<string, unknown> {
  const drain = grace(o, 20);
  return {
    name: `${baseName(o)}s${o.spot ? "-spot" : ""}`,
    num_nodes: o.replicas ?? 2,
    resources: {
      cpus: "4+",
      image_id: `docker:${o.skypilotImage}`,
      ...(o.spot ? { use_spot: true, job_recovery: { strategy: "EAGER_NEXT_REGION", max_restarts_on_errors: 3 } } : {}),
    },
    envs: { BENCHMAX_ENV: o.serveSpec, SERVERS_PER_NODE: 4, BASE_PORT: 8080, ROLLOUT_PORT: 8000, DRAIN_GRACE_S: drain },
    secrets: { BENCHMAX_TOKEN: null },
    run: SKYPILOT_RUN,
  };
}

/** YAML text of one object, after a `#` comment block. */
export function yamlFile(comment: string, doc: unknown): string {
  const head = comment
    .trim()
    .split("\n")
    .map((l) => (l ? `# ${l}` : "#"))
    .join("\n");
  return `${head}\n${stringify(doc, { lineWidth: 0 })}`;
}
