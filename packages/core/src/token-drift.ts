import type { TurnTokens } from "./rollout-result.js";

/** True when `ids` starts with `a` followed by `b` (no concatenated copy is made). */
function extendsBoth(ids: readonly number[], a: readonly number[], b: readonly number[]): boolean {
  if (ids.length < a.length + b.length) return false;
  for (let i = 0; i < a.length; i++) if (ids[i] !== a[i]) return false;
  for (let i = 0; i < b.length; i++) if (ids[a.length + i] !== b[i]) return false;
  return true;
}

/**
 * The re-tokenization drift check (the prefix check of SkyRL's and verifiers' token-in/token-out loops): the
 * turns whose prompt ids do not start with the previous turn's prompt ids followed by its completion ids. A
 * trainer that concatenates turns would then train on tokens the model never saw. Only consecutive turns that
 * both carry ids are compared; the first turn is never flagged.
 */
export function tokenDriftTurns(tokens: readonly TurnTokens[]): number[] {
  const flagged: number[] = [];
  for (let i = 1; i < tokens.length; i++) {
    const prev = tokens[i - 1]!;
    const cur = tokens[i]!;
    if (cur.turn !== prev.turn + 1) continue;
    if (!extendsBoth(cur.prompt_token_ids, prev.prompt_token_ids, prev.completion_token_ids)) flagged.push(cur.turn);
  }
  return flagged;
}

const isIds = (v: unknown): v is number[] => Array.isArray(v) && v.every((x) => Number.isInteger(x));

/**
 * A reply's token record when it has the right shape (integer id arrays; logprobs finite numbers, one per
 * completion token), else undefined: a served client's malformed record is dropped, never written.
 */
export function validTurnTokens(v: unknown): Omit<TurnTokens, "turn"> | undefined {
  if (!v || typeof v !== "object") return undefined;
  const t = v as Partial<TurnTokens>;
  if (!isIds(t.prompt_token_ids) || !isIds(t.completion_token_ids)) return undefined;
  const lp = t.logprobs;
  const logprobs =
    Array.isArray(lp) &&
    lp.length === t.completion_token_ids.length &&
    lp.every((x) => typeof x === "number" && Number.isFinite(x))
      ? lp
      : undefined;
  return {
    prompt_token_ids: t.prompt_token_ids,
    completion_token_ids: t.completion_token_ids,
    ...(logprobs ? { logprobs } : {}),
  };
}
