import { InfraError } from "../errors.js";
import type { Policy } from "../policy.js";
import { readResults } from "../results-file.js";
import type { RolloutResult, TurnTokens } from "../rollout-result.js";
import type { AssistantMessage } from "../types.js";

interface Recorded {
  msgs: AssistantMessage[];
  /** The recorded token ids per turn (a token-faithful run), replayed with their turn. */
  tokens?: Map<number, TurnTokens>;
}

/**
 * Replays the assistant messages of an earlier run (results.jsonl), turn by turn, matched by rollout id, with each
 * turn's recorded token ids and logprobs when the run kept them.
 */
export function replayPolicy(source: string | RolloutResult[]): Policy {
  const results = typeof source === "string" ? readResults(source) : source;
  const byRollout = new Map<string, Recorded>();
  const byTask = new Map<string, Recorded>();
  for (const r of results) {
    const rec: Recorded = { msgs: (r.messages ?? []).filter((m): m is AssistantMessage => m.role === "assistant") };
    if (r.tokens?.length) rec.tokens = new Map(r.tokens.map((t) => [t.turn, t]));
    byRollout.set(r.rolloutId, rec);
    if (!byTask.has(r.taskId)) byTask.set(r.taskId, rec);
  }
  return {
    name: "replay",
    async act({ rolloutId, task, turn }) {
      const rec = byRollout.get(rolloutId) ?? byTask.get(task.id);
      if (!rec)
        throw new InfraError(`replay: no recorded rollout for ${rolloutId} (task ${task.id})`, { retryable: false });
      const msgs = rec.msgs;
      const m = msgs[turn];
      if (!m) {
        throw new InfraError(
          `replay: rollout ${rolloutId} has only ${msgs.length} assistant turns, asked for turn ${turn + 1}`,
          {
            retryable: false,
          },
        );
      }
      const t = rec.tokens?.get(turn);
      return {
        message: structuredClone(m),
        ...(t
          ? {
              tokens: {
                prompt_token_ids: t.prompt_token_ids,
                completion_token_ids: t.completion_token_ids,
                ...(t.logprobs ? { logprobs: t.logprobs } : {}),
              },
            }
          : {}),
      };
    },
  };
}
