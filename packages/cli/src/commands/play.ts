import type { Env, Task } from "@benchmax/core";
import type { Command } from "commander";
import { createEnv, parseKeyValues } from "../env-loader.js";

interface PlayFlags {
  port?: string;
  token?: string;
  dataset?: string;
  split?: string;
  envOpt: string[];
}

const collect = (v: string, prev: string[]) => [...prev, v];

/** `benchmax play ENV`: step an episode by hand in the browser (127.0.0.1, token); the gold shows only at the end. */
export function register(program: Command): void {
  program
    .command("play <env>")
    .description(
      "playground: pick a task, type the assistant's turns (text or a tool call through a form), see tool results and the reward at the end; 127.0.0.1 with a token",
    )
    .option("--port <port>", "port (default: any free port)")
    .option("--token <token>", "the token the page needs (default: a random one, printed)")
    .option("--dataset <path>", "tasks to pick from (default: the env's fixtures)")
    .option("--split <name>", "dataset split where the env has several")
    .option("--env-opt <key=value>", "env option (repeatable)", collect, [])
    .action(async (envSpec: string, flags: PlayFlags) => {
      const { startPlay } = await import("@benchmax/report");
      const env: Env = await createEnv(envSpec, parseKeyValues(flags.envOpt));
      let tasks: Task[] | undefined;
      if (flags.dataset && env.loadTasks) tasks = await env.loadTasks(flags.dataset, { split: flags.split });
      const p = await startPlay(env, {
        ...(tasks ? { tasks } : {}),
        ...(flags.port !== undefined ? { port: Number(flags.port) } : {}),
        ...(flags.token ? { token: flags.token } : {}),
      });
      process.stdout.write(`benchmax: playing ${env.name} at ${p.url}\n`);
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.off("SIGINT", stop);
          process.off("SIGTERM", stop);
          void p
            .close()
            .then(() => env.close())
            .finally(resolve);
        };
        process.on("SIGINT", stop);
        process.on("SIGTERM", stop);
      });
    });
}
