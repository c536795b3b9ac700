import { cp, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The folder holding the Python package `benchmax_skyrl` (shipped in this npm package's `python/`). */
export function shimDir(): string {
  // src/ and dist/ both sit beside python/
  return join(dirname(fileURLToPath(import.meta.url)), "..", "python");
}

/** The Python packages the shim needs: `benchmax_skyrl` and the client it is built on, `benchmax_client`. */
export const SHIM_PACKAGES = ["benchmax_skyrl", "benchmax_client"] as const;

/**
 * Copy the shim (`benchmax_skyrl/` and `benchmax_client/`) into `outDir`; put `outDir` on PYTHONPATH to use it.
 * Returns the path of `benchmax_skyrl`.
 */
export async function writeShim(outDir: string): Promise<string> {
  await mkdir(outDir, { recursive: true });
  for (const pkg of SHIM_PACKAGES) {
    await cp(join(shimDir(), pkg), join(outDir, pkg), {
      recursive: true,
      filter: (src) => !src.includes("__pycache__"),
    });
  }
  return join(outDir, "benchmax_skyrl");
}
