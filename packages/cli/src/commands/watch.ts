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
 */
export function register(program: Command): void {
  program
    .command("watch <runDirOrUrl>")
    .description(
      "live dashboard of a growing run dir (eval --out, serve --record) or of a recording server's URL: reward curve by trainer step, pass rate, error rates, zero-variance groups, response length, latest rollouts; 127.0.0.1 with a token",
    )
    .option("--port <port>", "port (default: any free port)")
    .option("--token <token>", "the token the page needs (default: a random one, printed)")
    .option(
      "--server-token <token>",
      "watching a URL: the recording server's token (or BENCHMAX_TOKEN, or http://benchmax:TOKEN@host in the URL)",
    )
    .action(async (runDir: string, flags: WatchFlags) => {
      const { feedUrl, isServerUrl, startWatch } = await import("@benchmax/report");
      const serverToken = (flags.serverToken ?? process.env.BENCHMAX_TOKEN)?.trim();
      const w = await startWatch(runDir, {
        ...(flags.port !== undefined ? { port: Number(flags.port) } : {}),
        ...(flags.token ? { token: flags.token } : {}),
        ...(serverToken ? { serverToken } : {}),
      });
      const shown = isServerUrl(runDir) ? feedUrl(runDir).origin : runDir;
      process.stdout.write(`benchmax: watching ${shown} at ${w.url}\n`);
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
