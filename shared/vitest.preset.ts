import { configDefaults, defineConfig } from "vitest/config";

/**
 * The vitest preset every package uses: workspace packages resolve to their TypeScript sources
 * through the "@benchmax/source" export condition, so tests never need a build of their dependencies.
 *
 * Two vitest projects split a package's tests by what they need (CONTRIBUTING.md, "Fast and full tests"):
 * - `fast`: every test file except those listed in `slow`: unit and in-process suites (an in-process
 *   server on 127.0.0.1 is fine). The package's `test` script (`vitest run --project fast`), so `npm test`.
 * - `slow`: only the files listed in `slow`: suites that start real servers or the CLI as processes, jails,
 *   LibreOffice, Chromium, network namespaces, Python trainer loops, npm pack/install and the release check.
 *   The package's `test:full` script (`vitest run --project slow`), so `npm run test:full`.
 * A plain `npx vitest run` in a package runs both. A new test file is fast unless listed in `slow`.
 */
export function benchmaxVitest(overrides: { testTimeout?: number; include?: string[]; slow?: string[] } = {}) {
  const include = overrides.include ?? ["src/**/*.test.ts", "test/**/*.test.ts"];
  const slow = overrides.slow ?? [];
  return defineConfig({
    resolve: { conditions: ["@benchmax/source"] },
    ssr: { resolve: { conditions: ["@benchmax/source"] } },
    test: {
      // no root `include`: a project that `extends: true` would concatenate it with its own
      testTimeout: overrides.testTimeout ?? 30_000,
      hookTimeout: 60_000,
      pool: "forks",
      reporters: ["default"],
      projects: [
        { extends: true, test: { name: "fast", include, exclude: [...configDefaults.exclude, ...slow] } },
        // a package with no slow files matches nothing here (its `test:full` passes with --passWithNoTests)
        { extends: true, test: { name: "slow", include: slow.length > 0 ? slow : ["no-slow-test-files"] } },
      ],
    },
  });
}
