import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  deployFiles,
  envDockerfile,
  type FleetOptions,
  imageTags,
  kubernetesObjects,
  main,
  skypilotTask,
} from "@benchmax/cli";
import { afterAll, describe, expect, it, vi } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { validateManifest } from "./deploy-k8s-schema.js";
import { validateSkypilotTask } from "./deploy-skypilot-schema.js";

/**
 * Issue 38: `benchmax deploy k8s|skypilot` writes the manifests for any env's image (a scaffolded one included). The
 * files it writes validate strictly against the Kubernetes 1.36 schemas and SkyPilot's task schema (the same checks
 * as deploy-manifests.test.ts), carry the token from a Secret / a SkyPilot secret, a NetworkPolicy and the drain; and
 * deploy/k8s in the repo is what the generator gives for math (one source, so the two cannot drift apart).
 */
const deploy = fileURLToPath(new URL("../../../deploy/", import.meta.url));
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

const custom: FleetOptions = {
  env: "glossary-demo",
  serveSpec: "/opt/benchmax/node_modules/benchmax-env-glossary-demo",
  ...(() => {
    const t = imageTags("registry.example.com:5000/team/glossary-demo", "1.2.3");
    return { image: t.server, skypilotImage: t.skypilot };
  })(),
};

describe("benchmax deploy: the written manifests", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it("the two image targets get distinct tags: <name>:<version>-server and <name>:<version>-skypilot", () => {
    expect(imageTags("benchmax/env-server-math", "0.1.0")).toEqual({
      server: "benchmax/env-server-math:0.1.0-server",
      skypilot: "benchmax/env-server-math:0.1.0-skypilot",
    });
    expect(() => imageTags("Bad Name", "1")).toThrow(/image name "Bad Name" is not valid/);
  });

  it("k8s: every object validates strictly; token from the Secret; NetworkPolicy; drain within the grace period", async () => {
    const files = deployFiles("k8s", { ...custom, drainGraceS: 45, replicas: 3 });
    expect(Object.keys(files).sort()).toEqual([
      ".gitignore",
      "README.md",
      "deployment.yaml",
      "kustomization.yaml",
      "networkpolicy.yaml",
      "pdb.yaml",
      "service.yaml",
    ]);
    const objects = ["deployment.yaml", "service.yaml", "networkpolicy.yaml", "pdb.yaml"].flatMap((f) =>
      parseAllDocuments(files[f]!).map((d) => d.toJS()),
    );
    for (const o of objects) expect(await validateManifest(o), `${o.kind}/${o.metadata.name}`).toEqual([]);
    const dep = objects.find((o) => o.kind === "Deployment");
    const pod = dep.spec.template.spec;
    expect(dep.spec.replicas).toBe(3);
    for (const c of pod.containers) {
      expect(c.image).toBe("registry.example.com:5000/team/glossary-demo:1.2.3-server");
      expect(c.env.find((e: { name: string }) => e.name === "BENCHMAX_TOKEN").valueFrom.secretKeyRef).toEqual({
        name: "benchmax-glossary-demo-server-token",
        key: "token",
        optional: false,
      });
      expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
    }
    // the drain: the server's grace reaches it, and SIGKILL waits for the grace and the close (10 s) after it
    expect(pod.containers[0].env).toContainEqual({ name: "BENCHMAX_DRAIN_GRACE", value: "45" });
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(45 + 10);
    const live = pod.containers[0].livenessProbe;
    expect(live.failureThreshold * live.periodSeconds).toBeGreaterThanOrEqual(45 + 10);
    const np = objects.find((o) => o.kind === "NetworkPolicy");
    expect(np.spec.podSelector.matchLabels).toEqual(dep.spec.template.metadata.labels);
    expect(np.spec.ingress[0].from).toEqual([
      { podSelector: { matchLabels: { "app.kubernetes.io/component": "benchmax-trainer" } } },
    ]);
    const pdb = objects.find((o) => o.kind === "PodDisruptionBudget");
    expect(pdb.spec.selector.matchLabels).toEqual(dep.spec.template.metadata.labels);
    const kust = parse(files["kustomization.yaml"]!);
    expect(kust.secretGenerator[0]).toEqual({
      name: "benchmax-glossary-demo-server-token",
      files: ["token=token.txt"],
      options: { disableNameSuffixHash: true },
    });
    expect(kust.images).toEqual([{ name: "registry.example.com:5000/team/glossary-demo", newTag: "1.2.3-server" }]);
    expect(files[".gitignore"]).toBe("token.txt\n");
    expect(files["kustomization.yaml"]).toMatch(/openssl rand -hex 32 \| tr -d '\\n' > token\.txt/);
  });

  it("skypilot (plain and spot): validates against the closed task schema; the token a secret; a drain grace", () => {
    for (const spot of [false, true]) {
      const files = deployFiles("skypilot", { ...custom, ...(spot ? { spot } : {}) });
      const [file] = Object.keys(files);
      expect(file).toBe(spot ? "task-spot.yaml" : "task.yaml");
      const task = parse(files[file!]!);
      expect(validateSkypilotTask(task), file).toEqual([]);
      expect(task.secrets).toEqual({ BENCHMAX_TOKEN: null });
      expect(task.envs.BENCHMAX_TOKEN).toBeUndefined();
      expect(task.resources.image_id).toBe("docker:registry.example.com:5000/team/glossary-demo:1.2.3-skypilot");
      expect(task.resources.ports).toBeUndefined();
      expect(task.envs.BENCHMAX_ENV).toBe(custom.serveSpec);
      expect(task.envs.DRAIN_GRACE_S).toBe(20);
      expect(task.run).toMatch(/trap 'stop 143' TERM/);
      expect(task.run).toMatch(/--drain-grace "\$DRAIN_GRACE_S" &/);
      expect(Boolean(task.resources.use_spot)).toBe(spot);
      // a misspelled field in a written task is refused by path, as for the repo's
      expect(validateSkypilotTask({ ...task, num_node: 2 })).not.toEqual([]);
    }
  });

  it("benchmax build's Dockerfile has deploy/docker/Dockerfile's stages, users, entrypoint and health check", () => {
    const stages = (text: string) => {
      const out = new Map<string, string[]>();
      let cur = "";
      for (const line of text.split("\n")) {
        const from = /^FROM \S+ AS (\S+)$/.exec(line);
        if (from) out.set((cur = from[1]!), []);
        else if (cur && line && !line.startsWith("#") && !line.startsWith(" ")) out.get(cur)!.push(line);
      }
      return out;
    };
    const repo = stages(readFileSync(join(deploy, "docker/Dockerfile"), "utf8"));
    const cli = stages(
      envDockerfile({
        tarballs: ["x.tgz"],
        registryPackages: [],
        serveSpec: "math",
        packageName: "@benchmax/env-math",
      }),
    );
    expect([...cli.keys()]).toEqual([...repo.keys()]);
    for (const stage of ["skypilot", "server"]) expect(cli.get(stage), stage).toEqual(repo.get(stage));
    for (const kind of ["EXPOSE", "HEALTHCHECK", "ENTRYPOINT"]) {
      expect(
        cli.get("base")!.find((l) => l.startsWith(kind)),
        kind,
      ).toBe(repo.get("base")!.find((l) => l.startsWith(kind)));
    }
    expect(cli.get("base")!.find((l) => l.startsWith("COPY --chmod=0555"))).toMatch(/benchmax-entrypoint$/);
  });

  it("deploy/k8s in the repo is the generator's output for math (one source)", () => {
    const mine = kubernetesObjects({
      env: "math",
      serveSpec: "math",
      base: "benchmax-env-server",
      ...(() => {
        const t = imageTags("benchmax/env-server-math", "0.1.0");
        return { image: t.server, skypilotImage: t.skypilot };
      })(),
    });
    for (const [file, obj] of Object.entries(mine)) {
      expect(parse(readFileSync(join(deploy, "k8s", file), "utf8")), `deploy/k8s/${file}`).toEqual(obj);
    }
  });

  it("deploy/skypilot/env-servers-spot.yaml is the generator's spot task for math (one source)", () => {
    const task = skypilotTask({
      env: "math",
      serveSpec: "math",
      base: "benchmax-env-server",
      image: "unused",
      skypilotImage: parse(
        readFileSync(join(deploy, "skypilot/env-servers-spot.yaml"), "utf8"),
      ).resources.image_id.slice("docker:".length),
      spot: true,
    });
    expect(parse(readFileSync(join(deploy, "skypilot/env-servers-spot.yaml"), "utf8"))).toEqual(task);
  });

  it("`benchmax deploy k8s DIR --out D` writes them; refuses to overwrite without --force, and a wrong platform", async () => {
    const out = join(mkdtempSync(join(tmpdir(), "bmx-deploy-")), "deploy-math");
    dirs.push(dirname(out));
    const err = vi.spyOn(console, "error").mockImplementation(() => {});
    const log = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      const run = (...args: string[]) => main(["node", "benchmax", ...args]);
      expect(await run("deploy", "k8s", join(repoRoot, "envs/math"), "--out", out)).toBe(0);
      expect(readdirSync(out)).toContain("deployment.yaml");
      const dep = parse(readFileSync(join(out, "deployment.yaml"), "utf8"));
      expect(await validateManifest(dep)).toEqual([]);
      expect(dep.spec.template.spec.containers[0].image).toBe("benchmax/env-server-math:0.1.0-server");
      expect(await run("deploy", "k8s", join(repoRoot, "envs/math"), "--out", out)).not.toBe(0);
      expect(await run("deploy", "k8s", join(repoRoot, "envs/math"), "--out", out, "--force")).toBe(0);
      expect(await run("deploy", "nomad", join(repoRoot, "envs/math"), "--out", out)).not.toBe(0);
      const said = err.mock.calls.map((c) => String(c[0])).join("");
      expect(said).toMatch(/already has files; pass --force/);
      expect(said).toMatch(/the platform is k8s or skypilot, got "nomad"/);
    } finally {
      err.mockRestore();
      log.mockRestore();
    }
  });
});
