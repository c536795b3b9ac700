import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { UsageError } from "@benchmax/core";
import { parseDocument } from "yaml";
import type { HttpEndpoint } from "../endpoint.js";
import { type Provisioner, waitForHealth } from "./provisioner.js";

/** The line each node prints per server; the provisioner collects them from `sky logs`. */
export const ENDPOINT_MARKER = "BENCHMAX_ENDPOINT";

export interface SkyPilotOptions {
  /** The benchmax env to serve on every server (e.g. `math`). */
  env: string;
  /** M nodes. Default 2. */
  nodes?: number;
  /** N servers per node. Default 4. */
  serversPerNode?: number;
  /** First port; server i listens on basePort + i. Default 8080. */
  basePort?: number;
  /** Cluster name. Default `benchmax-env-servers`. */
  cluster?: string;
  /** Version of the env-server image (deploy/docker/Dockerfile, `benchmax build`): its tag is `<version>-skypilot`. Default `0.1.0`. */
  version?: string;
  /** The fleet token every server requires. Default `$BENCHMAX_TOKEN`; launching without one is refused. */
  token?: string;
  /** Resources per node. Default `{cpus: "4+"}`. */
  resources?: Record<string, unknown>;
  /** A task YAML to use instead of the generated one (e.g. deploy/skypilot/env-servers.yaml). */
  yamlPath?: string;
  /** The sky executable. Default `sky`. */
  skyBin?: string;
  /** Give up waiting for endpoints after this long (ms). Default 20 min. */
  timeoutMs?: number;
  /** Also wait for `GET /health` on every endpoint. Default true. */
  waitHealthy?: boolean;
  /** Tear the cluster down on `close()`. Default false (clusters are expensive to recreate). */
  downOnClose?: boolean;
  /** Where the YAML and command are printed when sky is missing. Default stderr. */
  log?(text: string): void;
}

/** Log marker of each node's rollout-API server (RoutedEnv, the SkyRL shim). */
export const ROLLOUT_ENDPOINT_MARKER = "BENCHMAX_ROLLOUT_ENDPOINT";

/**
 * The run script (bash) of every SkyPilot env-server task (this provisioner's and `benchmax deploy skypilot`'s): token
 * check, a SIGTERM passed on to every server (each drains for DRAIN_GRACE_S seconds at most), endpoint lines for the
 * trainer.
 */
export const SKYPILOT_RUN = `if [ -z "$BENCHMAX_TOKEN" ]; then
  echo "BENCHMAX_TOKEN is required: sky launch ... --secret BENCHMAX_TOKEN" >&2
  exit 64
fi
# a SIGTERM (or SIGINT) to this script goes on to every server as SIGTERM: each drains (new rollouts refused, live
# ones served until released, DRAIN_GRACE_S seconds at most); then it exits
PIDS=""
stop() { kill -TERM $PIDS 2>/dev/null; wait; exit "$1"; }
trap 'stop 143' TERM
trap 'stop 130' INT
IP=$(echo "$SKYPILOT_NODE_IPS" | sed -n "$((SKYPILOT_NODE_RANK + 1))p")
benchmax serve "$BENCHMAX_ENV" --host 0.0.0.0 --port "$ROLLOUT_PORT" --drain-grace "$DRAIN_GRACE_S" &
PIDS="$!"
echo "${ROLLOUT_ENDPOINT_MARKER} http://\${IP}:\${ROLLOUT_PORT}"
for i in $(seq 0 $((SERVERS_PER_NODE - 1))); do
  PORT=$((BASE_PORT + i))
  benchmax serve "$BENCHMAX_ENV" --mcp --host 0.0.0.0 --port "$PORT" --drain-grace "$DRAIN_GRACE_S" &
  PIDS="$PIDS $!"
  echo "${ENDPOINT_MARKER} http://\${IP}:\${PORT}/mcp"
done
wait
`;

/**
 * The SkyPilot task YAML: on each of M nodes (the image built by deploy/docker/Dockerfile), one `benchmax serve <env>`
 * rollout-API server and N `benchmax serve <env> --mcp` servers, all requiring the fleet token, which comes from the
 * `BENCHMAX_TOKEN` secret (`sky launch … --secret BENCHMAX_TOKEN`); without it the task exits before serving.
 */
export function skypilotTaskYaml(
  o: Pick<SkyPilotOptions, "env" | "nodes" | "serversPerNode" | "basePort" | "version" | "resources"> = { env: "math" },
): string {
  const doc =
    parseDocument(`# benchmax env-server fleet on SkyPilot, from the image deploy/docker/Dockerfile builds. On each of num_nodes nodes:
# one rollout-API server (RoutedEnv, the SkyRL shim) printing "${ROLLOUT_ENDPOINT_MARKER} http://<node-ip>:<port>", and
# SERVERS_PER_NODE MCP servers printing "${ENDPOINT_MARKER} http://<node-ip>:<port>/mcp"; trainers collect both with
# \`sky logs\` (@benchmax/mcp's skypilot() provisioner). Every server requires the token; no port is opened to the
# internet (no \`ports:\`): the trainer must run in the same cluster or network. Launch by hand:
#   export BENCHMAX_TOKEN=$(openssl rand -hex 32) && (umask 077 && printf %s "$BENCHMAX_TOKEN" > benchmax-token.txt) &&
#     sky launch -c benchmax-env-servers deploy/skypilot/env-servers.yaml --secret BENCHMAX_TOKEN -y -d   # token kept in benchmax-token.txt
# \`sky down\` or \`sky cancel\` sends the run script a SIGTERM: it passes it on to every server, and each drains (new
# rollouts refused, live ones served until released, DRAIN_GRACE_S seconds at most) before it exits.
name: benchmax-env-servers
num_nodes: 2
resources:
  cpus: 4+
  image_id: docker:benchmax/env-server-math:0.1.0
envs:
  BENCHMAX_ENV: math
  SERVERS_PER_NODE: 4
  BASE_PORT: 8080
  ROLLOUT_PORT: 8000
  DRAIN_GRACE_S: 20
secrets:
  BENCHMAX_TOKEN: null
`);
  doc.set("run", SKYPILOT_RUN);
  if (o.nodes !== undefined) doc.set("num_nodes", o.nodes);
  // the Dockerfile's skypilot stage (root, for SkyPilot's SSH), tagged apart from the server stage
  const image = `docker:benchmax/env-server-${o.env}:${o.version ?? "0.1.0"}-skypilot`;
  if (o.resources) doc.set("resources", { ...o.resources });
  doc.setIn(["resources", "image_id"], image);
  doc.setIn(["envs", "BENCHMAX_ENV"], o.env);
  if (o.serversPerNode !== undefined) doc.setIn(["envs", "SERVERS_PER_NODE"], o.serversPerNode);
  if (o.basePort !== undefined) doc.setIn(["envs", "BASE_PORT"], o.basePort);
  return doc.toString({ lineWidth: 0 });
}

/** The exact `sky launch` command line for these options. */
export function skypilotLaunchCommand(o: SkyPilotOptions, yamlPath: string): string[] {
  const args = [o.skyBin ?? "sky", "launch", "-c", o.cluster ?? "benchmax-env-servers", yamlPath];
  args.push("--num-nodes", String(o.nodes ?? 2));
  args.push("--env", `BENCHMAX_ENV=${o.env}`);
  args.push("--env", `SERVERS_PER_NODE=${o.serversPerNode ?? 4}`);
  args.push("--env", `BASE_PORT=${o.basePort ?? 8080}`);
  // the value is read from the environment of the sky process (SkyPilot's --secret KEY form), never put on argv
  args.push("--secret", "BENCHMAX_TOKEN");
  args.push("-y", "--detach-run");
  return args;
}

/** Endpoint URLs in `sky logs` output (deduplicated, in order). */
export function parseEndpointLines(text: string, marker: string = ENDPOINT_MARKER): string[] {
  const out: string[] = [];
  const re = new RegExp(`${marker}\\s+(https?://\\S+)`, "g");
  for (const m of text.matchAll(re)) if (!out.includes(m[1]!)) out.push(m[1]!);
  return out;
}

function run(bin: string, args: string[], env?: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: env ? { ...process.env, ...env } : undefined,
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.once("error", reject);
    child.once("close", (code) => resolve({ code: code ?? 1, out }));
  });
}

const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`);

/**
 * SkyPilot fleet of env servers: with the `sky` CLI installed, launches the task (M nodes × N servers) and reads
 * the endpoints from `sky logs`; without it, prints the YAML and the exact command and throws a UsageError.
 */
export function skypilot(options: SkyPilotOptions): Provisioner {
  const sky = options.skyBin ?? "sky";
  const cluster = options.cluster ?? "benchmax-env-servers";
  let launched = false;
  return {
    name: "skypilot",
    async provision() {
      const yamlPath =
        options.yamlPath ??
        (() => {
          const p = join(mkdtempSync(join(tmpdir(), "benchmax-sky-")), "env-servers.yaml");
          writeFileSync(p, skypilotTaskYaml(options));
          return p;
        })();
      const cmd = skypilotLaunchCommand(options, yamlPath);
      const installed = spawnSync(sky, ["--version"], { stdio: "ignore" }).status === 0;
      const log = options.log ?? ((t: string) => process.stderr.write(`${t}\n`));
      if (!installed) {
        log(`# ${yamlPath}\n${options.yamlPath ? "" : skypilotTaskYaml(options)}`);
        log(
          `# the sky CLI is not installed (pip install "skypilot[<cloud>]"); launch the fleet with:\n${cmd.map(quote).join(" ")}`,
        );
        throw new UsageError(`sky CLI not found: run the printed command, then pass the endpoints with urlList()`);
      }
      const token = options.token ?? process.env.BENCHMAX_TOKEN;
      if (!token) throw new UsageError("skypilot(): a fleet token is required (token option or BENCHMAX_TOKEN)");
      const launch = await run(sky, cmd.slice(1), { BENCHMAX_TOKEN: token });
      if (launch.code !== 0)
        throw new UsageError(`sky launch failed (exit ${launch.code}):\n${launch.out.slice(-2000)}`);
      launched = true;
      const want = (options.nodes ?? 2) * (options.serversPerNode ?? 4);
      const deadline = Date.now() + (options.timeoutMs ?? 20 * 60_000);
      let urls: string[] = [];
      for (;;) {
        const logs = await run(sky, ["logs", cluster, "--no-follow"]);
        urls = parseEndpointLines(logs.out);
        if (urls.length >= want) break;
        if (Date.now() > deadline) {
          throw new UsageError(`SkyPilot cluster ${cluster} reported ${urls.length} of ${want} endpoints in time`);
        }
        await new Promise((r) => setTimeout(r, 2_000));
      }
      if (options.waitHealthy !== false)
        await waitForHealth(urls, { timeoutMs: Math.max(1_000, deadline - Date.now()) });
      return urls.map((url): HttpEndpoint => ({ type: "http", url, headers: { authorization: `Bearer ${token}` } }));
    },
    async close() {
      if (launched && options.downOnClose) {
        launched = false;
        await run(sky, ["down", "-y", cluster]);
      }
    },
  };
}
