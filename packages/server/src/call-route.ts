/** The tool-call route, matched ahead of the router (every policy's tool call goes through it). */
export const CALL_ROUTE = "/v1/rollouts/:id/call";

const PREFIX = "/v1/rollouts/";
const SUFFIX = "/call";
/** find-my-way's default longest parameter: past it the router finds nothing (404), so neither do we. */
const MAX_ID = 100;

/**
 * The `:id` of a `/v1/rollouts/:id/call` path (no query), or undefined when the path is another one or one the
 * router should decide: an empty or over-long id, or one with `/` or a percent escape (find-my-way decodes those).
 * Where it answers, it answers what find-my-way's `params.id` would be.
 */
export function callId(path: string): string | undefined {
  const end = path.length - SUFFIX.length;
  if (end <= PREFIX.length || !path.startsWith(PREFIX) || !path.endsWith(SUFFIX)) return undefined;
  const id = path.slice(PREFIX.length, end);
  if (id.length > MAX_ID || id.includes("/") || id.includes("%")) return undefined;
  return id;
}
