// Types of scripts/max-output-gap.mjs, for the TypeScript tests (packages/release-check).
export interface GapReport {
  maxGapMs: number;
  before: string;
  after: string;
  totalMs: number;
  lines: number;
  /** the gaps over the limit, longest first */
  over: Array<{ ms: number; before: string; after: string }>;
}
export class GapMeter {
  constructor(start: number, limitMs?: number);
  line(now: number, text: string): void;
  finish(now: number): GapReport;
}
export class LineSplitter {
  constructor(onLine: (text: string) => void);
  push(chunk: string): void;
  end(): void;
}
export function parseArgs(argv: string[]): { maxS: number; command: string[] };
export function measure(
  command: string[],
  options?: {
    maxS?: number;
    now?: () => number;
    out?: { write(chunk: string): unknown };
    err?: { write(chunk: string): unknown };
  },
): Promise<GapReport & { code: number; report: string }>;
