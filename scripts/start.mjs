#!/usr/bin/env node
// `npm start`: set up (install, build), evaluate every prebuilt env on its fixtures, then say what to do next.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const node = (args) => spawnSync(process.execPath, args, { stdio: "inherit", cwd: root }).status ?? 1;

const setup = node([join(root, "scripts/setup.mjs")]);
if (setup !== 0) process.exit(setup);
const code = node([join(root, "scripts/pnpm.mjs"), "exec", "benchmax", "eval", "--all"]);
console.log(`
Next steps:
  npx benchmax report runs/<env>-<time>                 an HTML report of a run dir above
  npx benchmax eval math --policy openai --model <m> --base-url http://localhost:8000/v1
                                                        your model (any OpenAI-compatible endpoint)
  npx benchmax new my-env                               scaffold your own env (envs/my-env)
  npm test                                              every test; npm run pack: tarballs to use outside this repo
  README.md: a short tour; CONTRIBUTING.md: add an env to the catalog`);
process.exit(code);
