// Types of scripts/heartbeat.mjs, for the TypeScript tests (packages/release-check).
export class Heartbeat {
  constructor(options: { label: string; intervalMs?: number; start?: number });
  output(now: number): void;
  due(now: number): string | undefined;
}
export function formatElapsed(ms: number): string;
export function runWithHeartbeat(
  cmd: string,
  args: string[],
  options?: { label?: string; cwd?: string; env?: NodeJS.ProcessEnv; intervalMs?: number; tickMs?: number },
): Promise<number>;
