import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import type { ArtifactData, Env } from "../env.js";
import { errorMessage } from "../errors.js";
import type { RolloutResult } from "../rollout-result.js";
import { DEFAULT_TIMEOUTS, withTimeout } from "../timeout.js";

/** A stored artifact: its content address and size. */
export interface ArtifactRef {
  sha256: string;
  bytes: number;
}

/** Where artifacts go: content-addressed, so the same bytes are stored once (a run dir's `artifacts/`). */
export interface ArtifactStore {
  put(bytes: Uint8Array): Promise<ArtifactRef>;
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** An artifact's bytes (a path is read). */
export async function artifactBytes(data: ArtifactData): Promise<Uint8Array> {
  if (data instanceof Uint8Array) return data;
  if (data && typeof data === "object" && typeof data.path === "string") return readFile(data.path);
  throw new TypeError("an artifact is a Uint8Array or {path}");
}

/** Whether `captureArtifacts` has anything to do: a store, an env that keeps artifacts, and a scored outcome. */
export function capturesArtifacts(env: Env<any>, r: RolloutResult, store: ArtifactStore | undefined): boolean {
  return !!store && !!env.capabilities?.artifacts && (r.outcome === "completed" || r.outcome === "truncated");
}

/**
 * Take a finished rollout's final-state artifacts (capability `artifacts`) into `store` and name them in the result
 * (`result.artifacts`): called by Episode before the env state is released, for scored rollouts only. Best effort:
 * a failure or a timeout is recorded in `metadata.artifactError` (rescore then refuses that rollout), never thrown.
 */
export async function captureArtifacts(
  env: Env<any>,
  rolloutId: string,
  r: RolloutResult,
  store: ArtifactStore | undefined,
  timeoutMs: number = DEFAULT_TIMEOUTS.releaseMs,
): Promise<void> {
  if (!store || !capturesArtifacts(env, r, store)) return;
  try {
    const refs = await withTimeout(
      (async () => {
        const got = await env.capabilities!.artifacts!.artifacts(rolloutId);
        const out: Record<string, ArtifactRef> = {};
        for (const [name, data] of Object.entries(got ?? {})) out[name] = await store.put(await artifactBytes(data));
        return out;
      })(),
      timeoutMs,
      () => new Error(`${env.name}.artifacts did not return within ${timeoutMs} ms`),
    );
    if (Object.keys(refs).length) r.artifacts = refs;
  } catch (e) {
    r.metadata = { ...r.metadata, artifactError: errorMessage(e) };
  }
}
