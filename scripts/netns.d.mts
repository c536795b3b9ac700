// Types of scripts/netns.mjs, for the TypeScript callers (packages/reliability).
export interface SimulatedHost {
  ns: string;
  hostIf: string;
  nsIf: string;
  hostAddr: string;
  addr: string;
}
export function sh(args: string[]): { ok: boolean; out: string };
export function netnsUnavailable(probe: string): string | undefined;
export function createHosts(hosts: SimulatedHost[]): void;
export function removeHosts(hosts: SimulatedHost[]): void;
