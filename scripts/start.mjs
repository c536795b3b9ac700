#!/usr/bin/env node
// `npm start`: set up (install, build), evaluate every prebuilt env on its fixtures, then say what to do next.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runWithHeartbeat } from "./heartbeat.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const node = (args) => spawnSync(process.execPath, args, { stdio: "inherit", cwd: root }).status ?? 1;

const setup = node([join(root, "scripts/setup.mjs")]);
if (setup !== 0) process.exit(setup);
// loading every env takes a while before the first rollout line (46 s measured on a loaded 2-core machine): the
// heartbeat keeps a cold `npm start` from going silent for 10 s (issue 27)
console.log("benchmax: evaluating every prebuilt env on its bundled fixtures…");
const code = await runWithHeartbeat(
  process.execPath,
  [join(root, "scripts/pnpm.mjs"), "exec", "benchmax", "eval", "--all"],
  {
    label: "evaluating the prebuilt envs",
    cwd: root,
  },
);
console.log(`
Next steps:
  npx benchmax report runs/<env>-<time>                 an HTML report of a run dir above
  npx benchmax eval math --policy openai --model <m> --base-url http://localhost:8000/v1
                                                        your model (any OpenAI-compatible endpoint)
  npx benchmax new my-env                               scaffold your own env (envs/my-env)
  npm test                                              the fast tests (npm run test:full: the slow ones); npm run pack: tarballs
  README.md: a short tour; CONTRIBUTING.md: add an env to the catalog`);
process.exit(code);
