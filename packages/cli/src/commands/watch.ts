import type { Command } from "commander";

interface WatchFlags {
  port?: string;
  token?: string;
}

/**
 * `benchmax watch RUN_DIR`: a live dashboard of a run dir that is still growing (`eval --out DIR` in progress, or
 * `serve --record DIR` during training), on 127.0.0.1 behind a token. Runs until interrupted.
 */
export function register(program: Command): void {
  program
    .command("watch <runDir>")
    .description(
      "live dashboard of a growing run dir (eval --out, serve --record): reward curve by trainer step, pass rate, error rates, zero-variance groups, response length, latest rollouts; 127.0.0.1 with a token",
    )
    .option("--port <port>", "port (default: any free port)")
    .option("--token <token>", "the token the page needs (default: a random one, printed)")
    .action(async (runDir: string, flags: WatchFlags) => {
      const { startWatch } = await import("@benchmax/report");
      const w = await startWatch(runDir, {
        ...(flags.port !== undefined ? { port: Number(flags.port) } : {}),
        ...(flags.token ? { token: flags.token } : {}),
      });
      process.stdout.write(`benchmax: watching ${runDir} at ${w.url}\n`);
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
