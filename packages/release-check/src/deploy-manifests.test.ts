import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it, vi } from "vitest";
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
 *   NetworkPolicy admitting only the trainer (and Prometheus on the rollout port), pinned image versions, and the
 *   rollout API the SkyRL shim uses;
 * - drain (issue 36): the grace each server gets, the time Kubernetes leaves it before SIGKILL, the budget that paces
 *   evictions, /metrics where Prometheus looks, and the SkyPilot run scripts passing SIGTERM on to the servers.
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

/** How long `close()` waits for requests in flight after a drain (serveEnv's `drainTimeoutMs` default), in seconds. */
const CLOSE_WAIT_S = 10;

describe("deploy/k8s", () => {
  const objects = ["deployment.yaml", "service.yaml", "networkpolicy.yaml", "pdb.yaml"].flatMap((f) =>
    docsOf(`k8s/${f}`),
  );
  const dep = objects.find((o) => o.kind === "Deployment");
  const pod = dep.spec.template.spec;

  it("every object validates strictly against the Kubernetes 1.36 schemas", async () => {
    expect(objects.map((o) => o.kind).sort()).toEqual([
      "Deployment",
      "NetworkPolicy",
      "PodDisruptionBudget",
      "Service",
    ]);
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
      // the server stage's own tag (issue 38: the skypilot stage has another, so building both overwrites neither)
      expect(c.image).toMatch(/^benchmax\/env-server-[a-z]+:\d+\.\d+\.\d+-server$/);
      expect(c.readinessProbe.httpGet.path).toBe("/health");
    }
    const kust = parse(read("k8s/kustomization.yaml"));
    expect(kust.resources).toEqual(["deployment.yaml", "service.yaml", "networkpolicy.yaml", "pdb.yaml"]);
    expect(kust.secretGenerator).toEqual([
      { name: "benchmax-env-server-token", files: ["token=token.txt"], options: { disableNameSuffixHash: true } },
    ]);
    expect(read("k8s/.gitignore")).toMatch(/^token\.txt$/m);
    // issue 27: `openssl rand -hex 32 > token.txt` put a newline into the Secret; every instruction strips it
    for (const doc of ["k8s/kustomization.yaml", "README.md"]) {
      const lines = read(doc)
        .split("\n")
        .filter((l) => l.includes("k8s/token.txt") && l.includes("openssl rand"));
      expect(lines.length, doc).toBeGreaterThan(0);
      for (const l of lines) expect(l, doc).toMatch(/openssl rand -hex 32 \| tr -d '\\n' > deploy\/k8s\/token\.txt/);
    }
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

  it("the NetworkPolicy admits the trainer's pods on the two server ports, and Prometheus on the rollout port only", () => {
    const np = objects.find((o) => o.kind === "NetworkPolicy");
    expect(np.spec.podSelector.matchLabels).toEqual(dep.spec.template.metadata.labels);
    expect(np.spec.policyTypes).toEqual(["Ingress"]);
    expect(np.spec.ingress).toHaveLength(2);
    expect(np.spec.ingress[0].from).toEqual([
      { podSelector: { matchLabels: { "app.kubernetes.io/component": "benchmax-trainer" } } },
    ]);
    expect(np.spec.ingress[0].ports.map((p: { port: number }) => p.port)).toEqual([8000, 8080]);
    // one peer holding both selectors: Prometheus pods in that namespace only (two peers would admit either)
    expect(np.spec.ingress[1].from).toEqual([
      {
        namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": "monitoring" } },
        podSelector: { matchLabels: { "app.kubernetes.io/name": "prometheus" } },
      },
    ]);
    expect(np.spec.ingress[1].ports).toEqual([{ protocol: "TCP", port: 8000 }]);
  });

  it("drain: the grace reaches the server, and Kubernetes waits for the drain and the close before SIGKILL", () => {
    const [rollout, mcp] = pod.containers;
    const grace = Number(rollout.env.find((e: { name: string }) => e.name === "BENCHMAX_DRAIN_GRACE").value);
    expect(grace).toBeGreaterThan(0);
    // the MCP server on 8080 drains too, with the same grace
    expect(mcp.env.find((e: { name: string }) => e.name === "BENCHMAX_DRAIN_GRACE").value).toBe(String(grace));
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(grace + CLOSE_WAIT_S);
    // no preStop: the draining server refuses new rollouts itself; a sleep would keep the door open longer
    for (const c of pod.containers) expect(c.lifecycle).toBeUndefined();
    // a drain outside a pod deletion (which stops liveness probes) is not cut short by a liveness restart: the
    // probe's failures, periodSeconds apart, span more than the drain and the close
    for (const c of pod.containers) {
      const live = c.livenessProbe;
      expect(live.periodSeconds * (live.failureThreshold - 1)).toBeGreaterThan(grace + CLOSE_WAIT_S);
    }
  });

  it("a PodDisruptionBudget paces evictions one pod at a time, selecting the Deployment's pods", () => {
    const pdb = objects.find((o) => o.kind === "PodDisruptionBudget");
    expect(pdb.spec.selector.matchLabels).toEqual(dep.spec.selector.matchLabels);
    expect(pdb.spec.selector.matchLabels).toEqual(dep.spec.template.metadata.labels);
    expect(pdb.spec.maxUnavailable).toBe(1);
    expect(pdb.spec.minAvailable).toBeUndefined();
    expect(dep.spec.replicas).toBeGreaterThan(pdb.spec.maxUnavailable);
  });

  it("Prometheus finds /metrics on the rollout port through the pod annotations, on a path with no query", () => {
    const a = dep.spec.template.metadata.annotations;
    expect(a["prometheus.io/scrape"]).toBe("true");
    expect(Number(a["prometheus.io/port"])).toBe(pod.containers[0].ports[0].containerPort);
    // a query in the path annotation would not reach the server as one: the server answers Prometheus' Accept
    // header with the text format on plain /metrics (packages/server drain.test.ts)
    expect(a["prometheus.io/path"]).toBe("/metrics");
  });
});

describe("deploy/docker", () => {
  const dockerfile = read("docker/Dockerfile");
  // one entrypoint for every env image: the CLI ships it (`benchmax build` copies it into its build context)
  const entrypoint = fileURLToPath(new URL("../../cli/templates/image/entrypoint.sh", import.meta.url));
  /** The Dockerfile's stages: name → its lines. */
  const stages = new Map<string, string[]>();
  let current = "";
  for (const line of dockerfile.split("\n")) {
    const from = /^FROM \S+ AS (\S+)$/.exec(line);
    if (from) stages.set((current = from[1]!), []);
    else if (current && line && !line.startsWith("#")) stages.get(current)!.push(line);
  }

  it("pins the base and installs this repo's packed tarballs at build time (issue 27: not @benchmax/cli from npm)", () => {
    // the base is an ARG (a base made from Debian's archive may replace it), pinned by default
    expect(dockerfile).toMatch(/^FROM \$\{BASE\} AS base$/m);
    const from = /^ARG BASE=(\S+)$/m.exec(dockerfile)![1]!;
    expect(from).toMatch(/^node:\d+\.\d+\.\d+-[a-z]+-slim$/);
    expect(dockerfile).not.toMatch(/latest/);
    expect(dockerfile).toMatch(/^COPY dist-tarballs\/ /m);
    expect(dockerfile).toMatch(/npm install --omit=dev .*\/opt\/benchmax-tarballs\/\*\.tgz/);
    expect(dockerfile).not.toMatch(/@benchmax\/[a-z-]+@/);
    // on the default PATH too: SkyPilot runs the task's commands in SSH sessions without the image's ENV
    expect(dockerfile).toMatch(/ln -s \/opt\/benchmax\/node_modules\/\.bin\/benchmax \/usr\/local\/bin\/benchmax/);
    expect(dockerfile).toMatch(/^ENTRYPOINT \["\/usr\/local\/bin\/benchmax-entrypoint"\]$/m);
    // the build context is the tarballs and the entrypoint only
    expect(
      read("docker/Dockerfile.dockerignore")
        .split("\n")
        .filter((l) => l && !l.startsWith("#")),
    ).toEqual(["*", "!dist-tarballs/*.tgz", "!packages/cli/templates/image/entrypoint.sh"]);
  });

  it("default stage: unprivileged node (uid 1000, as deploy/k8s runs it); skypilot stage: root with HOME=/root", () => {
    expect([...stages.keys()]).toEqual(["base", "skypilot", "server"]); // the last one is what a plain build makes
    expect(stages.get("server")).toEqual(["USER node", "ENV HOME=/tmp"]);
    // SkyPilot puts its SSH keys in ~/.ssh: root's own home, where sshd looks, never /tmp
    expect(stages.get("skypilot")).toEqual(["USER root", "ENV HOME=/root"]);
    expect(stages.get("base")!.some((l) => /^(USER|ENV HOME)/.test(l))).toBe(false);
    const pod = docsOf("k8s/deployment.yaml")[0].spec.template.spec;
    expect(pod.securityContext.runAsUser).toBe(1000); // node's uid in the node images
    expect(read("README.md")).toMatch(/--target skypilot/);
  });

  it("entrypoint: valid sh; refuses to serve without a token; serves the rollout API, or MCP with BENCHMAX_MODE=mcp", () => {
    expect(spawnSync("sh", ["-n", entrypoint]).status).toBe(0);
    // a stand-in `benchmax` on PATH prints the arguments it was exec'd with
    const bin = mkdtempSync(join(tmpdir(), "benchmax-entrypoint-"));
    try {
      writeFileSync(join(bin, "benchmax"), '#!/bin/sh\necho "benchmax $*"\n', { mode: 0o755 });
      const run = (env: Record<string, string>) =>
        spawnSync("sh", [entrypoint, "--log-level", "info"], {
          encoding: "utf8",
          env: { PATH: `${bin}:/usr/bin:/bin`, BENCHMAX_ENV: "math", ...env },
        });
      const none = run({});
      expect(none.status).toBe(64);
      expect(none.stderr).toMatch(/BENCHMAX_TOKEN is required/);
      expect(none.stdout).toBe("");
      expect(run({ BENCHMAX_TOKEN: "" }).status).toBe(64);
      const rollout = run({ BENCHMAX_TOKEN: "t" });
      expect(rollout.status).toBe(0);
      expect(rollout.stdout).toBe("benchmax serve math --host 0.0.0.0 --port 8000 --log-level info\n");
      const mcp = run({ BENCHMAX_TOKEN: "t", BENCHMAX_MODE: "mcp", BENCHMAX_PORT: "8081" });
      expect(mcp.stdout).toBe("benchmax serve math --mcp --host 0.0.0.0 --port 8081 --log-level info\n");
      // the drain grace reaches the server in both modes (an MCP server on a port drains too)
      expect(run({ BENCHMAX_TOKEN: "t", BENCHMAX_DRAIN_GRACE: "30" }).stdout).toBe(
        "benchmax serve math --host 0.0.0.0 --port 8000 --drain-grace 30 --log-level info\n",
      );
      expect(run({ BENCHMAX_TOKEN: "t", BENCHMAX_MODE: "mcp", BENCHMAX_DRAIN_GRACE: "30" }).stdout).toBe(
        "benchmax serve math --mcp --host 0.0.0.0 --port 8080 --drain-grace 30 --log-level info\n",
      );
      const bad = run({ BENCHMAX_TOKEN: "t", BENCHMAX_MODE: "both" });
      expect(bad.status).toBe(64);
      expect(bad.stderr).toMatch(/BENCHMAX_MODE must be rollout or mcp, got both/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
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
    // the Dockerfile's skypilot stage, tagged apart from the server stage (issue 38)
    expect(task.resources.image_id).toMatch(/^docker:benchmax\/env-server-[a-z]+:\d+\.\d+\.\d+-skypilot$/);
    expect(task.resources.ports).toBeUndefined();
    expect(task.run).toMatch(
      /benchmax serve "\$BENCHMAX_ENV" --host 0\.0\.0\.0 --port "\$ROLLOUT_PORT" --drain-grace "\$DRAIN_GRACE_S" &/,
    );
    expect(task.run).toMatch(/BENCHMAX_ROLLOUT_ENDPOINT/);
    expect(task.setup).toBeUndefined();
  });
});

describe("deploy/skypilot: spot, as a managed job", () => {
  const task = parse(read("skypilot/env-servers-spot.yaml"));
  const base = parse(read("skypilot/env-servers.yaml"));

  it("validates against the closed SkyPilot task schema; a misspelled recovery field is refused by path", () => {
    expect(validateSkypilotTask(task)).toEqual([]);
    expect(validateSkypilotTask({ ...task, resources: { ...task.resources, spot: true } })).toEqual([
      "/resources/spot: unknown field",
    ]);
    const typo = structuredClone(task);
    typo.resources.job_recovery = { strategy: "EAGER_NEXT_REGION", max_restart_on_errors: 3 };
    expect(validateSkypilotTask(typo)).toContain("/resources/job_recovery/max_restart_on_errors: unknown field");
  });

  it("runs on spot instances with job recovery, the same servers as env-servers.yaml, and a drain grace", () => {
    expect(task.resources.use_spot).toBe(true);
    expect(task.resources.job_recovery).toEqual({ strategy: "EAGER_NEXT_REGION", max_restarts_on_errors: 3 });
    // SkyPilot's strategies (its task-YAML reference, resources.job_recovery)
    expect(["FAILOVER", "EAGER_NEXT_REGION"]).toContain(task.resources.job_recovery.strategy);
    expect(task.secrets).toEqual({ BENCHMAX_TOKEN: null });
    expect(task.resources.image_id).toBe(base.resources.image_id);
    expect(task.resources.ports).toBeUndefined();
    // the same servers and endpoint lines as env-servers.yaml (which @benchmax/mcp generates), plus the drain
    for (const line of base.run
      .split("\n")
      .filter((l: string) => /BENCHMAX_TOKEN is required|echo "BENCHMAX_/.test(l))) {
      expect(task.run).toContain(line);
    }
    expect(task.run).toMatch(
      /benchmax serve "\$BENCHMAX_ENV" --host 0\.0\.0\.0 --port "\$ROLLOUT_PORT" --drain-grace "\$DRAIN_GRACE_S" &/,
    );
    expect(task.run).toMatch(
      /benchmax serve "\$BENCHMAX_ENV" --mcp --host 0\.0\.0\.0 --port "\$PORT" --drain-grace "\$DRAIN_GRACE_S" &/,
    );
    // under a preemption notice of about 30 s (GCP's for spot VMs)
    expect(task.envs.DRAIN_GRACE_S).toBeGreaterThan(0);
    expect(task.envs.DRAIN_GRACE_S).toBeLessThan(30);
    expect(task.envs).toEqual(base.envs);
  });
});

describe("deploy/skypilot run script: a SIGTERM reaches every server", { timeout: 60_000 }, () => {
  /**
   * The task's `run` under bash with a stand-in `benchmax` that logs its arguments and the SIGTERM it gets. Waits are
   * on the log's contents and the script's exit, never on a clock.
   */
  it.each(["env-servers.yaml", "env-servers-spot.yaml"])(
    "%s: SIGTERM reaches every server (each drains), exits 143",
    async (file) => {
      const task = parse(read(`skypilot/${file}`));
      const dir = mkdtempSync(join(tmpdir(), "benchmax-run-"));
      try {
        const log = join(dir, "log");
        writeFileSync(log, "");
        writeFileSync(
          join(dir, "benchmax"),
          '#!/bin/sh\necho "start $*" >> "$LOG"\ntrap \'echo "TERM $*" >> "$LOG"; exit 0\' TERM\nwhile :; do sleep 1 & wait $!; done\n',
          { mode: 0o755 },
        );
        const script = join(dir, "run.sh");
        writeFileSync(script, task.run);
        const proc = spawn("bash", [script], {
          env: {
            PATH: `${dir}:/usr/bin:/bin`,
            LOG: log,
            BENCHMAX_TOKEN: "t",
            SKYPILOT_NODE_IPS: "10.0.0.1\n10.0.0.2",
            SKYPILOT_NODE_RANK: "1",
            ...Object.fromEntries(Object.entries(task.envs).map(([k, v]) => [k, String(v)])),
          },
          stdio: ["ignore", "pipe", "pipe"],
        });
        let out = "";
        proc.stdout!.on("data", (d) => (out += d));
        const exited = new Promise<number | null>((resolve) => proc.on("exit", (code) => resolve(code)));
        const servers = 1 + Number(task.envs.SERVERS_PER_NODE);
        const lines = (kind: string) =>
          readFileSync(log, "utf8")
            .split("\n")
            .filter((l) => l.startsWith(`${kind} `));
        await vi.waitFor(() => expect(lines("start")).toHaveLength(servers), { timeout: 30_000, interval: 20 });
        proc.kill("SIGTERM");
        expect(await exited).toBe(143);
        const grace = String(task.envs.DRAIN_GRACE_S);
        expect(lines("start")).toContain(`start serve math --host 0.0.0.0 --port 8000 --drain-grace ${grace}`);
        expect(lines("start")).toContain(`start serve math --mcp --host 0.0.0.0 --port 8080 --drain-grace ${grace}`);
        expect(lines("TERM").sort()).toEqual(
          lines("start")
            .map((l) => l.replace(/^start/, "TERM"))
            .sort(),
        );
        expect(out).toContain("BENCHMAX_ROLLOUT_ENDPOINT http://10.0.0.2:8000");
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
