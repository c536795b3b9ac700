import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { UsageError } from "@benchmax/core";
import { afterEach, describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { McpEnv } from "../mcp-env.js";
import { serveMcpHttp } from "../serve-mcp.js";
import { testServer } from "../test-utils/servers.js";
import { sumEnv } from "../test-utils/sum-env.js";
import { kubernetesEndpoints } from "./kubernetes.js";
import { localProcesses } from "./local.js";
import { parseEndpointLines, skypilot, skypilotLaunchCommand, skypilotTaskYaml } from "./skypilot.js";
import { urlList } from "./static.js";

const deploy = fileURLToPath(new URL("../../../../deploy/", import.meta.url));
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("provisioners", () => {
  it("localProcesses starts N HTTP servers on free ports; McpEnv leases them one per rollout", async () => {
    const prov = localProcesses({ command: process.execPath, args: [testServer("counter.mjs"), "--http"], count: 2 });
    cleanups.push(() => prov.close());
    const endpoints = await prov.provision();
    expect(endpoints).toHaveLength(2);
    expect(endpoints[0]!.type).toBe("http");
    const env = await McpEnv.create({
      name: "fleet",
      systemPrompt: "",
      servers: { c: { endpoints, reset: { tool: "reset" }, healthIntervalMs: 0 } },
      reward: async (ctx) => ({ count: Number((await ctx.server().callTool("get")).content) }),
    });
    cleanups.push(() => env.close());
    const t = { id: "t", prompt: "", groundTruth: null };
    await env.init("a", t);
    await env.init("b", t);
    await env.runTool("a", { name: "c__increment", arguments: { by: 2 } });
    expect(await env.computeReward("a", [], t)).toEqual({ count: 2 });
    expect(await env.computeReward("b", [], t)).toEqual({ count: 0 });
    const pa = (await env.runTool("a", { name: "c__pid", arguments: {} })).content;
    const pb = (await env.runTool("b", { name: "c__pid", arguments: {} })).content;
    expect(pa).not.toBe(pb);
  });

  it("urlList reads URLs from a list, a file or an environment variable, naming a bad line", async () => {
    expect(await urlList(["http://a:1/mcp", "http://b:2/mcp"]).provision()).toEqual([
      { type: "http", url: "http://a:1/mcp" },
      { type: "http", url: "http://b:2/mcp" },
    ]);
    const dir = mkdtempSync(join(tmpdir(), "urls-"));
    writeFileSync(join(dir, "urls.txt"), "# fleet\nhttp://a:1/mcp\n\nftp://nope\n");
    await expect(urlList({ file: join(dir, "urls.txt") }).provision()).rejects.toThrow(
      /urls\.txt:4: not an http\(s\) URL: ftp:\/\/nope/,
    );
    process.env.BENCHMAX_TEST_URLS = "http://a:1/mcp, http://c:3/mcp";
    expect(
      (await urlList({ envVar: "BENCHMAX_TEST_URLS" }).provision()).map((e) => e.type === "http" && e.url),
    ).toEqual(["http://a:1/mcp", "http://c:3/mcp"]);
    await expect(urlList({ envVar: "BENCHMAX_TEST_UNSET" }).provision()).rejects.toThrow(UsageError);
  });

  it("kubernetesEndpoints reads ready pods from the headless Service's DNS and waits for /health", async () => {
    const served = await serveMcpHttp(sumEnv().env, { port: 0 });
    cleanups.push(() => served.close());
    const port = Number(new URL(served.url).port);
    const asked: string[] = [];
    const prov = kubernetesEndpoints({
      service: "benchmax-env-servers",
      namespace: "rl",
      port,
      resolve4: async (host) => {
        asked.push(host);
        return ["127.0.0.1"];
      },
    });
    expect(await prov.provision()).toEqual([{ type: "http", url: `http://127.0.0.1:${port}/mcp` }]);
    expect(asked).toEqual(["benchmax-env-servers.rl.svc.cluster.local"]);
    const few = kubernetesEndpoints({
      service: "s",
      minEndpoints: 3,
      timeoutMs: 10,
      resolve4: async () => ["10.0.0.1"],
    });
    await expect(few.provision()).rejects.toThrow(/resolves to 1 pod\(s\), need 3/);
    expect(await kubernetesEndpoints({ urls: [served.url] }).provision()).toEqual([{ type: "http", url: served.url }]);
  });

  it("skypilot without the sky CLI prints the YAML and the exact command", async () => {
    const printed: string[] = [];
    const prov = skypilot({
      env: "excel",
      nodes: 3,
      serversPerNode: 2,
      skyBin: "/nonexistent/sky",
      log: (t) => printed.push(t),
    });
    await expect(prov.provision()).rejects.toThrow(/sky CLI not found/);
    const text = printed.join("\n");
    expect(text).toMatch(/BENCHMAX_ENV: excel/);
    expect(text).toMatch(/num_nodes: 3/);
    expect(text).toMatch(
      /\/nonexistent\/sky launch -c benchmax-env-servers \S+env-servers\.yaml --num-nodes 3 --env BENCHMAX_ENV=excel --env SERVERS_PER_NODE=2 --env BASE_PORT=8080 --secret BENCHMAX_TOKEN -y --detach-run/,
    );
  });

  it("skypilot with the sky CLI launches the task and collects the endpoints from the logs", async () => {
    const served = await serveMcpHttp(sumEnv().env, { port: 0 });
    cleanups.push(() => served.close());
    const dir = mkdtempSync(join(tmpdir(), "fake-sky-"));
    const calls = join(dir, "calls.log");
    const sky = join(dir, "sky");
    writeFileSync(
      sky,
      `#!/bin/sh\necho "$@" >> ${calls}\ncase "$1" in\n  logs) echo "(task, pid=1) BENCHMAX_ENDPOINT ${served.url}"; echo "BENCHMAX_ENDPOINT ${served.url}";;\nesac\nexit 0\n`,
    );
    chmodSync(sky, 0o755);
    await expect(
      skypilot({ env: "math", nodes: 1, serversPerNode: 1, skyBin: sky, token: "" }).provision(),
    ).rejects.toThrow(/fleet token is required/);
    const prov = skypilot({ env: "math", nodes: 1, serversPerNode: 1, skyBin: sky, downOnClose: true, token: "T0k" });
    expect(await prov.provision()).toEqual([
      { type: "http", url: served.url, headers: { authorization: "Bearer T0k" } },
    ]);
    await prov.close();
    // the token-less attempt stopped after `sky --version`
    const log = readFileSync(calls, "utf8").trim().split("\n").slice(1);
    expect(log[0]).toBe("--version");
    expect(log[1]).toMatch(
      /^launch -c benchmax-env-servers \S+ --num-nodes 1 --env BENCHMAX_ENV=math .* -y --detach-run$/,
    );
    expect(log[2]).toBe("logs benchmax-env-servers --no-follow");
    expect(log.at(-1)).toBe("down -y benchmax-env-servers");
    expect(
      parseEndpointLines("x BENCHMAX_ENDPOINT http://1.2.3.4:8080/mcp\nBENCHMAX_ENDPOINT http://1.2.3.4:8080/mcp"),
    ).toEqual(["http://1.2.3.4:8080/mcp"]);
    expect(skypilotLaunchCommand({ env: "math" }, "t.yaml").slice(0, 5)).toEqual([
      "sky",
      "launch",
      "-c",
      "benchmax-env-servers",
      "t.yaml",
    ]);
  });
});

describe("deploy manifests", () => {
  it("deploy/skypilot/env-servers.yaml is the generated task: token secret, image, rollout + MCP endpoints printed", () => {
    const text = readFileSync(join(deploy, "skypilot/env-servers.yaml"), "utf8");
    expect(text).toBe(skypilotTaskYaml({ env: "math" }));
    const task = parse(text);
    expect(task.num_nodes).toBe(2);
    expect(task.secrets).toEqual({ BENCHMAX_TOKEN: null });
    expect(task.resources.image_id).toBe("docker:benchmax/env-server-math:0.1.0-skypilot");
    expect(task.envs).toMatchObject({
      BENCHMAX_ENV: "math",
      SERVERS_PER_NODE: 4,
      BASE_PORT: 8080,
      ROLLOUT_PORT: 8000,
      DRAIN_GRACE_S: 20,
    });
    expect(task.run).toMatch(/if \[ -z "\$BENCHMAX_TOKEN" \]; then[\s\S]*exit 64/);
    expect(task.run).toMatch(
      /benchmax serve "\$BENCHMAX_ENV" --host 0\.0\.0\.0 --port "\$ROLLOUT_PORT" --drain-grace "\$DRAIN_GRACE_S" &/,
    );
    expect(task.run).toMatch(/trap 'stop 143' TERM/);
    expect(task.run).toMatch(/echo "BENCHMAX_ROLLOUT_ENDPOINT http:\/\/\$\{IP\}:\$\{ROLLOUT_PORT\}"/);
    expect(task.run).toMatch(
      /benchmax serve "\$BENCHMAX_ENV" --mcp --host 0\.0\.0\.0 --port "\$PORT" --drain-grace "\$DRAIN_GRACE_S" &/,
    );
    expect(task.run).toMatch(/echo "BENCHMAX_ENDPOINT http:\/\/\$\{IP\}:\$\{PORT\}\/mcp"/);
    expect(task.run.trim().endsWith("wait")).toBe(true);
    expect(parseEndpointLines("BENCHMAX_ROLLOUT_ENDPOINT http://1.2.3.4:8000", "BENCHMAX_ROLLOUT_ENDPOINT")).toEqual([
      "http://1.2.3.4:8000",
    ]);
    expect(parse(skypilotTaskYaml({ env: "crm", nodes: 5, serversPerNode: 8 }))).toMatchObject({
      num_nodes: 5,
      resources: { image_id: "docker:benchmax/env-server-crm:0.1.0-skypilot" },
      envs: { BENCHMAX_ENV: "crm", SERVERS_PER_NODE: 8 },
    });
  });

  it("deploy/k8s: the MCP container on 8080 behind the headless Service that kubernetesEndpoints() reads", () => {
    const docs = ["deployment.yaml", "service.yaml"].flatMap((f) =>
      parseAllDocuments(readFileSync(join(deploy, "k8s", f), "utf8")).map((d) => d.toJS()),
    );
    const dep = docs.find((d) => d.kind === "Deployment");
    const svc = docs.find((d) => d.kind === "Service");
    const mcp = dep.spec.template.spec.containers.find((c: { name: string }) => c.name === "mcp-server");
    expect(mcp.ports).toEqual([{ name: "mcp", containerPort: 8080 }]);
    expect(mcp.env).toContainEqual({ name: "BENCHMAX_MODE", value: "mcp" });
    expect(svc.metadata.name).toBe("benchmax-env-servers");
    expect(svc.spec.clusterIP).toBe("None");
    expect(svc.spec.ports).toContainEqual({ name: "mcp", port: 8080, targetPort: "mcp" });
  });
});
