import { randomBytes } from "node:crypto";

/**
 * Rollout ids are minted here, once, for every driver: the runner and eval (`task#sample`, stable so a resumed run
 * finds what it already did), and servers (`prefix` + random, unguessable).
 */

/** The id of sample `k` of a task. Stable, so a resumed run finds what it already did. */
export function rolloutIdOf(taskId: string, sample: number): string {
  return `${taskId}#${sample}`;
}

/** A result line's rollout id; lines from before rollout ids get `task#sample`. */
export function resultRolloutId(r: { rolloutId?: unknown; taskId: string; sample?: unknown }): string {
  return typeof r.rolloutId === "string"
    ? r.rolloutId
    : rolloutIdOf(r.taskId, typeof r.sample === "number" ? r.sample : 0);
}

/** A fresh random rollout id (a served rollout): `prefix` + 18 random bytes as base64url (144 bits). */
export function randomRolloutId(prefix = "r-"): string {
  return `${prefix}${randomBytes(18).toString("base64url")}`;
}
