import { benchmaxVitest } from "../../shared/vitest.preset.ts";

export default benchmaxVitest({
  // `npm run test:full` only (CONTRIBUTING.md, "Fast and full tests"): pages rendered in Chromium
  slow: ["src/report-browser.test.ts", "src/rl-panels-browser.test.ts"],
});
