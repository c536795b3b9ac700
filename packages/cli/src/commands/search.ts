import type { Command } from "commander";
import { ENV_KEYWORD, envSpecOf, npmRegistry, searchEnvs } from "../registry.js";

/** `benchmax search [TEXT...]` — the env packages on the npm registry the user's npm uses (keyword benchmax-env). */
export function register(program: Command): void {
  program
    .command("search [text...]")
    .description(`list the env packages a registry has (keyword ${ENV_KEYWORD}), through its search API`)
    .option("--registry <url>", "registry to search (default: npm's registry setting: npm_config_registry, .npmrc)")
    .option("--json", "print JSON")
    .action(async (text: string[], flags: { registry?: string; json?: boolean }) => {
      const registry = flags.registry ?? npmRegistry();
      const res = await searchEnvs({ registry, text: text.join(" ") });
      if (flags.json) {
        process.stdout.write(`${JSON.stringify(res, null, 2)}\n`);
        return;
      }
      const what = text.length ? ` matching "${text.join(" ")}"` : "";
      if (res.envs.length === 0) {
        process.stdout.write(`no env packages${what} on ${res.registry} (packages with the keyword ${ENV_KEYWORD})\n`);
        return;
      }
      const w = Math.max(...res.envs.map((e) => e.name.length));
      const v = Math.max(...res.envs.map((e) => e.version.length));
      for (const e of res.envs) process.stdout.write(`${e.name.padEnd(w)}  ${e.version.padEnd(v)}  ${e.description}\n`);
      process.stdout.write(
        `${res.envs.length} env package${res.envs.length === 1 ? "" : "s"}${what} on ${res.registry}; add one: npx benchmax add ${envSpecOf(res.envs[0]!.name)}\n`,
      );
    });
}
