import { relative } from "node:path";
import type { Command } from "commander";
import { scaffoldEnv } from "../scaffold/scaffold.js";

/** `benchmax new <name> [--dir DIR]` — scaffold a new env package. */
export function register(program: Command): void {
  program
    .command("new <name>")
    .description("scaffold a new env package (tools, dataset, reward, reference policy, fixture, test, SkyRL script)")
    .option("--dir <dir>", "target folder (default envs/<name> inside the benchmax repo, else ./<name>)")
    .option(
      "--package <name>",
      "npm package name (default benchmax-env-<name>; @benchmax/env-<name> inside the benchmax repo)",
    )
    .action((name: string, flags: { dir?: string; package?: string }) => {
      const res = scaffoldEnv({ name, dir: flags.dir, packageName: flags.package });
      const shown = relative(process.cwd(), res.dir) || ".";
      process.stdout.write(`created ${res.packageName} in ${shown}\n`);
      for (const f of res.files) process.stdout.write(`  ${f}\n`);
      const links = Object.entries(res.linked);
      if (links.length) {
        process.stdout.write(
          `${links.map(([n, v]) => `${n} → ${v}`).join(", ")}: the copies installed here (replace with a ^version range once they are on the npm registry)\n`,
        );
      }
      process.stdout.write(
        res.workspace
          ? `next: node scripts/pnpm.mjs install && cd ${shown} && npx vitest run && npx benchmax eval .\n`
          : `next: cd ${shown} && npm install && npm test && npx benchmax eval .\n`,
      );
    });
}
