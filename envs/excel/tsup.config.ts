import { defineConfig } from "tsup";
import { benchmaxTsup } from "../../shared/tsup.preset.ts";

export default defineConfig([
  {
    // compare-worker: the scorer's worker threads (src/compare-pool.ts) load it beside index.js
    ...benchmaxTsup({ index: "src/index.ts", "compare-worker": "src/compare-worker.ts" }),
  },
  {
    // run_code's sandbox reads exceljs from this one file, never from a package folder
    entry: { "sandbox/exceljs": "src/sandbox/exceljs-entry.cjs" },
    format: ["cjs"],
    outExtension: () => ({ js: ".cjs" }),
    platform: "node",
    target: "node20",
    noExternal: [/.*/],
    sourcemap: false,
    clean: false,
  },
]);
