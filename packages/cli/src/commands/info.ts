import { passThresholdOf, rewardWeightsOf } from "@benchmax/core";
import type { Command } from "commander";
import { loadEnvModule, parseKeyValues } from "../env-loader.js";

const collect = (v: string, prev: string[]) => [...prev, v];

export function register(program: Command): void {
  program
    .command("info <env>")
    .description("show an env's tools, reward components and fixtures")
    .option("--env-opt <key=value>", "env option (repeatable)", collect, [])
    .option("--json", "print JSON")
    .action(async (spec: string, flags: { envOpt: string[]; json?: boolean }) => {
      const mod = await loadEnvModule(spec);
      const env = await mod.createEnv(parseKeyValues(flags.envOpt));
      try {
        const caps = env.capabilities;
        const tasks = caps?.tasks?.loadTasks ? await caps.tasks.loadTasks() : [];
        const info = {
          name: env.name,
          description: caps?.metadata?.description ?? mod.description,
          tools: env.listTools().map((t) => ({ name: t.name, description: t.description })),
          rewardWeights: rewardWeightsOf(env),
          passThreshold: passThresholdOf(env),
          fixtures: tasks.length,
          referencePolicy: !!caps?.reference,
        };
        if (flags.json) {
          process.stdout.write(`${JSON.stringify({ ...info, tools: env.listTools() }, null, 2)}\n`);
          return;
        }
        const lines = [
          `${info.name} — ${info.description}`,
          `tools (${info.tools.length}):`,
          ...info.tools.map((t) => `  ${t.name}: ${t.description.split("\n")[0]}`),
          `reward weights: ${JSON.stringify(info.rewardWeights)} (pass at reward >= ${info.passThreshold})`,
          `fixture tasks: ${info.fixtures}`,
          `reference policy: ${info.referencePolicy ? "yes" : "no"}`,
        ];
        process.stdout.write(`${lines.join("\n")}\n`);
      } finally {
        await env.close();
      }
    });
}
