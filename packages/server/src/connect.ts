import { type Env, errorMessage, InfraError, UsageError } from "@benchmax/core";
import { EnvClient } from "./http-client.js";
import { RemoteEnv, type RemoteMetadata } from "./remote-env.js";
import { RoutedEnv, type RoutedEnvOptions } from "./routed-env.js";

export interface ConnectOptions extends RoutedEnvOptions {
  /** Bearer token of the server(s). */
  token?: string;
  /** Per-request deadline (ms). Default 120 s. See EnvClientOptions. */
  timeoutMs?: number;
  /** A request with no answer after this long probes the server's /health (a hang check). Default 10 s; 0: off. */
  probeAfterMs?: number;
  /** How long a /health probe may take before the server counts as down (ms). Default 5 s. */
  probeTimeoutMs?: number;
}

/**
 * An Env over `benchmax serve` endpoints: one URL gives a RemoteEnv, several a RoutedEnv. Reads `/metadata`
 * (name, tools, reward weights); endpoints that do not answer start out dead and are probed until they do. Either
 * keeps each rollout's log and migrates a rollout its server lost (see RoutedEnv).
 */
export async function connectRemoteEnv(endpoints: string[], options: ConnectOptions = {}): Promise<Env> {
  const urls = endpoints.map((u) => u.trim()).filter(Boolean);
  if (urls.length === 0) throw new UsageError("no endpoint given (expected URL[,URL…])");
  for (const u of urls) {
    if (!/^https?:\/\//.test(u)) throw new UsageError(`endpoint "${u}" must be an http:// or https:// URL`);
  }
  const clientOpts = {
    token: options.token,
    timeoutMs: options.timeoutMs,
    probeAfterMs: options.probeAfterMs,
    probeTimeoutMs: options.probeTimeoutMs,
  };
  if (urls.length === 1) return RemoteEnv.connect(urls[0]!, { ...clientOpts, onMigration: options.onMigration });
  const metas = await Promise.allSettled(urls.map((u) => RemoteEnv.fetchMetadata(new EnvClient(u, clientOpts))));
  const ok = metas.find((m): m is PromiseFulfilledResult<RemoteMetadata> => m.status === "fulfilled");
  if (!ok) {
    const why = metas.map((m, i) => `${urls[i]}: ${errorMessage((m as PromiseRejectedResult).reason)}`).join("; ");
    throw new InfraError(`no endpoint answered /metadata: ${why}`);
  }
  const envs = urls.map((u, i) => {
    const m = metas[i]!;
    return new RemoteEnv(u, m.status === "fulfilled" ? m.value : ok.value, clientOpts);
  });
  const routed = new RoutedEnv(envs, options);
  metas.forEach((m, i) => {
    if (m.status === "rejected") routed.endpoints[i]!.alive = false;
  });
  return routed;
}
