import { defineConfig } from "tsup";
import { benchmaxTsup } from "../../shared/tsup.preset.ts";

export default defineConfig(benchmaxTsup(["src/index.ts", "src/testing.ts"]));
