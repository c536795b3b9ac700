import type { Options } from "tsup";

/**
 * The build every package uses: ES modules for Node 20 with type declarations and source maps, from `entry`
 * (default `src/index.ts`). A package with more entries, or a second build, passes them or spreads this.
 */
export function benchmaxTsup(entry: Options["entry"] = ["src/index.ts"]): Options {
  return { entry, format: ["esm"], dts: true, sourcemap: true, clean: true, target: "node20" };
}
