import { type Env, openaiPolicy, type Task, type ToolFormat, UsageError } from "@benchmax/core";
import type { Command } from "commander";
import { createEnv, parseKeyValues } from "../env-loader.js";

interface PlayFlags {
  port?: string;
  token?: string;
  dataset?: string;
  split?: string;
  envOpt: string[];
  endpoint?: string;
  model?: string;
  apiKey?: string;
  toolFormat?: string;
  inlineTasks: boolean;
}

const collect = (v: string, prev: string[]) => [...prev, v];

/**
 * `benchmax play ENV`: step an episode in the browser (127.0.0.1, token) by hand, or let a model behind an
 * OpenAI-compatible endpoint take the assistant's turns (`--endpoint URL --model M`); pick a dataset task or write
 * one. The gold shows only at the end.
 */
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
    .option("--endpoint <url>", "an OpenAI-compatible endpoint (…/v1) whose model may take the assistant's turns")
    .option("--model <name>", "the model at --endpoint")
    .option("--api-key <key>", "the endpoint's key (default OPENAI_API_KEY; none needed for a local server)")
    .option(
      "--tool-format <format>",
      "hermes (<tool_call> text) | openai (native tool_calls); default: hermes with --endpoint, else openai",
    )
    .option("--no-inline-tasks", "offer dataset tasks only (no task written in the page)")
    .action(async (envSpec: string, flags: PlayFlags) => {
      const { startPlay } = await import("@benchmax/report");
      const env: Env = await createEnv(envSpec, parseKeyValues(flags.envOpt));
      let tasks: Task[] | undefined;
      const own = env.capabilities?.tasks;
      if (flags.dataset && own?.loadTasks) tasks = await own.loadTasks(flags.dataset, { split: flags.split });
      if (flags.endpoint && !flags.model) throw new UsageError("--endpoint needs --model");
      if (flags.model && !flags.endpoint) throw new UsageError("--model needs --endpoint (the OpenAI-compatible URL)");
      const toolFormat = (flags.toolFormat ?? (flags.endpoint ? "hermes" : "openai")) as ToolFormat;
      if (!["hermes", "openai"].includes(toolFormat)) {
        throw new UsageError(`--tool-format must be hermes or openai, got "${flags.toolFormat}"`);
      }
      const policy =
        flags.endpoint && flags.model
          ? openaiPolicy({
              model: flags.model,
              baseURL: flags.endpoint,
              ...(flags.apiKey ? { apiKey: flags.apiKey } : {}),
            })
          : undefined;
      const p = await startPlay(env, {
        ...(tasks ? { tasks } : {}),
        ...(policy ? { policy } : {}),
        toolFormat,
        inlineTasks: flags.inlineTasks,
        ...(flags.port !== undefined ? { port: Number(flags.port) } : {}),
        ...(flags.token ? { token: flags.token } : {}),
      });
      process.stdout.write(
        `benchmax: playing ${env.name} at ${p.url}${policy ? ` (model ${flags.model} at ${flags.endpoint})` : ""}\n`,
      );
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
