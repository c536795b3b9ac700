import { InfraError, type ToolCallRequest, type ToolResult } from "@benchmax/core";

/**
 * A rollout as the client sees it: how it was created, its fork lineage, and every tool call with its result, in
 * order. That is enough to rebuild the rollout's state on any server of the same env (create, then replay the
 * calls), and to check the rebuilt state by comparing each replayed result with the logged one.
 */
export interface RolloutLog {
  /** The create body sent to `POST /v1/rollouts`: `{task}` or `{taskId}`. */
  readonly create: Record<string, unknown>;
  /**
   * Fork lineage, oldest first: each parent this rollout was forked from (the client's rollout id) and how many of
   * the logged calls are the parent's (a child's log starts as a copy of its parent's up to the fork).
   */
  readonly lineage: ReadonlyArray<{ parent: string; calls: number }>;
  /** Every tool call that got a result, in order, with that result. */
  readonly calls: LoggedCall[];
}

export interface LoggedCall {
  call: ToolCallRequest;
  result: ToolResult;
}

/** Counters of rollout migration (read by the fleet bench and by tests). */
export interface MigrationStats {
  /** Rollouts rebuilt on another server (or on a restarted one) after theirs was lost. */
  migrations: number;
  /** Tool calls re-sent from the logs while rebuilding rollouts (failed attempts included). */
  replayedCalls: number;
  /** Migrations that failed: a replayed result differed from the log, or no server was left to take the rollout. */
  failedMigrations: number;
}

/** What a migration did, for `onMigration`. */
export interface MigrationEvent {
  rolloutId: string;
  /** The server that lost the rollout. */
  from: string;
  /** The server that holds it now (when `ok`). */
  to?: string;
  ok: boolean;
  /** Why the rollout was lost. */
  reason: string;
  /** Why the migration failed (when not `ok`). */
  error?: string;
  /** Tool calls replayed. */
  replayed: number;
  /** From the loss seen to the rollout rebuilt (or given up), ms. */
  ms: number;
}

export function newStats(): MigrationStats {
  return { migrations: 0, replayedCalls: 0, failedMigrations: 0 };
}

export function newLog(create: Record<string, unknown>): RolloutLog {
  return { create, lineage: [], calls: [] };
}

/** A fork child's log: a copy of its parent's so far, with the parent added to its lineage. */
export function forkLog(parent: RolloutLog, parentId: string): RolloutLog {
  return {
    create: parent.create,
    lineage: [...parent.lineage, { parent: parentId, calls: parent.calls.length }],
    calls: parent.calls.slice(),
  };
}

/** JSON with object keys sorted at every level: equal values give equal text whatever their key order. */
export function canonicalJson(v: unknown): string {
  return JSON.stringify(sorted(v)) ?? "undefined";
}

function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) {
      const x = (v as Record<string, unknown>)[k];
      if (x !== undefined) out[k] = sorted(x);
    }
    return out;
  }
  return v;
}

/** The part of a tool result a replay must reproduce: its content and whether it is an error. */
export function resultKey(r: unknown): string {
  const x = (r ?? {}) as Partial<ToolResult>;
  return canonicalJson({ content: x.content ?? null, isError: x.isError === true });
}

/** A replayed call answered differently from the log: the env is not deterministic under replay. */
export class ReplayDivergedError extends InfraError {
  readonly replayDiverged = true;
  constructor(
    message: string,
    readonly index: number,
  ) {
    super(message);
  }
}

export function isReplayDiverged(e: unknown): e is ReplayDivergedError {
  return !!e && typeof e === "object" && (e as { replayDiverged?: boolean }).replayDiverged === true;
}

/** Shorten a text for an error message. */
export function clip(s: string, n = 160): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}
