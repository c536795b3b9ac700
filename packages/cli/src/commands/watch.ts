import type { Command } from "commander";

interface WatchFlags {
  port?: string;
  token?: string;
  serverToken?: string;
}

/**
 * `benchmax watch RUN_DIR | URL`: a live dashboard of a run dir that is still growing (`eval --out DIR` in progress,
 * or `serve --record DIR` during training), or of a recording server itself (`serve --record DIR --token T` at URL,
 * followed through its read-only rollout feed), on 127.0.0.1 behind a token. Runs until interrupted.
 *
 * `benchmax watch A B C …` (several recording servers' URLs or run dirs): one dashboard of them as one run, with a
 * per-node panel (rollouts and outcomes, live rollouts, draining, reachable, instance id and restarts).
 */
export function register(program: Command): void {
  program
    .command("watch <sources...>")
    .description(
      "live dashboard of a growing run dir (eval --out, serve --record) or of a recording server's URL: reward curve by trainer step, pass rate, error rates, zero-variance groups, response length, latest rollouts; several URLs or dirs: one run with a per-node panel (rollouts, errors by outcome, live rollouts, draining, down, restarted); 127.0.0.1 with a token",
    )
    .option("--port <port>", "port (default: any free port)")
    .option("--token <token>", "the token the page needs (default: a random one, printed)")
    .option(
      "--server-token <token>",
      "watching URLs: the recording servers' token (or BENCHMAX_TOKEN, or http://benchmax:TOKEN@host in a URL, which wins for that URL)",
    )
    .action(async (sources: string[], flags: WatchFlags) => {
      const { feedUrl, isServerUrl, startFleetWatch, startWatch } = await import("@benchmax/report");
      const serverToken = (flags.serverToken ?? process.env.BENCHMAX_TOKEN)?.trim();
      const options = {
        ...(flags.port !== undefined ? { port: Number(flags.port) } : {}),
        ...(flags.token ? { token: flags.token } : {}),
        ...(serverToken ? { serverToken } : {}),
      };
      let w: { url: string; close(): Promise<void> };
      if (sources.length === 1) {
        // one source: the single-run dashboard, as before
        const source = sources[0]!;
        w = await startWatch(source, options);
        const shown = isServerUrl(source) ? feedUrl(source).origin : source;
        process.stdout.write(`benchmax: watching ${shown} at ${w.url}\n`);
      } else {
        w = await startFleetWatch(sources, options);
        const shown = sources.map((s) => (isServerUrl(s) ? feedUrl(s).origin : s)).join(", ");
        process.stdout.write(`benchmax: watching ${sources.length} sources (${shown}) at ${w.url}\n`);
      }
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          void w.close().finally(resolve);
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
    });
}
