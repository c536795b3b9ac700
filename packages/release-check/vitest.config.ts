import { benchmaxVitest } from "../../shared/vitest.preset.ts";

// a local registry, a release, npm installs by name: slower than a unit test
export default benchmaxVitest({
  testTimeout: 240_000,
  // `npm run test:full` only (CONTRIBUTING.md, "Fast and full tests"): the release check proper
  slow: [
    // verdaccio on 127.0.0.1: changeset version + publish, npm installs by name, the READMEs' quickstarts, a scaffold's
    // npm install/test/eval/audit, publint and attw, benchmax search/add
    "src/registry-release.test.ts",
    "src/python-package.test.ts", // builds the Python wheel and sdist, installs them into a venv
  ],
});
