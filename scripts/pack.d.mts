// Types of scripts/pack.mjs, for the TypeScript callers (packages/release-check).
export interface PublicPackage {
  name: string;
  version: string;
  /** Relative to the repo root: packages/<x> or envs/<x>. */
  dir: string;
}
export const root: string;
export function publicPackages(): PublicPackage[];
export function needsBuild(dir: string): boolean;
export function buildStale(options?: { skip?: string[]; log?: (line: string) => void }): string[];
export function packAll(options?: {
  outDir?: string;
  build?: boolean;
  skip?: string[];
  log?: (line: string) => void;
}): Array<PublicPackage & { tarball: string }>;
