import { benchmaxVitest } from "../../shared/vitest.preset.ts";

// packing, building and one npm install: slower than a unit test
export default benchmaxVitest({
  testTimeout: 240_000,
  // `npm run test:full` only (CONTRIBUTING.md, "Fast and full tests"): the release check proper
  slow: [
    "src/pack-install.test.ts", // npm pack of every package, one npm install, the READMEs' quickstarts
    "src/python-package.test.ts", // builds the Python wheel and sdist, installs them into a venv
  ],
});
